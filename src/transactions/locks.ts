import type { Check, Op, StoredTransaction } from '../kernel/index.js'
import type { Store, WriteResult } from '../store/index.js'

/**
 * Lock records, as the core writes them: a transaction that stages a write over a token puts the
 * token's lock record (`lock.put`, guarded by `token.unlocked` in the same write), and the write
 * that ends the transaction deletes the records it still holds. The store derives none of this.
 */

/** The `lock.put`s that make `tx` hold `tokenIds` until it ends or expires. */
export function lockOps(tx: StoredTransaction, tokenIds: readonly string[]): Op[] {
  return [...new Set(tokenIds)].map(
    (id): Op => ({
      op: 'lock.put',
      lock: { tenant_id: tx.tenant_id, token_id: id, transaction_id: tx.id, expires_at: tx.expires_at },
    }),
  )
}

/**
 * Writes `ended` (the transaction `tx` as read, now committed, rolled back or expired) after `ops`,
 * guarded on `tx` being unchanged (and on `checks`), and deletes the lock records of the tokens `tx` lists, each
 * guarded on still naming `tx` (`lock.held`): a lock taken over by another transaction once `tx`
 * had expired is that transaction's. When such a guard fails, the write is made again without that
 * token (so at most once per token). Answers the first result that is not a failed `lock.held`.
 */
export async function writeEnd(
  store: Store,
  tx: StoredTransaction,
  ended: StoredTransaction,
  ops: readonly Op[] = [],
  checks: readonly Check[] = [],
): Promise<WriteResult> {
  let held = [...new Set(tx.locks)]
  for (;;) {
    const guards: Check[] = [
      { check: 'transaction.unchanged', tenant_id: tx.tenant_id, id: tx.id, transaction: tx },
      ...checks,
      ...held.map(
        (id): Check => ({ check: 'lock.held', tenant_id: tx.tenant_id, token_id: id, transaction_id: tx.id }),
      ),
    ]
    const result = await store.write({
      checks: guards,
      ops: [
        ...ops,
        { op: 'transaction.put', transaction: ended },
        ...held.map((id): Op => ({ op: 'lock.delete', tenant_id: tx.tenant_id, token_id: id })),
      ],
    })
    if (result.ok || result.failed.check !== 'lock.held') return result
    const lost = result.failed.token_id
    held = held.filter((id) => id !== lost)
  }
}

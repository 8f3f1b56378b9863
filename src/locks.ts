import type { Store, WriteResult } from './store/contract.js'
import type { Check, Op, StagedWrite, StoredTransaction } from './types.js'

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

/** How many staged records one `listStaged` call reads while the core gathers a transaction's. */
const STAGED_PAGE = 1000

/**
 * Every staged record of `tx`, in token id order, read page by page. A write staged meanwhile
 * bumps the transaction's version, so a write guarded on `tx` unchanged refuses what this missed.
 */
export async function allStaged(store: Store, tx: StoredTransaction): Promise<StagedWrite[]> {
  const out: StagedWrite[] = []
  if (tx.version === 0) return out
  for (;;) {
    const last = out[out.length - 1]
    const page = await store.listStaged(tx.tenant_id, tx.id, {
      limit: STAGED_PAGE,
      ...(last ? { after: last.token_id } : {}),
    })
    out.push(...page)
    if (page.length < STAGED_PAGE) return out
  }
}

/**
 * Writes `ended` (the transaction `tx` as read, now committed, rolled back or expired) after `ops`,
 * guarded on `tx` being unchanged (and on `checks`), deletes the records `staged` (every staged
 * record of `tx`, as `allStaged` read them) and the lock records of their tokens, each guarded on
 * still naming `tx` (`lock.held`): a lock taken over by another transaction once `tx` had expired
 * is that transaction's. When such a guard fails, the write is made again without that lock (so
 * at most once per token). Answers the first result that is not a failed `lock.held`.
 */
export async function writeEnd(
  store: Store,
  tx: StoredTransaction,
  ended: StoredTransaction,
  staged: readonly StagedWrite[],
  ops: readonly Op[] = [],
  checks: readonly Check[] = [],
): Promise<WriteResult> {
  let held = [...new Set(staged.map((s) => s.token_id))]
  const cleared = staged.map(
    (s): Op => ({
      op: 'staged.delete',
      tenant_id: tx.tenant_id,
      transaction_id: tx.id,
      token_id: s.token_id,
    }),
  )
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
        ...cleared,
        ...held.map((id): Op => ({ op: 'lock.delete', tenant_id: tx.tenant_id, token_id: id })),
      ],
    })
    if (result.ok || result.failed.check !== 'lock.held') return result
    const lost = result.failed.token_id
    held = held.filter((id) => id !== lost)
  }
}

/**
 * Ends `tx` (read open) as `state` with nothing applied: its staged records and locks go. Guarded
 * like `writeEnd`; answers its result.
 */
export async function writeDiscard(
  store: Store,
  tx: StoredTransaction,
  state: 'rolled_back' | 'expired',
  endedAt: string,
): Promise<WriteResult> {
  const staged = await allStaged(store, tx)
  return writeEnd(store, tx, { ...tx, state, ended_at: endedAt }, staged)
}

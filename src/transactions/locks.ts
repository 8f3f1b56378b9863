import type { StagedWrite, StoredTransaction } from '../kernel/index.js'
import { nextTurn } from '../kernel/index.js'
import type { Check, Op, Store, WriteResult } from '../store/index.js'
import { MAX_STAGED_CHARS, MAX_STAGED_WRITES } from './bounds.js'

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
 * How many staged records one `listStaged` call reads: each comes decrypted, so a page is what the
 * heap holds beyond what was read before it. A transaction that kept its totals (`staged_chars`)
 * holds at most `MAX_STAGED_CHARS` in all, so it is read in pages of `MAX_STAGED_WRITES`; one staged
 * before the bounds existed may hold anything, so it is read `STAGED_PAGE` records at a time.
 */
const STAGED_PAGE = 64

/** Characters of staged token JSON `readStaged` counts in one turn. */
const COUNT_STEP_CHARS = 256 * 1024

/** How many staged records (and their locks) one write of `clearStaged` deletes. */
const CLEAR_CHUNK = 64

/**
 * The staged records of `tx`, in token id order, read page by page, and their characters of token
 * JSON, and whether that is all of them (`whole`); stops after the page that passes `MAX_STAGED_WRITES` or `MAX_STAGED_CHARS` (a transaction
 * staged before those bounds existed), so what it reads is bounded whatever the store holds. A
 * write staged meanwhile bumps the transaction's version, so a write guarded on `tx` unchanged
 * refuses what this missed.
 */
export async function readStaged(
  store: Store,
  tx: StoredTransaction,
): Promise<{ staged: StagedWrite[]; chars: number; whole: boolean }> {
  const staged: StagedWrite[] = []
  let chars = 0
  if (tx.version === 0) return { staged, chars, whole: true }
  const limit = tx.staged_chars === undefined ? STAGED_PAGE : MAX_STAGED_WRITES
  for (;;) {
    const last = staged[staged.length - 1]
    const page = await store.listStaged(tx.tenant_id, tx.id, {
      limit,
      ...(last ? { after: last.token_id } : {}),
    })
    let sinceTurn = 0
    for (const s of page) {
      staged.push(s)
      if (!s.token) continue
      const n = JSON.stringify(s.token).length
      chars += n
      // Counting a page of 16 MiB in one turn held every other tenant: a turn after each 256 KiB.
      sinceTurn += n
      if (sinceTurn >= COUNT_STEP_CHARS) {
        await nextTurn()
        sinceTurn = 0
      }
    }
    if (page.length < limit) return { staged, chars, whole: true }
    if (staged.length > MAX_STAGED_WRITES || chars > MAX_STAGED_CHARS) return { staged, chars, whole: false }
  }
}

/** The staged records of `tx` as `readStaged` reads them (bounded: see there). */
export async function allStaged(store: Store, tx: StoredTransaction): Promise<StagedWrite[]> {
  return (await readStaged(store, tx)).staged
}

const unchanged = (tx: StoredTransaction): Check => ({
  check: 'transaction.unchanged',
  tenant_id: tx.tenant_id,
  id: tx.id,
  transaction: tx,
})
const held = (tx: StoredTransaction, tokenId: string): Check => ({
  check: 'lock.held',
  tenant_id: tx.tenant_id,
  token_id: tokenId,
  transaction_id: tx.id,
})
const stagedDelete = (tx: StoredTransaction, tokenId: string): Op => ({
  op: 'staged.delete',
  tenant_id: tx.tenant_id,
  transaction_id: tx.id,
  token_id: tokenId,
})
const lockDelete = (tx: StoredTransaction, tokenId: string): Op => ({
  op: 'lock.delete',
  tenant_id: tx.tenant_id,
  token_id: tokenId,
})

/**
 * Writes `ended` (the transaction `tx` as read, now committed, rolled back or expired) after `ops`,
 * in one atomic write guarded on `tx` being unchanged (and on `checks`), and deletes the staged
 * records of `tokenIds` (every token `tx` staged) and their lock records, each guarded on still
 * naming `tx` (`lock.held`). A failed `lock.held` means `tx` expired and another transaction took
 * that lock over: the caller then ends it with `writeDiscard` (which is linear in that case). The
 * `lock.held` guards come before `checks`, so that is the failure answered even when the write
 * that took a lock over also made a `checks` guard fail (created a token the commit guards absent).
 */
export function writeEnd(
  store: Store,
  tx: StoredTransaction,
  ended: StoredTransaction,
  tokenIds: readonly string[],
  ops: readonly Op[] = [],
  checks: readonly Check[] = [],
): Promise<WriteResult> {
  const ids = [...new Set(tokenIds)]
  return store.write({
    checks: [unchanged(tx), ...ids.map((id) => held(tx, id)), ...checks],
    ops: [
      ...ops,
      { op: 'transaction.put', transaction: ended },
      ...ids.map((id) => stagedDelete(tx, id)),
      ...ids.map((id) => lockDelete(tx, id)),
    ],
  })
}

/**
 * Deletes the staged records of the ended transaction `tx` and the lock records it still holds,
 * `CLEAR_CHUNK` at a time. A chunk whose `lock.held` guard fails (a lock another transaction took
 * over once `tx` expired) is written again as its staged deletes alone and one guarded write per
 * lock: at most `CLEAR_CHUNK + 2` writes per chunk, so the whole is linear in what `tx` staged.
 */
export async function clearStaged(store: Store, tx: StoredTransaction): Promise<void> {
  let after: string | undefined
  for (;;) {
    const page = await store.listStaged(tx.tenant_id, tx.id, {
      limit: CLEAR_CHUNK,
      ...(after === undefined ? {} : { after }),
    })
    if (!page.length) return
    const ids = page.map((s) => s.token_id)
    const staged = ids.map((id) => stagedDelete(tx, id))
    const whole = await store.write({
      checks: ids.map((id) => held(tx, id)),
      ops: [...staged, ...ids.map((id) => lockDelete(tx, id))],
    })
    if (!whole.ok) {
      await store.write({ ops: staged })
      await Promise.all(ids.map((id) => store.write({ checks: [held(tx, id)], ops: [lockDelete(tx, id)] })))
    }
    if (page.length < CLEAR_CHUNK) return
    after = ids[ids.length - 1]
  }
}

/**
 * Ends `tx` (read open) as `state` with nothing applied: its staged records and locks go. Within
 * the bounds, in one write (`writeEnd`): a reader sees the transaction open with all its staged
 * writes, or ended with none. When that write finds a lock taken over (`tx` expired meanwhile), or
 * `tx` holds more than the bounds (staged before they existed), `tx` is ended first in a write of
 * its own, then `clearStaged` deletes what it staged, chunk by chunk: records of an ended
 * transaction are read by no one, and its locks have expired (or, past the bounds, go within this
 * call). Answers the result of the write that ended it (a failed guard: it changed meanwhile).
 */
export async function writeDiscard(
  store: Store,
  tx: StoredTransaction,
  state: 'rolled_back' | 'expired',
  endedAt: string,
): Promise<WriteResult> {
  const ended: StoredTransaction = { ...tx, state, ended_at: endedAt }
  const { staged, whole } = await readStaged(store, tx)
  if (whole && staged.length <= MAX_STAGED_WRITES) {
    const result = await writeEnd(
      store,
      tx,
      ended,
      staged.map((s) => s.token_id),
    )
    if (result.ok || result.failed.check !== 'lock.held') return result
  }
  const result = await store.write({
    checks: [unchanged(tx)],
    ops: [{ op: 'transaction.put', transaction: ended }],
  })
  if (result.ok) await clearStaged(store, tx)
  return result
}

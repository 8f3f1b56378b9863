import type { Store } from './store/contract.js'

/** How many records the sweep lists (and then writes one by one) per round. */
export const SWEEP_BATCH = 256

/** What one sweep removed or ended. */
export interface SweepCounts {
  /** Expired sessions deleted. */
  sessions: number
  /** Open transactions past their expiry marked `expired` (their staged writes and locks dropped). */
  transactions: number
}

/**
 * The expiry policy, applied by the core: lists expired sessions and open transactions from the
 * store in bounded batches and writes each change as its own guarded write. A record that changed
 * between the listing and the write (a transaction committed meanwhile) fails its guard and is left
 * as it is; it is not counted. Stops once a batch comes back short or makes no progress.
 */
export async function sweepExpired(store: Store, now: string, batch = SWEEP_BATCH): Promise<SweepCounts> {
  const counts: SweepCounts = { sessions: 0, transactions: 0 }
  for (;;) {
    const keys = await store.listExpired({ kind: 'session', before: now, limit: batch })
    let done = 0
    for (const key of keys) {
      const result = await store.write({
        ops: [{ op: 'session.delete', tenant_id: key.tenant_id, id: key.id }],
      })
      if (result.ok) done++
    }
    counts.sessions += done
    if (keys.length < batch || done === 0) break
  }
  for (;;) {
    const keys = await store.listExpired({ kind: 'transaction.open', before: now, limit: batch })
    let done = 0
    for (const key of keys) {
      const tx = await store.getTransaction(key.tenant_id, key.id)
      if (tx?.state !== 'open' || tx.expires_at > now) continue
      const result = await store.write({
        checks: [{ check: 'transaction.unchanged', tenant_id: tx.tenant_id, id: tx.id, transaction: tx }],
        ops: [{ op: 'transaction.put', transaction: { ...tx, state: 'expired', writes: [], locks: [] } }],
      })
      if (result.ok) done++
    }
    counts.transactions += done
    if (keys.length < batch || done === 0) break
  }
  return counts
}

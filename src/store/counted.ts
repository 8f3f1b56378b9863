import type { StoredTransaction } from '../kernel/index.js'

/**
 * What a transaction record adds to its tenant's `transaction.staged` count (`Store.countRecords`):
 * its `staged_chars` while it is open, nothing once it has ended. Every store keeps the count by
 * this rule, moving it by the difference between the record it replaces and the one it writes.
 */
export function stagedCharsHeld(tx: StoredTransaction | undefined | null): number {
  return tx?.state === 'open' ? (tx.staged_chars ?? 0) : 0
}

import type { OutboxEntry } from '../../src/kernel/index.js'
import type { Check, Op, WriteResult } from '../../src/store/index.js'
import { copiedToken, copy } from '../../src/store/index.js'
import { applyOp } from './apply.js'
import { failedCheck } from './checks.js'
import type { MemoryMaps } from './maps.js'

/**
 * Applies a batch to the maps atomically if its checks hold, one op at a time, each a copy of the
 * caller's (the state never holds an object the caller still has). Synchronous: nothing
 * interleaves, so in one process batches are atomic and serialized.
 */
export function writeBatch(
  m: MemoryMaps,
  batch: { checks?: readonly Check[]; ops: readonly Op[] },
): WriteResult {
  const failed = failedCheck(m, batch.checks ?? [])
  if (failed) return { ok: false, failed }
  for (const op of batch.ops) {
    // A token, an audit log entry and an outbox entry, the records written most, are copied by
    // their known shape (an audit entry's fields are strings, numbers and booleans: a shallow copy
    // is a deep one; an outbox entry's too, but for its attempts).
    applyOp(
      m,
      op.op === 'token.put'
        ? { op: 'token.put', token: copiedToken(op.token) }
        : op.op === 'log.put'
          ? { op: 'log.put', entry: { ...op.entry } }
          : op.op === 'outbox.put'
            ? { op: 'outbox.put', entry: copiedEntry(op.entry) }
            : copy(op),
    )
  }
  return { ok: true }
}

/** A copy of an outbox entry: its fields are strings but for `attempts`, a list of flat records. */
const copiedEntry = (entry: OutboxEntry): OutboxEntry => ({
  ...entry,
  attempts: entry.attempts.map((a) => ({ ...a })),
})

import type { Check, Op, WriteResult } from '../../src/store/index.js'
import { copiedToken, copy } from '../../src/store/index.js'
import { MemoryChecks } from './checks.js'

/** A memory state's writes: a batch applied atomically when its checks hold, one op at a time. */
export class MemoryOps extends MemoryChecks {
  /** Applies a batch atomically if its checks hold. Synchronous: nothing interleaves. */
  write(batch: { checks?: readonly Check[]; ops: readonly Op[] }): WriteResult {
    const failed = this.failedCheck(batch.checks ?? [])
    if (failed) return { ok: false, failed }
    for (const op of batch.ops) {
      this.apply(op.op === 'token.put' ? { op: 'token.put', token: copiedToken(op.token) } : copy(op))
    }
    return { ok: true }
  }

  /** Applies one op. Ops are total: applying one never fails. */
  apply(op: Op): void {
    this.applyOp(op)
  }
}

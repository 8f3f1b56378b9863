import type { OutboxEntry } from '../kernel/index.js'
import type { Check, Op, Store } from '../store/index.js'

/** Outbox writes (claims, results) one store write carries at most. */
export const OUTBOX_WRITES_PER_BATCH = 64

/** The guard of a claim or a result: the entry is still as this process last wrote or read it. */
export type EntryGuard = Extract<Check, { check: 'outbox.unchanged' }>

/** The guard that `entry` is unchanged in the store. */
export const unchanged = (entry: OutboxEntry): EntryGuard => ({
  check: 'outbox.unchanged',
  tenant_id: entry.tenant_id,
  id: entry.id,
  entry,
})

interface Asked {
  guard: EntryGuard
  ops: Op[]
  settle: (ok: boolean) => void
  fail: (error: unknown) => void
}

/**
 * The dispatcher's guarded outbox writes (a claim; an attempt's result), gathered: the writes asked
 * while none is being written go out together in one store write (up to
 * `OUTBOX_WRITES_PER_BATCH`), the ones asked meanwhile in the next. So a pass that starts 64
 * attempts claims them in one write, and results that come in while a write is on its way share the
 * next one; a write waits at most for the event loop's current turn (`setImmediate`, never a timer:
 * the attempts that end in one turn share a write). Each write
 * keeps its own guard: when one guard fails (another process claimed that entry), that write alone
 * answers false and the others are written again, each on its own; a store write that throws is
 * tried again each on its own too, so one bad write never takes the others with it.
 */
export class OutboxWrites {
  private readonly queue: Asked[] = []
  private writing = false

  constructor(private readonly store: Pick<Store, 'write'>) {}

  /** Writes `ops` if `guard` holds, with the writes asked meanwhile: true when they landed, false when the guard failed. */
  write(guard: EntryGuard, ops: Op[]): Promise<boolean> {
    return new Promise<boolean>((settle, fail) => {
      this.queue.push({ guard, ops, settle, fail })
      if (this.writing) return
      this.writing = true
      setImmediate(() => void this.drain())
    })
  }

  /** Writes what is asked, a batch at a time, until nothing is. */
  private async drain(): Promise<void> {
    try {
      while (this.queue.length) await this.together(this.queue.splice(0, OUTBOX_WRITES_PER_BATCH))
    } finally {
      this.writing = false
    }
  }

  private async together(batch: Asked[]): Promise<void> {
    if (batch.length === 1) return this.alone(batch[0]!)
    let result: Awaited<ReturnType<Store['write']>>
    try {
      result = await this.store.write({ checks: batch.map((a) => a.guard), ops: batch.flatMap((a) => a.ops) })
    } catch {
      await Promise.all(batch.map((a) => this.alone(a)))
      return
    }
    if (result.ok) {
      for (const a of batch) a.settle(true)
      return
    }
    const { failed } = result
    const lost = batch.find((a) => a.guard === failed || sameEntry(a.guard, failed))
    lost?.settle(false)
    await Promise.all(batch.filter((a) => a !== lost).map((a) => this.alone(a)))
  }

  private async alone(a: Asked): Promise<void> {
    try {
      a.settle((await this.store.write({ checks: [a.guard], ops: a.ops })).ok)
    } catch (error) {
      a.fail(error)
    }
  }
}

const sameEntry = (guard: EntryGuard, failed: Check) =>
  failed.check === 'outbox.unchanged' && failed.tenant_id === guard.tenant_id && failed.id === guard.id

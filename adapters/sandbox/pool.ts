import type { ChildProcess } from 'node:child_process'
import { createHash } from 'node:crypto'
import type { RunOutcome } from '../../src/runner.js'
import { type Reply, spawnSandbox, toOutcome } from './process.js'

/** One formula run waiting for, or held by, a sandbox process. */
export interface Job {
  key: string
  code: string
  request: string
  timeoutMs: number
  /** Set once the job was in a batch that hung or crashed: it then runs alone, and its failure is its own. */
  solo: boolean
  done: (outcome: RunOutcome) => void
}

/** Settings of a pool (all required here; `workerRunner` fills defaults). */
export interface PoolSettings {
  size: number
  memoryMb: number
  maxResultChars: number
  maxContexts: number
  maxBatch: number
}

interface Batch {
  id: number
  jobs: Job[]
  /** How many of `jobs` have been answered (answers come in order). */
  answered: number
  timeoutMs: number
  /** When the process last reported progress on this batch (ms, `performance.now()`). */
  progressAt: number
  timer: NodeJS.Timeout
}

interface Slot {
  child: ChildProcess
  ready: boolean
  batch: Batch | null
  /** Hashes of the code this process holds. */
  codes: Set<string>
  stderr: string
  killed: boolean
}

const MAX_CODES = 256
const MAX_BOOT_FAILURES = 3

/**
 * A pool of sandbox processes, each running batches of formula runs one after the other. A batch
 * that makes no progress for its time limit is killed with its process: a lone job gets `timeout`,
 * the others of a larger batch are retried alone (so an innocent run never pays for another's
 * loop). A process that dies mid-batch is handled the same way, with `crashed`. Dead processes are
 * replaced; the host is never blocked, since all it does is exchange messages.
 */
export class SandboxPool {
  private readonly slots: Slot[] = []
  private readonly queue: Job[] = []
  private readonly hashes = new Map<string, string>()
  private nextBatch = 1
  private bootFailures = 0
  private broken: string | null = null
  private closed = false

  constructor(private readonly settings: PoolSettings) {}

  /** Queues a run; `job.done` is called exactly once. */
  submit(job: Job): void {
    if (this.closed || this.broken !== null) {
      job.done({ ok: false, kind: 'crashed', message: this.broken ?? 'the formula runner is closed' })
      return
    }
    this.queue.push(job)
    while (this.slots.length < this.settings.size) this.slots.push(this.spawn())
    this.pump()
  }

  /** Kills every process; queued and running jobs end as `crashed`. */
  close(): void {
    this.closed = true
    for (const slot of this.slots) {
      const batch = this.detach(slot)
      if (batch) this.fail(batch.jobs.slice(batch.answered), 'the formula runner is closed')
      this.kill(slot)
    }
    this.fail(this.queue.splice(0), 'the formula runner is closed')
  }

  private hash(code: string): string {
    let hash = this.hashes.get(code)
    if (hash === undefined) {
      hash = createHash('sha256').update(code).digest('base64url')
      if (this.hashes.size >= MAX_CODES) this.hashes.delete(this.hashes.keys().next().value!)
      this.hashes.set(code, hash)
    }
    return hash
  }

  private spawn(): Slot {
    const child = spawnSandbox(this.settings)
    const slot: Slot = { child, ready: false, batch: null, codes: new Set(), stderr: '', killed: false }
    child.stderr?.setEncoding('utf8')
    child.stderr?.on('data', (chunk: string) => {
      slot.stderr = (slot.stderr + chunk).slice(-4000)
    })
    ;(child.stderr as { unref?: () => void } | null)?.unref?.()
    child.on('message', (reply: Reply) => this.onReply(slot, reply))
    // A failed spawn has no pid and may never emit `close`; any other error ends in `close`.
    child.on('error', () => (child.pid === undefined ? this.onExit(slot, null, null) : this.kill(slot)))
    child.on('close', (code, signal) => this.onExit(slot, code, signal))
    return slot
  }

  private idle(slot: Slot): void {
    slot.child.unref()
    slot.child.channel?.unref()
  }

  private onReply(slot: Slot, reply: Reply): void {
    if (reply.ready) {
      slot.ready = true
      this.bootFailures = 0
      this.idle(slot)
      this.pump()
      return
    }
    const batch = slot.batch
    if (!batch || reply.b !== batch.id || !reply.r) return
    batch.progressAt = performance.now()
    for (const result of reply.r) {
      const job = batch.jobs[batch.answered++]
      if (job) job.done(toOutcome(result))
    }
    if (reply.done) {
      this.detach(slot)
      this.idle(slot)
      this.pump()
    }
  }

  /** Takes the slot's batch off it (stopping its timer) and returns it. */
  private detach(slot: Slot): Batch | null {
    const batch = slot.batch
    slot.batch = null
    if (batch) clearTimeout(batch.timer)
    return batch
  }

  /**
   * A process ended (after its stdio closed, so its last words are in `stderr`): the slot is
   * replaced first, then a batch it still held is settled as `crashed`.
   */
  private onExit(slot: Slot, code: number | null, signal: NodeJS.Signals | null): void {
    const index = this.slots.indexOf(slot)
    if (index === -1) return
    const batch = this.detach(slot)
    if (!slot.ready && !slot.killed) this.bootFailures++
    slot.killed = true
    const outOfMemory = /out of memory|allocation failed/i.test(slot.stderr)
    const why = outOfMemory
      ? 'it ran out of memory'
      : `the sandbox process exited (${signal ?? `code ${code}`})`
    if (this.closed) this.slots.splice(index, 1)
    else if (this.bootFailures >= MAX_BOOT_FAILURES) {
      this.broken = `the sandbox process can't start: ${slot.stderr.trim().slice(-500) || why}`
      this.slots.splice(index, 1)
    } else this.slots[index] = this.spawn()
    if (batch) this.settle(batch, 'crashed', why)
    if (this.broken !== null) this.fail(this.queue.splice(0), this.broken)
  }

  /**
   * Ends a hung or crashed batch. Answers come in order, so a lone unanswered job is the one that
   * hung or crashed: it fails with `kind`. Several unanswered jobs are retried, each alone.
   */
  private settle(batch: Batch, kind: 'timeout' | 'crashed', message: string): void {
    const left = batch.jobs.slice(batch.answered)
    if (left.length === 1) left[0]!.done({ ok: false, kind, message })
    else {
      for (const job of left) job.solo = true
      this.queue.unshift(...left)
    }
    this.pump()
  }

  /** Kills the process; a batch still on the slot is settled once the process has exited. */
  private kill(slot: Slot): void {
    slot.killed = true
    slot.child.kill('SIGKILL')
  }

  private fail(jobs: Job[], message: string): void {
    for (const job of jobs) job.done({ ok: false, kind: 'crashed', message })
  }

  private pump(): void {
    if (this.closed) return
    const free = this.slots.filter((s) => s.ready && !s.batch && !s.killed)
    // Spread the queue over every live process, booting or busy ones included, not just the free ones.
    const live = this.slots.filter((s) => !s.killed).length
    for (const slot of free) {
      if (!this.queue.length) return
      const take = this.queue[0]!.solo
        ? 1
        : Math.min(this.settings.maxBatch, Math.ceil(this.queue.length / live))
      const jobs: Job[] = []
      while (jobs.length < take && this.queue.length && (jobs.length === 0 || !this.queue[0]!.solo)) {
        jobs.push(this.queue.shift()!)
      }
      this.dispatch(slot, jobs)
    }
  }

  private dispatch(slot: Slot, jobs: Job[]): void {
    const code: Record<string, string> = {}
    // The process forgets all code on `reset`, before taking this batch's: then every code is sent.
    const reset = slot.codes.size + jobs.length > MAX_CODES
    if (reset) slot.codes.clear()
    const runs = jobs.map((job) => {
      const hash = this.hash(job.code)
      if (!slot.codes.has(hash)) {
        slot.codes.add(hash)
        code[hash] = job.code
      }
      return [job.key, hash, job.request]
    })
    const timeoutMs = Math.max(...jobs.map((j) => j.timeoutMs))
    const batch: Batch = {
      id: this.nextBatch++,
      jobs,
      answered: 0,
      timeoutMs,
      progressAt: performance.now(),
      timer: setTimeout(() => this.watch(slot, batch), timeoutMs),
    }
    slot.batch = batch
    slot.child.ref()
    slot.child.channel?.ref()
    slot.child.send({ b: batch.id, runs, ...(reset ? { reset: 1 } : {}), code })
  }

  /** The batch's timer: kill the process if the batch made no progress for its time limit. */
  private watch(slot: Slot, batch: Batch): void {
    if (slot.batch !== batch) return
    const quiet = performance.now() - batch.progressAt
    if (quiet < batch.timeoutMs) {
      batch.timer = setTimeout(() => this.watch(slot, batch), batch.timeoutMs - quiet)
      return
    }
    this.detach(slot)
    this.kill(slot)
    this.settle(batch, 'timeout', `no answer within ${batch.timeoutMs} ms`)
  }
}

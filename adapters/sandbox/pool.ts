import type { Worker } from 'node:worker_threads'
import type { RunOutcome } from '../../src/runner.js'
import { FairQueue } from './fair-queue.js'
import { readWorkerMessage, type WorkerConfig, type WorkerMessage } from './messages.js'

/** One formula run, waiting for or held by a worker. */
export interface Job {
  /** Whose run it is: runs are served round-robin between tenants. */
  tenant: string
  code: string
  /** The request as JSON text. */
  request: string
  timeoutMs: number
  /** Origins `fetch` may reach (absent: no network). */
  egress?: string[]
  /** Called exactly once. */
  done: (outcome: RunOutcome) => void
}

/** Settings of a pool (all required here; `sandboxRunner` fills the defaults). */
export interface PoolSettings {
  size: number
  memoryMb: number
  maxResultChars: number
  maxQueuedPerTenant: number
  /** How long past a run's time limit the host waits before it terminates a silent worker (ms). */
  graceMs: number
  /** How long a starting worker may take to become ready before it counts as a failed start (ms). */
  startTimeoutMs: number
  startWorker: (config: WorkerConfig) => Worker
  /** The engine's compiled WebAssembly module, handed to every worker. */
  wasmModule?: object
}

interface Slot {
  worker: Worker
  ready: boolean
  job: Job | null
  jobId: number
  timer: NodeJS.Timeout | undefined
  gone: boolean
  /** When it last finished a run (ms): the longest-idle worker is served first, its next context made. */
  idleSince: number
}

const MAX_BACKOFF_MS = 5000

/**
 * Sandbox worker threads and the fair queue in front of them. Each worker runs one run at a time;
 * runs wait in a per-tenant queue served round-robin, bounded per tenant (beyond it a run is
 * answered `busy` at once). A worker that sends anything but a well-formed answer to the run it
 * holds, or stays silent past the run's limit plus a grace period, is terminated and replaced.
 * Workers that fail to start are retried with exponential backoff (up to 5 s) while runs wait;
 * while no worker can start, waiting runs are answered `unavailable`. Nothing a worker does can
 * throw in the host.
 */
export class SandboxPool {
  private readonly slots: Slot[] = []
  private readonly queue: FairQueue<Job>
  private nextId = 1
  private startFailures = 0
  private retryAt = 0
  private retryTimer: NodeJS.Timeout | undefined
  private closed = false

  constructor(private readonly settings: PoolSettings) {
    this.queue = new FairQueue(settings.maxQueuedPerTenant)
  }

  /** Queues a run; `job.done` is called exactly once. */
  submit(job: Job): void {
    if (this.closed) {
      job.done({ ok: false, kind: 'crashed', message: 'the formula runner is closed' })
      return
    }
    if (!this.queue.push(job.tenant, job)) {
      job.done({
        ok: false,
        kind: 'busy',
        message: `too many reactor runs are waiting for this tenant (at most ${this.settings.maxQueuedPerTenant})`,
        retryAfterSec: 1,
      })
      return
    }
    this.fill()
    this.pump()
  }

  /** Terminates every worker; waiting and running jobs end as `crashed`. */
  async close(): Promise<void> {
    this.closed = true
    clearTimeout(this.retryTimer)
    const ending = this.slots.splice(0).map((slot) => {
      slot.gone = true
      clearTimeout(slot.timer)
      if (slot.job)
        this.finish(slot.job, { ok: false, kind: 'crashed', message: 'the formula runner is closed' })
      slot.job = null
      return slot.worker.terminate().catch(() => 0)
    })
    for (const job of this.queue.drain()) {
      job.done({ ok: false, kind: 'crashed', message: 'the formula runner is closed' })
    }
    await Promise.all(ending)
  }

  /** Starts workers up to the pool's size, unless starting is backing off. */
  private fill(): void {
    if (this.closed || performance.now() < this.retryAt) return
    while (this.slots.length < this.settings.size) {
      let worker: Worker
      try {
        const config: WorkerConfig = {
          memoryMb: this.settings.memoryMb,
          maxResultChars: this.settings.maxResultChars,
        }
        if (this.settings.wasmModule) config.wasmModule = this.settings.wasmModule
        worker = this.settings.startWorker(config)
      } catch {
        this.startFailed()
        return
      }
      this.attach(worker)
    }
  }

  private attach(worker: Worker): void {
    const slot: Slot = {
      worker,
      ready: false,
      job: null,
      jobId: 0,
      timer: undefined,
      gone: false,
      idleSince: 0,
    }
    this.slots.push(slot)
    worker.on('message', (message: unknown) => this.onMessage(slot, message))
    worker.on('error', () => this.onGone(slot, 'the sandbox worker failed'))
    worker.on('exit', () => this.onGone(slot, 'the sandbox worker stopped'))
    slot.timer = setTimeout(() => {
      if (!slot.ready) this.discard(slot, 'the sandbox worker did not start in time')
    }, this.settings.startTimeoutMs)
    slot.timer.unref()
  }

  /**
   * Workers keep the process alive only while there is work (a run held or waiting): an idle
   * runner never stops a host from exiting.
   */
  private updateRefs(): void {
    const waiting = this.queue.size > 0
    for (const slot of this.slots) {
      if (slot.job || (waiting && !slot.ready)) slot.worker.ref()
      else slot.worker.unref()
    }
  }

  private startFailed(): void {
    this.startFailures++
    const delay = Math.min(MAX_BACKOFF_MS, 50 * 2 ** Math.min(this.startFailures, 10))
    this.retryAt = performance.now() + delay
    // Runs can't wait for a worker that can't start: tell them now, and keep trying in the background.
    if (!this.slots.some((s) => s.ready)) {
      for (const job of this.queue.drain()) {
        job.done({
          ok: false,
          kind: 'unavailable',
          message: 'the formula runner cannot start a sandbox right now',
          retryAfterSec: Math.ceil(delay / 1000),
        })
      }
    }
    clearTimeout(this.retryTimer)
    this.retryTimer = setTimeout(() => {
      // The timer's clock may run a little behind \`performance.now()\`: the backoff is over now.
      this.retryAt = 0
      this.fill()
      this.pump()
    }, delay)
    this.retryTimer.unref()
  }

  private onMessage(slot: Slot, raw: unknown): void {
    if (slot.gone) return
    const message = readWorkerMessage(raw, this.settings.maxResultChars)
    if (!message) {
      this.discard(slot, 'the sandbox worker sent a malformed message')
      return
    }
    if (message.t === 'ready') {
      if (slot.ready) {
        this.discard(slot, 'the sandbox worker sent a malformed message')
        return
      }
      slot.ready = true
      clearTimeout(slot.timer)
      this.startFailures = 0
      this.pump()
      return
    }
    const job = slot.job
    if (!job || message.id !== slot.jobId) {
      this.discard(slot, 'the sandbox worker answered out of turn')
      return
    }
    clearTimeout(slot.timer)
    slot.job = null
    slot.idleSince = performance.now()
    this.finish(job, outcomeOf(message))
    this.pump()
  }

  /** A worker exited or failed: replace it, and answer the run it held. */
  private onGone(slot: Slot, why: string): void {
    if (slot.gone) return
    slot.gone = true
    clearTimeout(slot.timer)
    const index = this.slots.indexOf(slot)
    if (index !== -1) this.slots.splice(index, 1)
    if (!slot.ready) this.startFailed()
    const job = slot.job
    slot.job = null
    if (job) this.finish(job, { ok: false, kind: 'crashed', message: why })
    if (!this.closed) {
      this.fill()
      this.pump()
    }
  }

  /** Terminates a worker that broke the protocol or went silent; its run ends as `crashed`. */
  private discard(slot: Slot, why: string): void {
    const worker = slot.worker
    this.onGone(slot, why)
    worker.terminate().catch(() => 0)
  }

  private finish(job: Job, outcome: RunOutcome): void {
    try {
      job.done(outcome)
    } catch {
      // The caller's callback is not ours to fail on.
    }
  }

  private pump(): void {
    if (this.closed) return
    const free = this.slots.filter((s) => s.ready && !s.job && !s.gone)
    if (free.length > 1) free.sort((x, y) => x.idleSince - y.idleSince)
    for (const slot of free) {
      const job = this.queue.take()
      if (!job) break
      this.dispatch(slot, job)
    }
    this.updateRefs()
  }

  private dispatch(slot: Slot, job: Job): void {
    slot.job = job
    slot.jobId = this.nextId++
    slot.timer = setTimeout(() => {
      if (slot.job !== job) return
      slot.job = null
      this.finish(job, { ok: false, kind: 'timeout', message: `no answer within ${job.timeoutMs} ms` })
      this.discard(slot, 'the sandbox worker went silent')
    }, job.timeoutMs + this.settings.graceMs)
    slot.worker.postMessage({
      t: 'run',
      id: slot.jobId,
      code: job.code,
      request: job.request,
      timeoutMs: job.timeoutMs,
      ...(job.egress?.length ? { egress: job.egress } : {}),
    })
  }
}

/** The outcome a worker's well-formed answer stands for. */
function outcomeOf(message: Extract<WorkerMessage, { t: 'done' }>): RunOutcome {
  if (message.ok) {
    try {
      return { ok: true, value: JSON.parse(message.json), logs: message.logs }
    } catch {
      return { ok: false, kind: 'thrown', message: 'the formula answered something that is not JSON' }
    }
  }
  const { kind, message: text, status, errors } = message
  const outcome: RunOutcome = { ok: false, kind, message: text }
  if (status !== undefined) outcome.status = status
  if (errors) outcome.errors = errors
  return outcome
}

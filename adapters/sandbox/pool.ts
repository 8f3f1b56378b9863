import type { RunOutcome } from '../../src/kernel/index.js'
import { FairQueue } from './fair-queue.js'
import { endHostFetches, startHostFetch } from './host-fetch.js'
import type { Job, PoolSettings } from './job.js'
import { readWorkerMessage, type WorkerMessage } from './messages.js'
import { CrashPenalties } from './penalties.js'
import {
  aheadOf,
  CELLS,
  type Entry,
  type Held,
  isStuck,
  newSlot,
  outcomeOf,
  PENDING,
  type Slot,
  started,
  startedAt,
  workerConfig,
} from './slots.js'
import { armSilence, takeBack, watchStuck } from './watchdog.js'

export type { Job, PoolSettings } from './job.js'

/** The longest wait between two attempts to start a worker (ms). */
const MAX_BACKOFF_MS = 5000
/**
 * Sandbox worker threads and the fair queue in front of them. Each worker runs one run at a time;
 * runs wait in a per-tenant queue served round-robin, bounded per tenant and in all (beyond either
 * a run is answered `busy` at once). A worker that sends anything but a well-formed message about the
 * run it holds, or stays silent past the run's limit plus a grace period, is terminated and replaced.
 * Workers that fail to start are retried with exponential backoff (up to 5 s) while runs wait;
 * while no worker can start, waiting runs are answered `unavailable`. Nothing a worker does can
 * throw in the host.
 *
 * Pipeline (`pipeline` > 1): while runs wait and every worker is busy, a worker whose run started
 * less than `STUCK_MS` ago may be sent more, up to `pipeline` in all, so that it goes from one run
 * to the next without waiting for the host. Runs sent ahead still count as waiting (the backlog
 * bounds hold), and they only wait behind a short run: once the run has run `STUCK_MS`, the runs
 * behind it go back to the front of their tenants' queues and wait their turn there, as before.
 * Each is claimed in a shared cell (`claims`) by the worker as it starts it or by the host as it
 * takes it back, never both.
 *
 * A crash is charged to the run that caused it. A worker claims a run in `claims` (and writes when,
 * in `starts`) before it runs the run's code, once its engine is restored after the previous run; it
 * sends no message for that, only the run's answer, so a run costs one message each way. A worker
 * that dies after the claim fails the run it runs (`crashed`); one that dies before it (restoring
 * failed) or between runs is the previous run's doing. Runs it held that never started are sent
 * again to another worker, first in their tenants' queues: any number of times while those deaths
 * are another tenant's doing (that tenant is held back, so this ends), at most once while they are
 * its own tenant's or nobody's. The tenant
 * whose run killed a worker is the one that waits: one run at a time in a worker, the next only
 * after `crashPenaltyMs` (doubling per kill, up to `maxCrashPenaltyMs`), so its runs pile up in its
 * own backlog (`busy` once full) while the other tenants' runs go on.
 */
/**
 * How long every worker must have run its run (ms) before a tenant that holds no worker and waits
 * gets one worker beyond the pool's size (see `SandboxPool.relief`).
 */
export const RELIEF_MS = 250

/**
 * How long (ms) until the relief worker is due, when the youngest of the workers' runs has run
 * `youngestMs`: 0 once every run has run `RELIEF_MS`.
 */
export const reliefWait = (youngestMs: number): number =>
  youngestMs >= RELIEF_MS ? 0 : RELIEF_MS - youngestMs

export class SandboxPool {
  private readonly slots: Slot[] = []
  private readonly queue: FairQueue<Entry>
  /** Runs of each tenant held by a worker. */
  private readonly running = new Map<string, number>()
  private readonly penalties: CrashPenalties
  private nextId = 1
  private startFailures = 0
  private retryAt = 0
  private retryTimer: NodeJS.Timeout | undefined
  private wakeTimer: NodeJS.Timeout | undefined
  private reliefTimer: NodeJS.Timeout | undefined
  private closed = false
  /**
   * Runs waiting in the queue (not yet sent to any worker), shared with every worker: an idle
   * worker watches for its next run only while none wait (see `idleSpinUs`). With runs waiting the
   * host has work on hand, and a watching worker would take its core.
   */
  private readonly backlog = new Int32Array(new SharedArrayBuffer(4))

  private readonly now: () => number

  constructor(private readonly settings: PoolSettings) {
    this.queue = new FairQueue(settings.maxQueuedPerTenant, settings.maxQueued)
    this.now = settings.now ?? (() => performance.now())
    this.penalties = new CrashPenalties(settings, this.now)
  }

  /** Queues a run; `job.done` is called exactly once. */
  submit(job: Job): void {
    if (this.closed) {
      job.done({ ok: false, kind: 'crashed', message: 'the formula runner is closed' })
      return
    }
    // Runs sent ahead to a worker, not started, still wait: they count as queued.
    const { own: ahead, all: aheadInAll } = aheadOf(this.slots, job.tenant)
    const own = this.queue.sizeOf(job.tenant) + ahead >= this.settings.maxQueuedPerTenant
    if (
      own ||
      this.queue.size + aheadInAll >= this.settings.maxQueued ||
      !this.queue.push(job.tenant, { job, retried: false })
    ) {
      job.done({
        ok: false,
        kind: 'busy',
        message: own
          ? `too many reactor runs are waiting for this tenant (at most ${this.settings.maxQueuedPerTenant})`
          : `too many reactor runs are waiting (at most ${this.settings.maxQueued} in all)`,
        retryAfterSec: this.penalties.retryAfterSec(job.tenant),
      })
      return
    }
    this.fill()
    this.pump()
  }

  /** Starts the workers now, before any run (an idle pool never keeps the process alive). */
  warm(): void {
    if (this.closed) return
    this.fill()
    this.pump()
  }

  /** Terminates every worker; waiting and running jobs end as `crashed`. */
  async close(): Promise<void> {
    this.closed = true
    clearTimeout(this.retryTimer)
    clearTimeout(this.wakeTimer)
    clearTimeout(this.reliefTimer)
    const ending = this.slots.splice(0).map((slot) => {
      slot.gone = true
      clearTimeout(slot.timer)
      clearTimeout(slot.stuckTimer)
      for (const { entry } of this.release(slot))
        this.finish(entry.job, { ok: false, kind: 'crashed', message: 'the formula runner is closed' })
      return slot.worker.terminate().catch(() => 0)
    })
    for (const { job } of this.queue.drain()) {
      job.done({ ok: false, kind: 'crashed', message: 'the formula runner is closed' })
    }
    await Promise.all(ending)
  }

  /** Starts workers up to the pool's size, unless starting is backing off. */
  private fill(): void {
    if (this.closed || performance.now() < this.retryAt) return
    while (this.slots.length < this.settings.size) if (!this.startSlot()) return
  }

  /** Starts one worker; false when it could not be started (starting then backs off). */
  private startSlot(): boolean {
    try {
      const config = workerConfig(this.settings, this.backlog)
      this.attach(newSlot(this.settings.startWorker(config), config))
      return true
    } catch {
      this.startFailed()
      return false
    }
  }

  /**
   * The pool's one worker beyond its size. Started while a tenant that holds no worker waits and
   * every worker has run its run for `RELIEF_MS` (one tenant's long runs, a transform waiting on a
   * slow destination, say, then hold another tenant's run back by `RELIEF_MS` and a worker's start,
   * not by their time limit); while it runs, free workers take only the runs of tenants holding
   * none; a free worker is ended as soon as nothing such waits.
   */
  private relief(now: number, clock: number): void {
    if (this.slots.length > this.settings.size) {
      const spare = this.slots.find((slot) => slot.ready && !slot.held.length)
      if (spare) this.retire(spare)
      return
    }
    if (this.closed || this.slots.length < this.settings.size || this.reliefTimer || !this.queue.size) return
    const starved = this.queue
      .tenants()
      .some((tenant) => !this.running.has(tenant) && this.penalties.eligible(tenant, now, false))
    if (!starved) return
    let youngest = Number.POSITIVE_INFINITY
    for (const slot of this.slots) {
      const head = slot.held[0]
      if (!slot.ready || !head || !started(slot, head)) return
      youngest = Math.min(youngest, clock - startedAt(slot, head, clock))
    }
    const wait = reliefWait(youngest)
    if (wait === 0) {
      this.startSlot()
      return
    }
    this.reliefTimer = setTimeout(() => {
      this.reliefTimer = undefined
      this.pump()
    }, wait)
    this.reliefTimer.unref()
  }

  /** Ends a free worker the pool no longer needs (see `relief`). */
  private retire(slot: Slot): void {
    slot.gone = true
    clearTimeout(slot.timer)
    clearTimeout(slot.stuckTimer)
    this.slots.splice(this.slots.indexOf(slot), 1)
    slot.worker.terminate().catch(() => 0)
  }

  /** Takes a new worker's slot into the pool: its messages, its failure and exit, its start's time limit. */
  private attach(slot: Slot): void {
    const worker = slot.worker
    this.slots.push(slot)
    worker.on('message', (message: unknown) => this.onMessage(slot, message))
    // A failed worker exits next; what it sent before is delivered before its exit, so the exit decides.
    worker.on('error', () => {
      slot.failed ??= 'the sandbox worker failed'
      worker.terminate().catch(() => 0)
    })
    worker.on('exit', () => this.onGone(slot, slot.failed ?? 'the sandbox worker stopped'))
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
      if (slot.held.length || (waiting && !slot.ready)) slot.worker.ref()
      else slot.worker.unref()
    }
    // Runs held back keep the process alive like any other waiting run; an idle pool does not.
    if (waiting) this.wakeTimer?.ref()
    else this.wakeTimer?.unref()
  }

  private startFailed(): void {
    this.startFailures++
    const delay = Math.min(MAX_BACKOFF_MS, 50 * 2 ** Math.min(this.startFailures, 10))
    this.retryAt = performance.now() + delay
    // Runs can't wait for a worker that can't start: tell them now, and keep trying in the background.
    if (!this.slots.some((s) => s.ready)) {
      for (const { job } of this.queue.drain()) {
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
    if (message.t === 'fetch') {
      this.onFetch(slot, message)
      return
    }
    // The answer of the run it runs, which it claimed first.
    const head = slot.held[0]
    if (!head || message.id !== head.id || !started(slot, head)) {
      this.discard(slot, 'the sandbox worker answered out of turn')
      return
    }
    clearTimeout(slot.timer)
    clearTimeout(slot.stuckTimer)
    slot.stuckTimer = undefined
    slot.lastTenant = head.entry.job.tenant
    this.unhold(slot, head)
    if (slot.held.length) {
      this.arm(slot)
      this.watch(slot)
    } else slot.idleSince = performance.now()
    this.finish(head.entry.job, outcomeOf(message))
    this.pump()
  }

  /** Makes a request of the run a worker runs, for its `fetch` (see `host-fetch.ts`). */
  private onFetch(slot: Slot, message: Extract<WorkerMessage, { t: 'fetch' }>): void {
    const head = slot.held[0]
    const fetch = head?.entry.job.fetch
    if (!head || !fetch || message.id !== head.id || !started(slot, head)) {
      this.discard(slot, 'the sandbox worker sent a malformed message')
      return
    }
    if (slot.requests?.id !== head.id) slot.requests = { id: head.id, count: 0, controllers: new Set() }
    if (!startHostFetch(slot.requests, message, fetch, head.entry.job.timeoutMs, slot.worker))
      this.discard(slot, 'the sandbox worker sent a malformed message')
  }

  /**
   * A worker exited: replace it, and settle the run it held. A run it had started is the one that
   * killed it and fails; otherwise the run it last answered did (its runtime could not be freed),
   * and the run it held, which never ran, is queued again (see the class comment for how often).
   */
  private onGone(slot: Slot, why: string): void {
    if (slot.gone) return
    slot.gone = true
    clearTimeout(slot.timer)
    clearTimeout(slot.stuckTimer)
    const index = this.slots.indexOf(slot)
    if (index !== -1) this.slots.splice(index, 1)
    if (!slot.ready) this.startFailed()
    const held = this.release(slot)
    const head = held[0]
    // The run it had started killed it; if none had started, the run it last answered did.
    let culprit = slot.lastTenant
    if (head && started(slot, head)) {
      held.shift()
      culprit = head.entry.job.tenant
      this.strike(culprit)
      this.finish(head.entry.job, { ok: false, kind: 'crashed', message: why })
    } else if (culprit !== undefined) this.strike(culprit)
    // The runs that never started there: sent again, first in their tenants' queues, in their order.
    for (const { entry } of held.reverse()) {
      // Another tenant's run killed the worker: this run is not charged for it.
      const innocent = culprit !== undefined && culprit !== entry.job.tenant
      if ((entry.retried && !innocent) || this.closed)
        this.finish(entry.job, { ok: false, kind: 'crashed', message: why })
      else this.queue.unshift(entry.job.tenant, { job: entry.job, retried: entry.retried || !innocent })
    }
    if (!this.closed) {
      this.fill()
      this.pump()
    }
  }

  /** Terminates a worker that broke the protocol or went silent; its run is settled as by `onGone`. */
  private discard(slot: Slot, why: string): void {
    const worker = slot.worker
    this.onGone(slot, why)
    worker.terminate().catch(() => 0)
  }

  /** Takes every run a worker holds off it (in their order). */
  private release(slot: Slot): Held[] {
    const held = [...slot.held]
    for (const one of held) this.unhold(slot, one)
    return held
  }

  /** Takes one run off the worker holding it. */
  private unhold(slot: Slot, one: Held): void {
    const at = slot.held.indexOf(one)
    if (at !== -1) slot.held.splice(at, 1)
    if (slot.requests?.id === one.id) {
      endHostFetches(slot.requests)
      slot.requests = undefined
    }
    const tenant = one.entry.job.tenant
    const left = (this.running.get(tenant) ?? 1) - 1
    if (left > 0) this.running.set(tenant, left)
    else this.running.delete(tenant)
  }

  private finish(job: Job, outcome: RunOutcome): void {
    try {
      job.done(outcome)
    } catch {
      // The caller's callback is not ours to fail on.
    }
  }

  /** Charges a killed worker to `tenant` (see `CrashPenalties`), and pumps again when its wait ends. */
  private strike(tenant: string): void {
    this.penalties.strike(tenant)
    this.scheduleWake()
  }

  /** Pumps again when the first held-back tenant may run. */
  private scheduleWake(): void {
    clearTimeout(this.wakeTimer)
    this.wakeTimer = undefined
    if (this.closed) return
    const now = this.now()
    const first = this.penalties.nextRelease(now)
    if (first === undefined) return
    this.wakeTimer = setTimeout(
      () => {
        this.wakeTimer = undefined
        this.pump()
        this.scheduleWake()
      },
      Math.ceil(first - now) + 1,
    )
    if (!this.queue.size) this.wakeTimer.unref()
  }

  private pump(): void {
    if (this.closed) return
    const now = this.now()
    const clock = performance.now()
    const live = this.slots.filter((s) => s.ready && !s.gone)
    const free = live.filter((s) => !s.held.length)
    // The worker that answered last first: it is the one still running on a core, its caches warm
    // (the engine is restored right after each answer, so a worker idle longer has nothing more ready).
    if (free.length > 1) free.sort((x, y) => y.idleSince - x.idleSince)
    // Past the pool's size (`relief`), a free worker takes only a tenant holding none.
    const above = this.slots.length > this.settings.size
    for (const slot of free) {
      const entry = this.queue.take(
        (tenant) =>
          this.penalties.eligible(tenant, now, this.running.has(tenant)) &&
          !(above && this.running.has(tenant)),
      )
      if (!entry) break
      this.dispatch(slot, entry)
    }
    // Runs still waiting go ahead to the workers whose run is not holding them up, fewest first.
    const depth = Math.max(1, Math.floor(this.settings.pipeline ?? 1))
    while (depth > 1) {
      let target: Slot | undefined
      for (const slot of live) {
        const held = slot.held.length
        if (held && held < depth && !isStuck(slot, clock) && (!target || held < target.held.length))
          target = slot
      }
      if (!target) break
      const entry = this.queue.take((tenant) =>
        this.penalties.eligible(tenant, now, this.running.has(tenant)),
      )
      if (!entry) break
      this.dispatch(target, entry)
    }
    this.relief(now, clock)
    Atomics.store(this.backlog, 0, this.queue.size)
    this.updateRefs()
  }

  /** Takes the runs sent ahead to `slot` back once its run has run `STUCK_MS` (see `watchStuck`). */
  private watch(slot: Slot): void {
    watchStuck(slot, () => this.unstick(slot))
  }

  /**
   * Takes the runs sent ahead to a worker whose run has run `STUCK_MS` back to the front of their
   * tenants' queues (see `takeBack`), so that they wait their turn there, as any other run, for a worker.
   */
  private unstick(slot: Slot): void {
    slot.stuckTimer = undefined
    if (slot.gone || slot.held.length < 2) return
    const taken = takeBack(slot)
    if (!taken) {
      this.watch(slot)
      return
    }
    for (const one of taken) {
      this.unhold(slot, one)
      this.queue.unshift(one.entry.job.tenant, one.entry)
    }
    this.pump()
  }

  /** Sends a run to a worker: it runs it once it has run the runs it holds. */
  private dispatch(slot: Slot, entry: Entry): void {
    const { job } = entry
    const held: Held = { entry, id: this.nextId++, cell: slot.sent++ % CELLS, sentAt: performance.now() }
    Atomics.store(slot.claims, held.cell, PENDING)
    slot.held.push(held)
    this.running.set(job.tenant, (this.running.get(job.tenant) ?? 0) + 1)
    if (slot.held.length === 1) this.arm(slot)
    else this.watch(slot)
    slot.worker.postMessage({
      t: 'run',
      id: held.id,
      cell: held.cell,
      code: job.code,
      request: job.request,
      timeoutMs: job.timeoutMs,
      ...(job.fetch ? { fetch: true as const } : {}),
    })
  }

  /**
   * Times the worker's first held run: silent past the run's limit plus the grace period, the
   * worker is replaced (and the run, if it had started, fails as a timeout).
   */
  private arm(slot: Slot): void {
    armSilence(slot, this.settings.graceMs, (head) => {
      const { job } = head.entry
      if (started(slot, head)) {
        // The run held its worker past its limit: it fails as a timeout, and the worker it hung is its doing.
        slot.lastTenant = job.tenant
        this.unhold(slot, head)
        this.finish(job, { ok: false, kind: 'timeout', message: `no answer within ${job.timeoutMs} ms` })
      }
      this.discard(slot, 'the sandbox worker went silent')
    })
  }
}

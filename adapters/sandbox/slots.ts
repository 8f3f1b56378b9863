import type { Worker } from 'node:worker_threads'
import type { RunOutcome } from '../../src/kernel/index.js'
import type { RunRequests } from './host-fetch.js'
import type { Job, PoolSettings } from './job.js'
import type { WorkerConfig, WorkerMessage } from './messages.js'

/**
 * The pool's worker threads ("slots"): what each holds, the cells it shares with the host to claim
 * a run and tell when it started it, and how a new one is made.
 */

/** A run accepted by the pool. */
export interface Entry {
  job: Job
  /** Whether it was already sent again after a worker died before starting it. */
  retried: boolean
}

/** A run a worker holds: its id in the messages, and its cell in the worker's `claims` and `starts`. */
export interface Held {
  entry: Entry
  id: number
  cell: number
  /** When it was sent (ms, `performance.now()`): it can't have started before. */
  sentAt: number
}

/** A worker thread of the pool and the runs it holds. */
export interface Slot {
  worker: Worker
  ready: boolean
  /** The runs it holds, in the order it runs them: the first is running or next. */
  held: Held[]
  /**
   * One cell per run sent, shared with the worker: `PENDING` when sent, then `CLAIMED` by the
   * worker as it starts the run, or `RECLAIMED` by the host taking back a run still waiting.
   */
  claims: Int32Array
  /**
   * One cell per run sent, shared with the worker: when the worker started the run (ms since
   * `performance.timeOrigin`'s epoch, as `performance.timeOrigin + performance.now()` reads in any
   * thread), written before it claims the run.
   */
  starts: Float64Array
  /** How many runs it was sent: the next run's cell, modulo `CELLS`. */
  sent: number
  /** Takes the runs sent ahead back to the queue once the running one has run `STUCK_MS`. */
  stuckTimer: NodeJS.Timeout | undefined
  /** The tenant of the last run it answered: the one whose spent runtime it frees between runs. */
  lastTenant: string | undefined
  timer: NodeJS.Timeout | undefined
  gone: boolean
  /** Why it failed, when it emitted an error before exiting. */
  failed: string | undefined
  /** When it last finished a run (ms): the worker that finished last is served first. */
  idleSince: number
  /** The requests of its running run's `fetch`, made by the host. */
  requests: RunRequests | undefined
}

/** Cells of a worker's `claims`: far more than the runs it can have been sent and not yet passed. */
export const CELLS = 256
export const PENDING = 0
export const CLAIMED = 1
export const RECLAIMED = 2
/**
 * How long a worker's run may have run before the runs sent ahead to wait behind it are taken back
 * for another worker (ms), and the worker is sent no more until its run ends.
 */
export const STUCK_MS = 2

/** The start data of a new worker: the pool's settings, fresh cells, the shared `backlog`. */
export function workerConfig(settings: PoolSettings, backlog: Int32Array): WorkerConfig {
  const config: WorkerConfig = {
    memoryMb: settings.memoryMb,
    maxResultChars: settings.maxResultChars,
    claims: new SharedArrayBuffer(CELLS * 4),
    starts: new SharedArrayBuffer(CELLS * 8),
    backlog: backlog.buffer as SharedArrayBuffer,
  }
  if (settings.wasmModule) config.wasmModule = settings.wasmModule
  if (settings.prelude) config.prelude = settings.prelude
  if (settings.driver) config.driver = settings.driver
  if (settings.idleSpinUs) config.idleSpinUs = settings.idleSpinUs
  if (settings.nice) config.nice = settings.nice
  return config
}

/** A new slot for `worker`, started with `config`: not ready, holding nothing. */
export function newSlot(worker: Worker, config: WorkerConfig): Slot {
  return {
    worker,
    ready: false,
    held: [],
    claims: new Int32Array(config.claims),
    starts: new Float64Array(config.starts),
    sent: 0,
    stuckTimer: undefined,
    lastTenant: undefined,
    timer: undefined,
    gone: false,
    failed: undefined,
    idleSince: 0,
    requests: undefined,
  }
}

/** Runs sent ahead to workers, waiting behind another run there: `tenant`'s, and everyone's. */
export function aheadOf(slots: readonly Slot[], tenant: string): { own: number; all: number } {
  let own = 0
  let all = 0
  for (const slot of slots) {
    for (let i = 1; i < slot.held.length; i++) {
      all++
      if (slot.held[i]!.entry.job.tenant === tenant) own++
    }
  }
  return { own, all }
}

/** Whether the worker claimed `held` (its code is running, or has run). */
export function started(slot: Slot, held: Held): boolean {
  return Atomics.load(slot.claims, held.cell) === CLAIMED
}

/**
 * When the worker started `held` (ms, `performance.now()`), read after its claim: what the worker
 * wrote, but no earlier than when the run was sent. A value that is no time, or a time to come,
 * reads as that earliest time, so that the runs behind it go elsewhere sooner, never later.
 */
export function startedAt(slot: Slot, held: Held, clock: number): number {
  const at = (slot.starts[held.cell] ?? Number.NaN) - performance.timeOrigin
  return at <= clock ? Math.max(held.sentAt, at) : held.sentAt
}

/** Whether a worker's run has run long enough that the runs waiting behind it go elsewhere. */
export function isStuck(slot: Slot, clock: number): boolean {
  const head = slot.held[0]
  return head !== undefined && started(slot, head) && clock - startedAt(slot, head, clock) > STUCK_MS
}

/** The outcome a worker's well-formed answer stands for. */
export function outcomeOf(message: Extract<WorkerMessage, { t: 'done' }>): RunOutcome {
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

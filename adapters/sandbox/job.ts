import type { Worker } from 'node:worker_threads'
import type { RunOutcome } from '../../src/kernel/index.js'
import type { WorkerConfig } from './messages.js'
import type { HostFetch } from './prepared.js'

/** One formula run, waiting for or held by a worker. */
export interface Job {
  /** Whose run it is: runs are served round-robin between tenants. */
  tenant: string
  code: string
  /** The request as JSON text. */
  request: string
  timeoutMs: number
  /** Makes the requests of the run's `fetch` (absent: no network), called in the host's thread. */
  fetch?: HostFetch
  /** Called exactly once. */
  done: (outcome: RunOutcome) => void
}

/** Settings of a pool (all required here; `sandboxRunner` fills the defaults). */
export interface PoolSettings {
  size: number
  memoryMb: number
  maxResultChars: number
  maxQueuedPerTenant: number
  /** Runs that may wait in all, every tenant together. */
  maxQueued: number
  /** How long past a run's time limit the host waits before it terminates a silent worker (ms). */
  graceMs: number
  /** How long a starting worker may take to become ready before it counts as a failed start (ms). */
  startTimeoutMs: number
  /**
   * How long a tenant's runs wait after one of them killed a worker (ms), doubling with each
   * further kill up to `maxCrashPenaltyMs`; forgotten after a minute without one.
   */
  crashPenaltyMs: number
  maxCrashPenaltyMs: number
  startWorker: (config: WorkerConfig) => Worker
  /** The clock of the crash penalties (ms; `performance.now` unless a test gives its own). */
  now?: () => number
  /** The engine's compiled WebAssembly module, handed to every worker. */
  wasmModule?: object
  /** The prelude's program text, handed to every worker. */
  prelude?: string
  /** The run driver's program text, handed to every worker. */
  driver?: string
  /**
   * Runs a worker may hold at once: the one it runs and those sent ahead to wait behind it, so that
   * it goes from one to the next without waiting for the host (see the class comment). 1 unless given.
   */
  pipeline?: number
  /** How long an idle worker watches for the next run before it sleeps (µs). 0 unless given. */
  idleSpinUs?: number
  /** The niceness of each worker's thread (`SandboxRunnerOptions.nice`). 0 unless given. */
  nice?: number
}

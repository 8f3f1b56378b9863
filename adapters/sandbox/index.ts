import { availableParallelism } from 'node:os'
import { compileFunction } from 'node:vm'
import type { FormulaRunner, RunOutcome } from '../../src/runner.js'
import { MODULE_PARAMS } from './child.js'
import { SandboxPool } from './pool.js'

/** Options of `workerRunner`. */
export interface WorkerRunnerOptions {
  /** How many sandbox processes run formulas side by side (default: CPUs, 1 to 4). */
  poolSize?: number
  /** Heap limit of each sandbox process in MiB (default 128). */
  memoryMb?: number
  /** Upper bound on any run's time limit in ms, whatever the service asks (default 60 000). */
  timeoutMs?: number
  /** Longest answer a formula may give, in JSON characters (default 1 MiB). */
  maxResultChars?: number
  /** Formula contexts each process keeps loaded (default 64). */
  maxContexts?: number
}

/**
 * Compiles `code` as a CommonJS module body without running it (`vm.compileFunction`, which parses
 * only). Answers null when it compiles, else the syntax error's message.
 */
export function compileError(code: string): string | null {
  try {
    compileFunction(code, MODULE_PARAMS, { filename: 'formula.js' })
    return null
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
}

/**
 * The default formula runner: formula code runs in a small pool of separate Node processes
 * ("workers"), started on the first run and reused. Each run happens in a `vm` context of its own
 * realm holding only JavaScript's built-ins and a captured `console` — no `require`, `process`,
 * `Buffer`, timers, environment or filesystem — one context per (tenant, code), reused between runs.
 * The processes themselves run under Node's permission model (no filesystem, child processes or
 * worker threads), with an empty environment and a heap limit of `memoryMb`.
 *
 * Separate processes rather than worker threads: a worker's `resourceLimits` can't contain one
 * large allocation (`new Array(1e9).fill(0)`), which makes V8 abort the whole process; a sandbox
 * process that aborts is simply replaced. A run that goes past its time limit (a `while (true) {}`,
 * also inside a promise) has its process killed and replaced; runs batched with it are retried alone.
 * Runs travel in batches (one message per batch each way) and code is sent to each process once,
 * keyed by its SHA-256, which keeps the overhead per run to a few microseconds under load.
 *
 * `close()` kills the processes; runs in flight end as `crashed`.
 */
export function workerRunner(options: WorkerRunnerOptions = {}): FormulaRunner {
  const cap = options.timeoutMs ?? 60_000
  const pool = new SandboxPool({
    size: Math.max(1, Math.floor(options.poolSize ?? Math.min(4, availableParallelism()))),
    memoryMb: Math.max(16, Math.floor(options.memoryMb ?? 128)),
    maxResultChars: options.maxResultChars ?? 1_048_576,
    maxContexts: options.maxContexts ?? 64,
    maxBatch: 64,
  })
  return {
    check: async (code) => compileError(code),
    run(code, request, runOptions) {
      return new Promise<RunOutcome>((done) => {
        pool.submit({
          key: runOptions.isolationKey ?? '',
          code,
          request: JSON.stringify(request),
          timeoutMs: Math.max(1, Math.min(cap, runOptions.timeoutMs)),
          solo: false,
          done,
        })
      })
    },
    close: async () => pool.close(),
  }
}

import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import type { FormulaRunner, RunOutcome } from '../../src/kernel/index.js'
import { compileEngine, compileIn, loadCompiler } from './engine.js'
import type { WorkerConfig } from './messages.js'
import { SandboxPool } from './pool.js'
import { driverSource, preludeSource } from './prelude-source.js'

/** Options of `sandboxRunner`. */
export interface SandboxRunnerOptions {
  /**
   * How many worker threads run formulas side by side.
   * @default the number of CPUs, 1 to 4
   */
  poolSize?: number
  /**
   * Memory of one run in MiB: the engine's heap limit; its WebAssembly memory is capped 32 MiB above.
   * @default 64
   */
  memoryMb?: number
  /**
   * Upper bound on any run's time limit in ms, whatever the service asks.
   * @default 60000
   */
  timeoutMs?: number
  /**
   * Longest answer a formula may give, in JSON characters.
   * @default 1048576
   */
  maxResultChars?: number
  /**
   * Runs of one tenant that may wait for a worker; beyond it a react answers 429.
   * @default 64
   */
  maxQueuedPerTenant?: number
  /**
   * Runs that may wait for a worker in all, every tenant together; beyond it a react answers 429.
   * @default 1024
   */
  maxQueued?: number
  /**
   * How long a tenant's runs wait after one of its runs killed a worker (ms): the wait doubles with
   * each further kill, up to 5 s, and is forgotten a minute after the last kill. Meanwhile the
   * tenant has at most one run in a worker; its other runs wait in its own backlog (429 once full).
   * @default 250
   */
  crashPenaltyMs?: number
  /**
   * How a worker thread is started. For tests (e.g. to inject a failure to start); the default
   * starts `adapters/sandbox/worker` with an empty environment and a small JavaScript heap.
   */
  startWorker?: (config: WorkerConfig) => Worker
  /**
   * How long a worker that has answered its last run keeps watching for the next one before its
   * thread sleeps, in µs (0 to 1000; 0 turns it off). A sleeping thread takes tens of µs to wake
   * when a run comes; a watching one starts it at once. It costs at most this much CPU time each
   * time a worker runs out of runs, and none while runs wait in the queue (the host is busy then).
   * @default 200
   */
  idleSpinUs?: number
  /**
   * How much nicer each worker's thread is than the host's (Linux; at most 19 in all): when the
   * host's threads and tenant code want the same core, the host (its requests, their answers) gets
   * about ten times the workers' share at 10, and tenant code every core the host leaves. Timeouts
   * are wall time, so a run on a core another process keeps busy (the host, or any other program)
   * gets less done in them.
   * @default 10
   */
  nice?: number
}

/**
 * Starts one sandbox worker thread: the compiled `worker.js`, or in development (running from
 * TypeScript sources) `worker.ts` through tsx's loader, registered inside the new thread.
 */
export function startSandboxWorker(config: WorkerConfig): Worker {
  const options = {
    workerData: config,
    env: {},
    // Not the host's Node flags: a loader or preloaded module of the host (`--import`, `--require`)
    // has no business in a sandbox worker, and would slow every worker's start.
    execArgv: [],
    stdout: true,
    stderr: true,
    resourceLimits: { maxOldGenerationSizeMb: 96, maxYoungGenerationSizeMb: 16 },
  }
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./worker.js', import.meta.url), options)
  const worker = JSON.stringify(new URL('./worker.ts', import.meta.url).href)
  // tsx as this package resolves it, not as the working directory would (it may have no node_modules).
  const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'))
  const boot = `import(${tsx}).then((tsx) => { tsx.register(); return import(${worker}) })`
  return new Worker(boot, { ...options, eval: true })
}

/**
 * Runs a busy worker may hold: one running, the others sent ahead so that the worker goes on to
 * the next without waiting for the host's answer to reach it (taken back if its run takes long).
 */
const PIPELINE = 4

/** `given` as a whole number within 0–`max` (`fallback` when absent or not a number). */
function wholeWithin(given: number | undefined, fallback: number, max: number): number {
  const n = given ?? fallback
  return Number.isFinite(n) ? Math.max(0, Math.min(max, Math.floor(n))) : fallback
}

/** A promise made once and kept while it holds (made again after a failure, or once dropped). */
function cached<T>(make: () => Promise<T>): { get(): Promise<T>; drop(): void } {
  const cell: { value: Promise<T> | undefined } = { value: undefined }
  return {
    get() {
      const made =
        cell.value ??
        make().catch((error: unknown) => {
          if (cell.value === made) cell.value = undefined
          throw error
        })
      cell.value = made
      return made
    },
    drop() {
      cell.value = undefined
    },
  }
}

/** The engine's WebAssembly code, compiled once per process (again after a failure). */
const engineCode = cached(compileEngine)

/**
 * The program text of the prelude and the run driver, loaded (or bundled) once per process (again
 * after a failure).
 */
const sourceCode = cached(async () => {
  const [prelude, driver] = await Promise.all([preludeSource(), driverSource()])
  return { prelude, driver }
})

/** The engine that compile-checks formulas (it never runs code), made once (again after a failure). */
const compiler = cached(async () => loadCompiler(await engineCode.get()))

/**
 * Compiles `code` as a formula module body in the WebAssembly engine, without running it. Answers
 * null when it compiles, else the syntax error's message.
 */
export async function compileError(code: string): Promise<string | null> {
  try {
    return compileIn(await compiler.get(), code)
  } catch {
    // The compiler's engine failed (it never runs code; a pathological input could exhaust it): renew it.
    compiler.drop()
    return 'the code could not be compiled'
  }
}

/**
 * The default formula runner. Formula code runs in QuickJS compiled to WebAssembly
 * (`quickjs-emscripten`), inside worker threads started with the runner (again on a formula check
 * or a run, if starting failed):
 *
 * - **Wall 1, the engine.** Formula code lives in the engine's linear memory and reaches only what
 *   the engine makes for it: JavaScript's built-ins, a captured `console`, a `require` that refuses.
 *   No object of the host's realm — not an error, a promise or a stack frame — is ever handed to
 *   it, so `constructor.constructor` leads only to the engine's own `Function`.
 * - **Wall 2, WebAssembly.** If the engine were broken, the code would still be WebAssembly: it
 *   can call only the functions the host imported into it (none offers network, files, environment
 *   or processes), and it can't address memory outside its own, capped at `memoryMb` + 32 MiB.
 *
 * Every run starts from the same engine memory (a snapshot taken once the context was set up, copied
 * back after each run): nothing a run sets is seen by any later run. A run is
 * interrupted by the engine at its time limit (measured from its start); a worker silent past it
 * is terminated. Runs wait in a per-tenant queue served round-robin, bounded per tenant (`busy`,
 * i.e. 429, beyond it). A worker that dies or can't start is replaced with backoff. A worker's death
 * fails only the run that caused it (a run it held but had not started yet is run again on another
 * worker), and that run's tenant waits (`crashPenaltyMs`), not the others.
 *
 * `close()` terminates the workers; runs in flight end as `crashed`.
 */
export function sandboxRunner(options: SandboxRunnerOptions = {}): FormulaRunner {
  const cap = options.timeoutMs ?? 60_000
  let pool: Promise<SandboxPool> | undefined
  let closed = false
  const start = async () => {
    const [wasmModule, { prelude, driver }] = await Promise.all([engineCode.get(), sourceCode.get()])
    return new SandboxPool({
      wasmModule,
      prelude,
      driver,
      size: Math.max(1, Math.floor(options.poolSize ?? Math.min(4, availableParallelism()))),
      memoryMb: Math.max(8, Math.floor(options.memoryMb ?? 64)),
      maxResultChars: options.maxResultChars ?? 1_048_576,
      maxQueuedPerTenant: Math.max(1, options.maxQueuedPerTenant ?? 64),
      maxQueued: Math.max(1, options.maxQueued ?? 1024),
      graceMs: 1000,
      startTimeoutMs: 30_000,
      crashPenaltyMs: Math.max(0, options.crashPenaltyMs ?? 250),
      maxCrashPenaltyMs: Math.max(5000, options.crashPenaltyMs ?? 0),
      startWorker: options.startWorker ?? startSandboxWorker,
      pipeline: PIPELINE,
      idleSpinUs: wholeWithin(options.idleSpinUs, 200, 1000),
      nice: wholeWithin(options.nice, 10, 19),
    })
  }
  /** Starts the workers now, unless they are starting or running (or the runner is closed). */
  const warm = () => {
    if (closed || pool) return
    const starting = start()
    pool = starting
    starting.then(
      (started) => {
        if (closed) return
        started.warm()
      },
      () => {
        if (pool === starting) pool = undefined
      },
    )
  }
  // The first run should not wait for the engine and the workers: they start with the runner.
  warm()
  return {
    check(code) {
      // A formula being made or changed is about to run: the workers must be starting by now.
      warm()
      return compileError(code)
    },
    async run(code, request, runOptions) {
      if (closed) return { ok: false, kind: 'crashed', message: 'the formula runner is closed' }
      pool ??= start()
      let active: SandboxPool
      try {
        active = await pool
      } catch {
        pool = undefined
        return {
          ok: false,
          kind: 'unavailable',
          message: 'the formula engine could not be loaded',
          retryAfterSec: 1,
        }
      }
      return new Promise<RunOutcome>((done) => {
        active.submit({
          tenant: runOptions.isolationKey ?? '',
          code,
          request: JSON.stringify(request),
          timeoutMs: Math.max(1, Math.min(cap, runOptions.timeoutMs)),
          ...(runOptions.egress?.length && runOptions.fetch ? { fetch: runOptions.fetch } : {}),
          done,
        })
      })
    },
    async close() {
      closed = true
      const active = pool
      pool = undefined
      await (await active?.catch(() => undefined))?.close()
    },
  }
}

/** @deprecated Renamed: use `sandboxRunner`. */
export const workerRunner = sandboxRunner
/** @deprecated Renamed: use `SandboxRunnerOptions`. */
export type WorkerRunnerOptions = SandboxRunnerOptions

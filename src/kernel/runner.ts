import type { EgressClient, EgressLimits, EgressRequest, EgressResponse } from './egress.js'
import type { Json } from './types.js'

/**
 * The contract between the core and whatever runs reactor formula code. The core never runs a
 * formula itself: it hands the code and a request to a `FormulaRunner`, which must run it outside
 * the host's realm (no access to the host's globals, modules, environment or filesystem), bound it
 * in time and memory, and answer with an outcome — never throw for anything the code does.
 * `tokenvault/adapters/sandbox` provides the default one, `sandboxRunner()`, which `createService`
 * uses unless given another runner (or `runner: null`).
 */

/** What a formula's exported function is called with. */
export interface FormulaRequest {
  /** The invocation's `args`, cast to the formula's request parameters. */
  args: { [key: string]: Json }
  /** The reactor's configuration. */
  configuration: Record<string, string | number | boolean>
}

/** How one run is bounded and grouped. */
export interface RunOptions {
  /** Wall-clock limit of the run in milliseconds, from the moment the code starts running. */
  timeoutMs: number
  /**
   * Whose run it is (the service passes the tenant id): runners queue runs per key and serve the
   * keys in turn, so one tenant's runs can't hold back another's. Runs never share state, whatever
   * their key.
   */
  isolationKey?: string
  /**
   * Origins (`https://api.example.com`) the code may reach with `fetch`, the requests made by the
   * runner's host side under the checks of `src/reactors/egress.ts`. Empty or absent: no network.
   */
  egress?: readonly string[]
  /**
   * Makes one request of the code's `fetch` (the service's `EgressClient`, bound to `egress`; set by
   * `withEgress`). A runner calls it on its host side, never where the code runs, and aborts
   * `limits.signal` when the run ends. Absent: no network, whatever `egress` lists.
   */
  fetch?: (request: EgressRequest, limits: EgressLimits) => Promise<EgressResponse>
}

/** The reasons a run fails. */
export type RunFailureKind =
  /** The code can't be loaded: a syntax error, a throw at load time, or no exported function. */
  | 'invalid'
  /** The exported function threw or rejected, or its answer is not JSON. */
  | 'thrown'
  /** The run went past its time limit and was stopped. */
  | 'timeout'
  /** The run took down what ran it (out of memory, a fatal error); the runner has replaced it. */
  | 'crashed'
  /** Too many of this key's runs are waiting; try again after `retryAfterSec`. Nothing ran. */
  | 'busy'
  /** The runner can't run anything right now (it can't start its sandbox); nothing ran. */
  | 'unavailable'

/** The result of one run. `value` is the function's answer as JSON (parsed), `logs` what it printed. */
export type RunOutcome =
  | { ok: true; value: unknown; logs: string[] }
  | {
      ok: false
      kind: RunFailureKind
      message: string
      status?: number
      /** A thrown error's `errors` block (field, or `error`, to messages), as the formulas SDK's errors carry. */
      errors?: Record<string, string[]>
      retryAfterSec?: number
    }

/** Runs formula code in isolation. Implementations must be safe to call concurrently. */
export interface FormulaRunner {
  /** Compiles `code` as a CommonJS module body without running it: null when it compiles, else the error message. */
  check(code: string): Promise<string | null>
  /**
   * Loads `code` as a CommonJS module (`module.exports = async function (req) { ... }`) and calls
   * its exported function with `request`. Resolves with the outcome; never rejects for anything the
   * code does, and resolves in bounded time: about `timeoutMs` after the code starts running. A
   * runner may run the code a second time when the first attempt was stopped through no fault of
   * its own (the default runner does so once for a run whose worker died before starting it),
   * so code must not count on running exactly once.
   */
  run(code: string, request: FormulaRequest, options: RunOptions): Promise<RunOutcome>
  /** Stops whatever the runner started; runs still in flight resolve as `crashed`. */
  close(): Promise<void>
}

/**
 * A runner that loads the real one on first use: `createService` uses it for the default sandbox
 * runner, so a service that never runs a formula never loads the WebAssembly engine or starts a
 * worker. `load` is called at most once (again only after a failed load).
 */
export function lazyRunner(load: () => Promise<FormulaRunner>): FormulaRunner {
  let loading: Promise<FormulaRunner> | undefined
  let closed = false
  const get = () => {
    loading ??= load().catch((error: unknown) => {
      loading = undefined
      throw error
    })
    return loading
  }
  return {
    check: async (code) => (await get()).check(code),
    async run(code, request, options) {
      if (closed) return { ok: false, kind: 'crashed', message: 'the formula runner is closed' }
      let runner: FormulaRunner
      try {
        runner = await get()
      } catch {
        return {
          ok: false,
          kind: 'unavailable',
          message: 'the formula runner could not be loaded',
          retryAfterSec: 1,
        }
      }
      return runner.run(code, request, options)
    },
    async close() {
      closed = true
      const runner = loading
      loading = undefined
      await (await runner?.catch(() => undefined))?.close()
    },
  }
}

/**
 * `runner` with each run's `fetch` made by `client` towards the run's `egress` origins: how the
 * service hands its egress client to whatever runner it has (a run without origins gets none).
 */
export function withEgress(runner: FormulaRunner, client: EgressClient): FormulaRunner {
  return {
    check: (code) => runner.check(code),
    run(code, request, options) {
      const origins = options.egress
      if (!origins?.length) return runner.run(code, request, options)
      return runner.run(code, request, {
        ...options,
        // A run given its own `fetch` (the proxy's transforms route their `bt` through it) keeps it.
        fetch: options.fetch ?? ((egressRequest, limits) => client(origins, egressRequest, limits)),
      })
    },
    close: () => runner.close(),
  }
}

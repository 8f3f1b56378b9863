import { type QuickJSContext, type QuickJSHandle, Scope } from 'quickjs-emscripten-core'
import { GuestTextError, guestString } from './guest-text.js'
import type { Io, Prepared } from './prepared.js'
import { failure, isResult, type RunResult, unwrap } from './thrown.js'

/**
 * One run of a formula in a prepared context: its function called with the request, its promise
 * settled (jobs, the prelude's timers and the run's `fetch` requests driven) within the run's time
 * limit, and its answer taken as JSON text of bounded size.
 */

/**
 * Loads and calls the formula. Every handle it makes belongs to one scope disposed when it ends,
 * on every path (a throw at load time, a refused `require`, an interrupted loop, a rejection, an
 * engine failure): a handle left alive would make freeing the runtime abort, and the worker with it.
 */
export async function execute(
  prepared: Prepared,
  request: string,
  maxResultChars: number,
  timeoutMs: number,
): Promise<RunResult> {
  const scope = new Scope()
  try {
    return await executeIn(scope, prepared, request, maxResultChars, timeoutMs)
  } finally {
    scope.dispose()
  }
}

async function executeIn(
  scope: Scope,
  prepared: Prepared,
  request: string,
  maxResultChars: number,
  timeoutMs: number,
): Promise<RunResult> {
  const { context } = prepared
  // Load and call, in one call into the engine: the driver runs the module body of the factory
  // `load` gave it, parses the request (so that it is the engine's own object) and calls the
  // exported function (see `installDriver`).
  const requestText = scope.manage(context.newString(request))
  const called = unwrap(
    scope,
    prepared,
    context.callFunction(prepared.start, context.undefined, requestText),
    'thrown',
  )
  if (prepared.stopped) return prepared.stopped
  if (isResult(called)) return called
  const settled = await settle(scope, prepared, called, timeoutMs)
  if (isResult(settled)) return settled
  // Answer: JSON text made by the engine's JSON.stringify, bounded in size.
  const text = unwrap(
    scope,
    prepared,
    context.callFunction(prepared.stringify, context.undefined, settled),
    'thrown',
  )
  if (isResult(text)) {
    if (text.ok || text.kind !== 'thrown') return text
    return {
      ok: false,
      kind: 'thrown',
      message: `the formula answered something that is not JSON: ${text.message}`,
    }
  }
  const json = answerText(context, text, maxResultChars)
  if (typeof json !== 'string') return json
  return { ok: true, json, logs: prepared.logs }
}

/**
 * The answer's JSON text (`text` a guest string, else `null`), copied whole and at most
 * `maxResultChars` characters (a longer one is refused before it is copied), or the run's failure.
 */
function answerText(
  context: QuickJSContext,
  text: QuickJSHandle,
  maxResultChars: number,
): string | RunResult {
  if (context.typeof(text) !== 'string') return 'null'
  try {
    return guestString(context, text, "the formula's answer", maxResultChars)
  } catch (error) {
    if (!(error instanceof GuestTextError)) throw error
    return { ok: false, kind: 'thrown', message: error.message }
  }
}

/** Waits `ms` milliseconds (at least 0). */
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)))

/**
 * Runs the engine's jobs until `value` (a promise, or not) settles; answers its value or the failure.
 * While no job is pending, the prelude's timers are run when due (the worker waits for the next one),
 * within the run's time limit: a run left waiting only on timers due past its deadline fails at once
 * as a timeout, and one left with nothing to wait for fails as never settled. Every handle it makes
 * is `scope`'s.
 */
async function settle(
  scope: Scope,
  prepared: Prepared,
  value: QuickJSHandle,
  timeoutMs: number,
): Promise<QuickJSHandle | RunResult> {
  const { context, runtime } = prepared
  for (;;) {
    const state = context.getPromiseState(value)
    if (state.type === 'fulfilled') return state.notAPromise ? value : scope.manage(state.value)
    if (state.type === 'rejected') return failure(prepared, scope.manage(state.error), 'thrown')
    if (runtime.hasPendingJob()) {
      const jobs = runtime.executePendingJobs()
      if (jobs.error) return failure(prepared, scope.manage(jobs.error), 'thrown')
      jobs.dispose()
      continue
    }
    const io = prepared.io
    if (io?.completed.length) {
      const delivered = deliverCompleted(prepared, io)
      if (delivered) return delivered
      continue
    }
    const next = prepared.pumpTimers ? pumpTimers(prepared, false) : -1
    if (typeof next !== 'number') return next
    const waiting = io ? io.inflight.size : 0
    if (next < 0 && !waiting) {
      return {
        ok: false,
        kind: 'thrown',
        message: 'the formula did not finish: its promise never settled (nothing it waits for is pending)',
      }
    }
    const left = prepared.deadline - performance.now()
    const wait = next < 0 ? Number.POSITIVE_INFINITY : next - Date.now()
    if (left <= 0 || (wait > left && !waiting))
      return { ok: false, kind: 'timeout', message: `no answer within ${timeoutMs} ms` }
    if (wait > 0) await idle(io, Math.min(wait, left))
    if (performance.now() > prepared.deadline) continue
    if (next >= 0 && Date.now() >= next) {
      const fired = pumpTimers(prepared, true)
      if (typeof fired !== 'number') return fired
    }
  }
}

/** Waits `ms`, or less when one of the run's requests completes. */
function idle(io: Io | undefined, ms: number): Promise<void> {
  if (!io?.inflight.size) return sleep(ms)
  return new Promise<void>((resolve) => {
    const timer = setTimeout(done, Math.max(0, ms))
    function done() {
      clearTimeout(timer)
      io!.wake = undefined
      resolve()
    }
    io.wake = done
  })
}

/** Settles the completed requests' promises in the engine; answers a failure of the engine's hook, if any. */
function deliverCompleted(prepared: Prepared, io: Io): RunResult | undefined {
  const { context } = prepared
  for (const { id, ok, payload } of io.completed.splice(0)) {
    // Each call's handles are freed when it returns, not only when the run ends.
    const failed = Scope.withScope((scope) => {
      const result = unwrap(
        scope,
        prepared,
        context.callFunction(
          prepared.deliverFetch!,
          context.undefined,
          scope.manage(context.newNumber(id)),
          ok ? context.true : context.false,
          scope.manage(context.newString(payload)),
        ),
        'thrown',
      )
      return isResult(result) ? result : undefined
    })
    if (failed) return failed
  }
  return undefined
}

/** Calls the prelude's timer hook: the next timer's due time (-1: none), or the failure of the timer it ran. */
function pumpTimers(prepared: Prepared, fire: boolean): number | RunResult {
  const { context } = prepared
  return Scope.withScope((scope) => {
    const result = unwrap(
      scope,
      prepared,
      context.callFunction(prepared.pumpTimers!, context.undefined, fire ? context.true : context.false),
      'thrown',
    )
    if (isResult(result)) return result
    return context.typeof(result) === 'number' ? context.getNumber(result) : -1
  })
}

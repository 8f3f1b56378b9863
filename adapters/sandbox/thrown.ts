import { type QuickJSContext, type QuickJSHandle, Scope } from 'quickjs-emscripten-core'
import { type ErrorsBlock, MAX_MESSAGE, readErrors, type WorkerFailure } from './messages.js'

/**
 * What a run answers, and how a value the formula threw is read: its message, numeric `status` and
 * `errors` block, each bounded, without trusting the value (a getter that throws leaves defaults).
 */

/** A context, with its own `JSON.stringify` (taken before any code ran in it) when it has one. */
export interface Guest {
  context: QuickJSContext
  stringify?: QuickJSHandle
}

/** What one run answers (the worker adds the run's id). */
export type RunResult =
  | { ok: true; json: string; logs: string[] }
  | { ok: false; kind: WorkerFailure; message: string; status?: number; errors?: ErrorsBlock }

export const cut = (text: string, max: number) => (text.length > max ? text.slice(0, max) : text)

/** The longest JSON text of a thrown error's `errors` block that is read. */
const MAX_ERRORS_JSON = 64_000

/** A thrown error's `errors` block (the reactor formulas SDK's errors carry one), cut to the limits. */
function errorsOf(
  context: QuickJSContext,
  thrown: QuickJSHandle,
  stringify: QuickJSHandle | undefined,
): ErrorsBlock | undefined {
  return Scope.withScope((scope) => {
    const errors = scope.manage(context.getProp(thrown, 'errors'))
    if (!stringify || context.typeof(errors) !== 'object') return undefined
    const result = context.callFunction(stringify, context.undefined, errors)
    if (result.error) {
      scope.manage(result.error)
      return undefined
    }
    const value = scope.manage(result.value)
    const text = context.typeof(value) === 'string' ? context.getString(value) : ''
    if (!text || text.length > MAX_ERRORS_JSON) return undefined
    return readErrors(JSON.parse(text), true) ?? undefined
  })
}

/**
 * The message, numeric `status` and `errors` block of a thrown value, read without trusting it. The
 * `errors` block is read with `stringify`, the context's own `JSON.stringify` taken before any code
 * ran in it (without it, no `errors` block is read).
 */
export function describe(
  context: QuickJSContext,
  thrown: QuickJSHandle,
  stringify?: QuickJSHandle,
): { message: string; status?: number; errors?: ErrorsBlock } {
  const type = context.typeof(thrown)
  if (type === 'string') return { message: cut(context.getString(thrown), MAX_MESSAGE) }
  if (type !== 'object' && type !== 'function') return { message: `the formula threw a ${type}` }
  let message = 'the formula threw an error'
  let status: number | undefined
  let errors: ErrorsBlock | undefined
  try {
    Scope.withScope((scope) => {
      const m = scope.manage(context.getProp(thrown, 'message'))
      if (context.typeof(m) === 'string') message = cut(context.getString(m), MAX_MESSAGE)
      const s = scope.manage(context.getProp(thrown, 'status'))
      if (context.typeof(s) === 'number') status = context.getNumber(s)
    })
    errors = errorsOf(context, thrown, stringify)
  } catch {
    // A getter that throws leaves the defaults.
  }
  const described: { message: string; status?: number; errors?: ErrorsBlock } = { message }
  if (status !== undefined && Number.isInteger(status)) described.status = status
  if (errors) described.errors = errors
  return described
}

/** A failure of the code, or `crashed` when the engine ran out of memory for it. */
export function failed(
  kind: WorkerFailure,
  failure: { message: string; status?: number; errors?: ErrorsBlock },
): RunResult {
  if (failure.message === 'out of memory')
    return { ok: false, kind: 'crashed', message: 'it ran out of memory' }
  return { ok: false, kind, ...failure }
}

/**
 * Takes the value out of a call result (handed to `scope`, which disposes it), or answers the
 * failure it stands for (the error's handle disposed, whatever reading it does).
 */
export function unwrap(
  scope: Scope,
  guest: Guest,
  result: ReturnType<QuickJSContext['callFunction']>,
  kind: WorkerFailure,
): QuickJSHandle | RunResult {
  if ('error' in result && result.error) return failure(guest, scope.manage(result.error), kind)
  return scope.manage((result as { value: QuickJSHandle }).value)
}

/** The failure a thrown value stands for (its handle is the caller's scope's). */
export function failure(guest: Guest, thrown: QuickJSHandle, kind: WorkerFailure): RunResult {
  return failed(kind, describe(guest.context, thrown, guest.stringify))
}

export const isResult = (value: QuickJSHandle | RunResult): value is RunResult =>
  typeof value === 'object' && value !== null && 'ok' in value

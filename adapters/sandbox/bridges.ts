import type { QuickJSHandle } from 'quickjs-emscripten-core'
import { EGRESS_MAX_BODY_BYTES, EgressError, type EgressResponse } from '../../src/kernel/index.js'
import { endBridge, installCryptoBridge } from './crypto-bridge.js'
import { guestString } from './guest-text.js'
import {
  MAX_FETCH_REQUEST_CHARS,
  MAX_FETCHES,
  MAX_LOG_LINE,
  MAX_LOG_LINES,
  readFetchRequest,
} from './messages.js'
import type { HostFetch, Prepared } from './prepared.js'
import { cut } from './thrown.js'

/**
 * The host functions a run's code reaches: `console.*` (captured lines), and on the `__host` object
 * the prelude takes them from, `refuse` (the clear error for a module not offered), `fetch` (a
 * request handed out of the engine, see `HostFetch`) and the crypto bridge
 * (`adapters/sandbox/crypto-bridge.ts`). Nothing of the host's is handed back: ids, numbers and
 * strings only.
 */

export const NOT_AVAILABLE =
  'is not available: reactor formulas run without network (unless the host allows origins), files, processes and modules other than the reactor formulas SDK, crypto, util, buffer, url and timers (see docs/reactors.md, "What a formula can use")'

/** Lets this run's code use `fetch`, made by `fetch` (the global is the prelude's, made on first use). */
export function allowFetch(prepared: Prepared, fetch: HostFetch): void {
  const { context } = prepared
  prepared.io = { fetch, started: 0, inflight: new Map(), completed: [], wake: undefined, ended: false }
  context.defineProp(context.global, 'fetch', {
    configurable: true,
    enumerable: false,
    get: () => context.getProp(loadPrelude(prepared), 'fetch'),
    set: (value) => {
      context.defineProp(context.global, 'fetch', { configurable: true, enumerable: false, value })
    },
  })
}

/** Aborts the run's requests still under way; their answers are dropped. */
export function endIo(prepared: Prepared): void {
  endBridge(prepared.bridge)
  const io = prepared.io
  if (!io) return
  io.ended = true
  for (const controller of io.inflight.values()) controller.abort(new EgressError('the run ended'))
  io.inflight.clear()
  io.completed.length = 0
}

/**
 * The host side of `fetch`: `text` is the request as JSON text, made by the prelude. Checks it,
 * starts the request (bounded by the run's remaining time and the body limits) and answers its id.
 */
function startFetch(prepared: Prepared, text: string): number {
  const io = prepared.io
  if (!io) throw new Error(`fetch ${NOT_AVAILABLE}`)
  if (io.started >= MAX_FETCHES) throw new Error(`a run makes at most ${MAX_FETCHES} requests`)
  if (text.length > MAX_FETCH_REQUEST_CHARS)
    throw new Error(`request body is larger than ${EGRESS_MAX_BODY_BYTES} bytes`)
  const request = readFetchRequest(text)
  if (!request) throw new Error('invalid request')
  const id = ++io.started
  const controller = new AbortController()
  io.inflight.set(id, controller)
  const settleWith = (ok: boolean, payload: string) => {
    if (io.ended) return
    io.inflight.delete(id)
    io.completed.push({ id, ok, payload })
    io.wake?.()
  }
  const limits = {
    timeoutMs: prepared.deadline - performance.now(),
    maxRequestBytes: EGRESS_MAX_BODY_BYTES,
    maxResponseBytes: EGRESS_MAX_BODY_BYTES,
    signal: controller.signal,
  }
  new Promise<EgressResponse>((resolve) => resolve(io.fetch(request, limits))).then(
    (response) => settleWith(true, JSON.stringify(response)),
    (error: unknown) =>
      settleWith(false, error instanceof EgressError ? error.message : 'the request could not be made'),
  )
  return id
}

/** Evaluates the prelude in this run's context (once) and answers its exports. */
export function loadPrelude(prepared: Prepared): QuickJSHandle {
  if (prepared.modules) return prepared.modules
  const { context } = prepared
  const host = context.newObject()
  const refuse = context.newFunction('refuse', (id) => {
    const name = context.typeof(id) === 'string' ? context.getString(id) : 'that'
    return { error: context.newError(`require(${JSON.stringify(cut(name, 100))}) ${NOT_AVAILABLE}`) }
  })
  const hostFetch = context.newFunction('fetch', (request) => {
    try {
      if (context.typeof(request) !== 'string') throw new Error('invalid request')
      return context.newNumber(startFetch(prepared, guestString(context, request, 'the request')))
    } catch (error) {
      return { error: context.newError(error instanceof Error ? error.message : 'invalid request') }
    }
  })
  context.setProp(host, 'refuse', refuse)
  context.setProp(host, 'fetch', hostFetch)
  refuse.dispose()
  hostFetch.dispose()
  installCryptoBridge(context, host, prepared.bridge)
  context.setProp(context.global, '__host', host)
  host.dispose()
  const modules = context.unwrapResult(context.evalCode(prepared.prelude, 'prelude.js'))
  prepared.modules = modules
  prepared.pumpTimers = context.getProp(modules, 'pumpTimers')
  prepared.deliverFetch = context.getProp(modules, 'deliverFetch')
  return modules
}

/** `console.log` and friends, capturing what a run prints (100 lines of 2000 characters at most). */
export function installConsole(prepared: Prepared): void {
  const { context } = prepared
  const consoleObject = context.newObject()
  const log = context.newFunction('log', (...args) => {
    if (prepared.logs.length >= MAX_LOG_LINES) return
    const parts = args.map((arg) => {
      if (context.typeof(arg) === 'string') return cut(context.getString(arg), MAX_LOG_LINE)
      try {
        const dumped: unknown = context.dump(arg)
        return cut(typeof dumped === 'string' ? dumped : String(JSON.stringify(dumped)), MAX_LOG_LINE)
      } catch {
        return '[unprintable]'
      }
    })
    prepared.logs.push(cut(parts.join(' '), MAX_LOG_LINE))
  })
  for (const level of ['log', 'info', 'warn', 'error', 'debug', 'trace'])
    context.setProp(consoleObject, level, log)
  log.dispose()
  context.setProp(context.global, 'console', consoleObject)
  consoleObject.dispose()
}

/**
 * The prelude: what formula code gets besides the engine's built-ins. Bundled (esbuild, see
 * adapters/sandbox/prelude-source.ts) into one script evaluated in a run's fresh context the first
 * time the run uses `require` or one of the globals defined here; the engine reads its exports.
 */

import { crypto } from './crypto.js'
import { deliverFetch, fetch, Headers, nodeFetch, Response } from './fetch.js'
import { refuse } from './host.js'
import { sdk } from './sdk.js'
import { Buffer, bufferModule, TextDecoder, TextEncoder } from './text.js'
import { clearTimer, pumpTimers, setImmediate, setInterval, setTimeout } from './timers.js'
import { URL, URLSearchParams } from './url.js'
import { util } from './util.js'

const GLOBALS = {
  TextEncoder: TextEncoder,
  TextDecoder: TextDecoder,
  Buffer: Buffer,
  URL: URL,
  URLSearchParams: URLSearchParams,
  setTimeout: setTimeout,
  clearTimeout: clearTimer,
  setInterval: setInterval,
  clearInterval: clearTimer,
  setImmediate: setImmediate,
  clearImmediate: clearTimer,
  Headers: Headers,
  Response: Response,
}
for (const g in GLOBALS)
  Object.defineProperty(globalThis, g, { value: GLOBALS[g], writable: true, configurable: true })
const timersModule = Object.freeze({
  setTimeout: setTimeout,
  clearTimeout: clearTimer,
  setInterval: setInterval,
  clearInterval: clearTimer,
  setImmediate: setImmediate,
  clearImmediate: clearTimer,
})
const urlModule = Object.freeze({ URL: URL, URLSearchParams: URLSearchParams })

const MODULES = {
  '@basis-theory/basis-theory-reactor-formulas-sdk-js': sdk,
  crypto: crypto,
  'node:crypto': crypto,
  util: util,
  'node:util': util,
  buffer: bufferModule,
  'node:buffer': bufferModule,
  url: urlModule,
  'node:url': urlModule,
  timers: timersModule,
  'node:timers': timersModule,
  'node-fetch': nodeFetch,
}
const exported = {
  require: function require(id) {
    if (typeof id === 'string' && Object.hasOwn(MODULES, id)) return MODULES[id]
    return refuse(typeof id === 'string' ? id : 'that')
  },
  pumpTimers: pumpTimers,
  deliverFetch: deliverFetch,
  fetch: fetch,
}
for (const e in GLOBALS) exported[e] = GLOBALS[e]

export default exported

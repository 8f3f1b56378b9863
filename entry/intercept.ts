/**
 * `tokenvault/intercept`: today's Basis Theory SDKs, unmodified and with no base URL to change, answered
 * by an in-process vault. The composition of two adapters: the HTTP adapter's fetch handler behind
 * the interception adapter.
 */
import { createHttpHandler, type HttpHandlerOptions } from '../adapters/http/index.js'
import {
  BASIS_THEORY_HOSTS,
  type HostInterceptOptions,
  type InterceptedHandler,
  type Interception,
  interceptHosts,
} from '../adapters/intercept/index.js'
import type { Service } from '../src/service/index.js'

export type { InterceptedHandler, Interception }
export { BASIS_THEORY_HOSTS }

/** What `intercept` answers from: a service, or a vault that already has its HTTP handler (`createTestVault()`). */
export type InterceptTarget = Service | { http: InterceptedHandler }

/** Options of `intercept`. */
export interface InterceptOptions extends HostInterceptOptions {
  /**
   * Options of the HTTP handler made for a `Service` (`createHttpHandler`); ignored for a vault
   * that has its own `http`.
   * @default { headerPrefix: 'BT' }
   */
  http?: HttpHandlerOptions
}

/**
 * Answers, in this process, every request sent to Basis Theory's API hosts (`api.basistheory.com`,
 * `api.test.basistheory.com`, or `options.hosts`) through the global `fetch` or `http`/`https`
 * (axios), with `vault`'s HTTP API: `new BasisTheoryClient({ apiKey })` (node-sdk 5) and
 * `new BasisTheory().init(key)` (basis-theory-js 1.x and 4.x) reach it as they would reach
 * production. Requests to every other host go out untouched. `close()` removes the interception
 * (call it after each test); it does not close the vault.
 *
 * For a `Service`, the handler is `createHttpHandler(service, { headerPrefix: 'BT', ...options.http })`;
 * a test vault's own `vault.http` (both `BT-` and `SVC-` headers, its `faults`) is used as it is.
 */
export function intercept(vault: InterceptTarget, options: InterceptOptions = {}): Interception {
  const handler =
    'http' in vault && typeof vault.http === 'function'
      ? vault.http
      : createHttpHandler(vault as Service, { headerPrefix: 'BT', ...options.http })
  return interceptHosts(handler, options.hosts === undefined ? {} : { hosts: options.hosts })
}

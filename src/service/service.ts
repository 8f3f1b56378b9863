import type { ApplicationWithKey } from '../applications/index.js'
import { authenticate, hashApiKey } from '../applications/index.js'
import type { ProxyAnswer } from '../proxy/index.js'
import { type Admin, createAdmin, type TestAdmin, testPowers } from './admin.js'
import { type AnonymousProxyOptions, anonymousProxyCall, anonymousProxyTenant } from './anonymous-proxy.js'
import { type Client, type ConnectOptions, connectClient } from './client.js'
import type { OperationJournal, VaultEvent } from './journal.js'
import type { ServiceOptions } from './options.js'
import { type ServiceDefaults, wire } from './wiring.js'

/** A service made with `testMode: true`: its admin has the test powers (`TestPowers`). */
export interface TestService extends Service {
  admin: TestAdmin
}

/** A running service over one store. */
export interface Service {
  admin: Admin
  /**
   * A client acting as `apiKey`, enlisted in `transactionId` when given. The key is checked on every
   * call. With `idempotencyKey`, each call is idempotent for 24 hours (see `idempotent`): a repeat
   * of the same call by the same application answers the first answer without acting again, a
   * different call with the key answers `validation_failed`, a repeat while the first runs
   * `conflict`. (The HTTP adapter passes `<prefix>-IDEMPOTENCY-KEY` on POST, PUT and PATCH only.)
   */
  connect(apiKey: string, options?: ConnectOptions): Client
  /**
   * The tenant of `apiKey`, checked as a call checks it (a missing, unknown or expired key throws
   * `unauthenticated`), acting on nothing: the HTTP adapter admits a request under its tenant's
   * bounds with it before reading the request's body. A refused key is journaled as
   * `key.authenticate` under the `unknown` actor.
   */
  tenantOf(apiKey: string): Promise<string>
  /** Whether the store answers (readiness): false while its disk or database can't be reached. */
  ready(): Promise<boolean>
  /**
   * The proxy without an API key (the inbound case): `invoke` calls the pre-configured proxy named
   * by `proxy_key` when it has `require_auth: false`, and answers 401 otherwise (see `anonymousCall`).
   * The call is in the proxy's tenant's audit log (actor `proxy`), with `options.requestId` when
   * given (see `anonymousProxyCall`).
   */
  proxy: {
    invoke(input: unknown, options?: AnonymousProxyOptions): Promise<ProxyAnswer>
    /**
     * The tenant of the proxy `proxyKey` names when it takes calls without an API key; null for
     * any other key. The HTTP adapter asks it before reading such a call's body.
     */
    tenantOfKey(proxyKey: string): Promise<string | null>
  }
  /**
   * The journal of operations, in-process and over HTTP alike: time, tenant, actor, operation,
   * outcome and the ids touched — never token data, keys or nonces. The newest `journalSize` entries.
   */
  journal: OperationJournal
  /**
   * Calls `listener` after each successful change, under Basis Theory's event names
   * (`token.created`, `token.updated`, `token.deleted`, `reactor.created`, `session.authorized`, …).
   * Returns a function that removes it.
   */
  on(event: 'event', listener: (event: VaultEvent) => void): () => void
  /** Closes the formula runner, if any, then the store. */
  close(): Promise<void>
}

/**
 * Creates the service: every domain rule, over `store`, with time from `clock`, and `defaults` for
 * what `options` leave out. Users call `createService` of the package's main entry, which passes
 * the default formula runner.
 */
export function createCoreService(
  options: ServiceOptions & { testMode: true },
  defaults: ServiceDefaults,
): TestService
export function createCoreService(options: ServiceOptions, defaults: ServiceDefaults): Service
export function createCoreService(options: ServiceOptions, defaults: ServiceDefaults): Service {
  const w = wire(options, defaults)
  const { store, journal } = w
  const admin = createAdmin(w)
  return {
    // Every token in the clear to any holder of the admin: only in test mode.
    admin: options.testMode === true ? { ...admin, ...testPowers(w) } : admin,
    connect: (apiKey, connectOptions = {}) => connectClient(w, apiKey, connectOptions),
    async tenantOf(apiKey) {
      try {
        return (await authenticate(store, w.now(), hashApiKey(apiKey))).tenantId
      } catch (error) {
        // A key refused before any call (the HTTP adapter's admission) is journaled as a call's would be.
        w.record('key.authenticate', undefined, [], undefined, error)
        throw error
      }
    },
    journal,
    proxy: {
      invoke: (input, callOptions) => anonymousProxyCall(w, input, callOptions),
      tenantOfKey: (proxyKey) => anonymousProxyTenant(w, proxyKey),
    },
    on: (_event, listener) => journal.on(listener),
    async ready() {
      try {
        await store.hasTenants()
        return true
      } catch {
        return false
      }
    },
    async close() {
      // No run starts once the runner is closing; the ones under way end with it.
      w.webhooks.dispatcher.stop()
      await w.runner?.close()
      // Attempts under way finish and are recorded before the store closes.
      await w.webhooks.dispatcher.close()
      await store.close()
    },
  }
}

export type { Admin, TestAdmin, TestPowers } from './admin.js'
export type { Client } from './client.js'
export type { ServiceDefaults } from './wiring.js'
export type { ApplicationWithKey }

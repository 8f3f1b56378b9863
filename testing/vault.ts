import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type FaultRegistry, faultRegistry, withFaults, withFetchFaults } from '../adapters/http/faults.js'
import { createHttpHandler, type HttpHandlerOptions, toNodeListener } from '../adapters/http/index.js'
import { RequestLog, type RequestLogEntry, type RequestLogQuery } from '../adapters/http/request-log.js'
import { loggedFaults, type RequestView, requestViews } from '../adapters/http/request-view.js'
import { createService } from '../entry/index.js'
import { PERMISSIONS_BY_TYPE } from '../src/applications/index.js'
import { toProvider } from '../src/encryption/index.js'
import type {
  AccessRule,
  AccessTrace,
  Application,
  FormulaRunner,
  Permission,
  Tenant,
} from '../src/kernel/index.js'
import { type ManualClock, manualClock } from '../src/kernel/index.js'
import type { StateSnapshot } from '../src/lifecycle/index.js'
import type { Client, Fixture, Service, TestService } from '../src/service/index.js'
import type { Store } from '../src/store/index.js'
import {
  type CannedAnswer,
  type Destination,
  destinations as destinationsOf,
  type ReceivedRequest,
} from './destinations.js'
import type { Exposure } from './insight/accounting.js'
import { type ForkableStore, forkableMemoryStore } from './insight/fork-store.js'
import { type VaultInsight, vaultInsight } from './insight/insight.js'
import type { Leaks } from './insight/leaks.js'
import type { UsedAccess } from './insight/used-access.js'
import { NotBuiltError } from './journal-matchers.js'
import { type LogKit, logKit } from './logs.js'
import { type WebhookKit, webhookKit } from './webhooks.js'

/** The three applications a test vault starts with. */
export type TestRole = 'private' | 'public' | 'management'

/** Options of `createTestVault`; every one has a default that makes a ready vault in one line. */
export interface TestVaultOptions {
  /** Default: a fresh memory store (one that can `fork()`; any other store can not). */
  store?: Store
  /** Where the manual clock starts. Default `2030-01-01T00:00:00.000Z`. */
  start?: Date | string
  /** The tenant's name. Default `test`. */
  tenantName?: string
  /** The private application's permissions and rules. Default: every private permission, revealing everything (a rule on `/`). */
  private?: { permissions?: Permission[]; rules?: AccessRule[] }
  /** The public application's permissions. Default `token:create`. */
  public?: { permissions?: Permission[] }
  /** The management application's permissions. Default: every management permission. */
  management?: { permissions?: Permission[] }
  /** Formula runner (default: none, so no worker starts; pass `sandboxRunner()` to run formulas). */
  runner?: FormulaRunner | null
  /** Options of the `http` handler (default header prefix `SVC`). */
  http?: HttpHandlerOptions
  sessionTtlMs?: number
  transactionTtlMs?: number
  /** How many operations the journal keeps (all of the one tenant's, up to this). Default 1000. */
  journalSize?: number
  /**
   * Destinations answered in this process, by origin (`{ 'https://api.stripe.com': (request) =>
   * Response.json({ id: 'ch_1' }) }`, `'echo'`, or a canned answer `{ status, headers, body }`): the proxy and formula `fetch` reach them and
   * nothing else (no network at all); each is on the egress list. What they received is
   * `vault.proxy.received()`.
   */
  destinations?: Readonly<Record<string, Destination | 'echo' | CannedAnswer>>
  /**
   * What `http` does with a route of the reference API that tokenvault does not build (answered
   * 501 naming the route): `'throw'` rejects with a `NotBuiltError`, failing the test that called
   * it; `'answer'` lets the 501 through (`toHaveNoUnexpectedFailures` still reports it).
   * @default 'answer'
   */
  notBuilt?: 'answer' | 'throw'
}

/** The test vault served on a real port (`vault.listen()`). */
export interface ListeningVault {
  /** `http://127.0.0.1:PORT`, with the port actually bound; the API is at its root. */
  url: string
  /** Stops listening and closes its connections (the vault stays open). */
  close(): Promise<void>
}

/** A vault for one test: service, manual clock, one tenant, a key per role, and state snapshots. */
export interface TestVault {
  /** The service, in test mode: its admin has the test powers (`exportState`, `importState`, `clearState`). */
  service: TestService
  clock: ManualClock
  tenant: Tenant
  keys: Record<TestRole, string>
  /** The application behind each key. */
  applications: Record<TestRole, Application>
  /** A client acting with the role's key (optionally enlisted in a transaction). */
  client(role?: TestRole, options?: { transactionId?: string }): Client
  /** The HTTP API as a fetch handler: `await vault.http(new Request('http://vault/tokens', …))`. */
  http: (request: Request) => Promise<Response>
  /** The whole state, clock included, as a JSON value (token data in the clear: a test artifact). */
  snapshot(): Promise<StateSnapshot>
  /** Puts back a snapshot from any test vault or store, clock included. */
  restore(snapshot: StateSnapshot): Promise<void>
  /** Back to the state right after `createTestVault` (same tenant, same keys, same time); clears `faults`. */
  reset(): Promise<void>
  /**
   * Failures and latency on demand for `http` and `listen()` (not for `client()`, which is not
   * HTTP): `vault.faults.add({ method: 'POST', path: '/tokens', status: 503, times: 1 })` makes
   * the next matching request answer that status (a problem document, `Retry-After` for 429 and
   * 503), after `delay_ms` of real time when given; `list()`, `clear()`. The same fields as
   * `POST /_test/faults`; bad input throws a `validation_failed` `ServiceError`.
   */
  faults: Pick<FaultRegistry, 'add' | 'list' | 'clear'>
  /**
   * Serves `http` on a real socket, for clients that need a URL (the official SDKs, HTTP clients
   * of other languages): on `127.0.0.1` and a free port unless given. `close()` of the vault stops it too.
   */
  listen(options?: { port?: number; host?: string }): Promise<ListeningVault>
  /** Closes the service and every server `listen` started. */
  close(): Promise<void>
  /**
   * Leak checks against every plaintext the vault holds: `check(value)` fails naming token ids and
   * where (never the plaintext), `find`, `canary(type)`, `watch()` (stdout, stderr, console).
   */
  leaks: Leaks
  /**
   * Every time plaintext left the vault since the vault was made (or `reset`): a revealed read or
   * list, detokenize, a search answer, a react's arguments; per application, token and operation.
   */
  exposure(): Exposure
  /**
   * Per application and session: the permissions and rules its calls exercised, what it holds and
   * never used, and the least grant that serves its calls (`fixture()` writes it as applications).
   */
  usedAccess(): UsedAccess
  /**
   * An independent copy of the whole vault (state, clock time, tenant, keys) for one test or one
   * worker, made in time independent of the tokens held: the two share the state until either
   * writes, which copies it first (its indexes; records shared). A fork's writes never reach its
   * parent or siblings, nor theirs the fork. Exposure and used access start empty; `reset()` goes
   * back to the state right after `createTestVault`. Needs the default memory store.
   */
  fork(): TestVault
  /** What the in-process destinations received (plaintext, in memory only); cleared by `reset()`. */
  proxy: { received(origin?: string): ReceivedRequest[] }
  /**
   * The request log of `http` and `listen()` (not of `client()`, which is not HTTP): every
   * exchange with its status, duration, problem, journal entries and access traces, names beside
   * ids; never data. Filters as `GET /_test/requests`. Cleared by `reset()`.
   */
  requests(query?: RequestLogQuery): Promise<RequestView[]>
  /**
   * Why a request of the log was refused or masked: the access decisions' traces as the evaluator
   * made them (`[]` when it made none that refused or masked; undefined for an unknown id). An
   * in-process call's `ServiceError` carries the same as `error.trace`.
   */
  explain(requestId: string): AccessTrace[] | undefined
  /** Starts a named group in the request log: later entries carry `mark: name` (the console groups by it). */
  mark(name: string): void
  /** The request log's entries as kept (no names looked up): what the journal matchers read. */
  requestEntries(): RequestLogEntry[]
  /**
   * The tenant's webhook deliveries and callbacks: `deliveries()` (what was sent, each attempt),
   * `deliverNow()`, `deliverAgain(id)`, `deliverDue()`, and `verify(received)` with the signing
   * `publicKey`. Receivers are `destinations` (what they got: `proxy.received(origin)`).
   */
  webhooks: WebhookKit
  /**
   * The tenant's audit log: `list({ entity_type?, entity_id?, size?, start? })`, newest first, and
   * `verify()` its chain (no `log:read` key needed).
   */
  logs: LogKit
}

/**
 * The test vault's master key: fixed, so snapshots restore into any test vault; no real secret.
 * One provider for every test vault and fork (making one hashes the key).
 */
const TEST_MASTER_KEY = toProvider(Buffer.alloc(32, 0x54))

const EVERYTHING: AccessRule = {
  description: 'every token, in the clear',
  priority: 1,
  container: '/',
  transform: 'reveal',
  permissions: [...PERMISSIONS_BY_TYPE.private].filter((p) => p.startsWith('token:')) as Permission[],
}

/**
 * A vault ready for a test in one line: a memory store (or the one given), a manual clock, a
 * tenant, and private, public and management applications with keys.
 *
 * ```ts
 * const vault = await createTestVault()
 * const token = await vault.client().tokens.create({ type: 'token', data: 'secret' })
 * vault.clock.advance(60_000)
 * ```
 */
export async function createTestVault(options: TestVaultOptions = {}): Promise<TestVault> {
  const clock = manualClock(options.start ?? '2030-01-01T00:00:00.000Z')
  const routed = destinationsOf(options.destinations ?? {})
  let keys: Record<TestRole, string> | undefined
  const base = options.store ?? forkableMemoryStore()
  // The leak index, exposure and used access follow this store's writes and the service's decisions.
  const insight = vaultInsight(base, TEST_MASTER_KEY, (type, data) =>
    service.connect(keys!.private).tokens.create({ type, data }),
  )
  await insight.load()
  const service = testService(options, clock, insight, routed)
  const tenant = await service.admin.createTenant({ name: options.tenantName ?? 'test' })
  const make = (role: TestRole, permissions: readonly Permission[], rules?: AccessRule[]) =>
    service.admin.createApplication({
      tenantId: tenant.id,
      name: `${role} application`,
      type: role,
      permissions: [...permissions],
      ...(rules ? { rules } : {}),
    })
  const made = {
    private: await make(
      'private',
      options.private?.permissions ?? PERMISSIONS_BY_TYPE.private,
      options.private?.rules ?? (options.private?.permissions ? undefined : [EVERYTHING]),
    ),
    public: await make('public', options.public?.permissions ?? ['token:create']),
    management: await make('management', options.management?.permissions ?? PERMISSIONS_BY_TYPE.management),
  }
  const held: Record<TestRole, string> = {
    private: made.private.key,
    public: made.public.key,
    management: made.management.key,
  }
  keys = held
  const applications: Record<TestRole, Application> = {
    private: made.private.application,
    public: made.public.application,
    management: made.management.application,
  }
  const initial = await service.admin.exportState()
  return assemble({
    options,
    clock,
    routed,
    base,
    insight,
    service,
    tenant,
    keys: held,
    applications,
    initial,
  })
}

/** What a test vault is made of: what `assemble` serves, and what `fork` copies. */
interface VaultParts {
  options: TestVaultOptions
  clock: ManualClock
  routed: ReturnType<typeof destinationsOf>
  base: Store
  insight: VaultInsight
  service: TestService
  tenant: Tenant
  keys: Record<TestRole, string>
  applications: Record<TestRole, Application>
  initial: StateSnapshot
}

/** A fork of the vault made of `parts`: the store forked, the rest anew over it (see `TestVault.fork`). */
function forkOf(parts: VaultParts): TestVault {
  const { options, base, keys } = parts
  if (!('fork' in base)) throw new TypeError('vault.fork() needs the default memory store')
  const store = (base as ForkableStore).fork()
  const clock = manualClock(parts.clock.now())
  const routed = destinationsOf(options.destinations ?? {})
  const insight = parts.insight.fork(store, (type, data) =>
    service.connect(keys.private).tokens.create({ type, data }),
  )
  const service = testService(options, clock, insight, routed)
  return assemble({ ...parts, clock, routed, base: store, insight, service })
}

/** The test vault of `parts`: its clients, HTTP handler, listeners, test powers and insight. */
function assemble(parts: VaultParts): TestVault {
  const { options, clock, routed, insight, service, tenant, keys, applications, initial } = parts
  // Every exchange of `http` and `listen()`, injected faults included: the console's and `requests()`'s.
  const requests = new RequestLog({
    now: () => clock.now(),
    capacity: options.journalSize ?? 1000,
    perTenant: options.journalSize ?? 1000,
  })
  const faults = loggedFaults(faultRegistry(), requests)
  // Made on first use: a fork that is never called over HTTP does not pay for it.
  let made: ReturnType<typeof createHttpHandler> | undefined
  const handler = () => {
    made ??= createHttpHandler(service, { ...options.http, requestLog: requests })
    return made
  }
  const faulted = withFetchFaults((request) => handler()(request), faults)
  const http = async (request: Request) => {
    const response = await faulted(request)
    // A 501 of the handler (not of an injected fault, which has no request id) is a route not built.
    if (response.status === 501 && options.notBuilt === 'throw' && response.headers.has('x-request-id'))
      throw new NotBuiltError(((await response.json()) as { detail?: string }).detail ?? 'a route not built')
    return response
  }
  const servers = new Set<ListeningVault>()
  const listen = async ({ port = 0, host = '127.0.0.1' }: { port?: number; host?: string } = {}) => {
    // The handler itself: toNodeListener serves it without WHATWG objects.
    const server = createServer(withFaults(toNodeListener(handler()), faults))
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, host, () => {
        server.off('error', reject)
        resolve()
      })
    })
    const bound = (server.address() as AddressInfo).port
    const listening: ListeningVault = {
      url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}`,
      close: () =>
        new Promise<void>((resolve) => {
          servers.delete(listening)
          server.close(() => resolve())
          server.closeAllConnections()
        }),
    }
    servers.add(listening)
    return listening
  }
  return {
    service,
    clock,
    tenant,
    keys,
    applications,
    client: (role = 'private', connect) => service.connect(keys[role], connect),
    http,
    snapshot: () => service.admin.exportState(),
    restore: (snapshot) => service.admin.importState(snapshot),
    reset: () => {
      faults.clear()
      requests.clear()
      insight.accounting.clear()
      routed.clear()
      return service.admin.importState(initial)
    },
    faults: { add: (fault) => faults.add(fault), list: () => faults.list(), clear: () => faults.clear() },
    listen,
    proxy: { received: (origin) => routed.received(origin) },
    requests: (query) => requestViews(service, requests.list(query)),
    explain: (requestId) => {
      const entry = requests.get(requestId)
      return entry && (entry.trace ?? [])
    },
    mark: (name) => requests.mark(name),
    requestEntries: () => requests.list(),
    webhooks: webhookKit(service, tenant.id),
    logs: logKit(service, tenant.id),
    close: async () => {
      await Promise.all([...servers].map((s) => s.close()))
      await service.close()
    },
    leaks: insight.leaks,
    exposure: insight.exposure,
    usedAccess: insight.usedAccess,
    fork: () => forkOf(parts),
  }
}

/** The test vault's service over the insight's store: test mode, the fixed master key, the observer. */
function testService(
  options: TestVaultOptions,
  clock: ManualClock,
  insight: VaultInsight,
  routed: ReturnType<typeof destinationsOf>,
): TestService {
  return createService({
    store: insight.store,
    observe: insight.accounting,
    clock,
    runner: options.runner ?? null,
    // The test powers (snapshot, restore, reset) are this kit's: a production service has none.
    testMode: true,
    // A fixed key: snapshots restore into any test vault, and nothing here is a real secret.
    masterKey: TEST_MASTER_KEY,
    ...(options.sessionTtlMs !== undefined ? { sessionTtlMs: options.sessionTtlMs } : {}),
    ...(options.transactionTtlMs !== undefined ? { transactionTtlMs: options.transactionTtlMs } : {}),
    // One tenant: it may fill the whole journal.
    journalSize: options.journalSize ?? 1000,
    journalSizePerTenant: options.journalSize ?? 1000,
    // The test's destinations: no request of this vault reaches the network.
    ...(options.destinations ? { egress: routed.origins, egressClient: routed.client } : {}),
  })
}

/**
 * Loads a fixture into `service` (see `Fixture` in `tokenvault`): tenants with fixed ids,
 * applications with fixed keys, tokens with fixed ids, associations, formulas and reactors. A bad
 * entry fails with a validation error (`ServiceError`, `validation_failed`) naming its path.
 */
export function loadFixture(service: Service, fixture: Fixture): Promise<Tenant[]> {
  return service.admin.loadFixture(fixture)
}

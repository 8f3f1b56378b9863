import { randomBytes } from 'node:crypto'
import type { Principal } from '../applications/index.js'
import {
  type ApplicationWithKey,
  applicationKeyOperations,
  applicationOperations,
  authenticate,
  createTenantInput,
  hashApiKey,
  newApplication,
  PERMISSIONS_BY_TYPE,
  shownApplication,
} from '../applications/index.js'
import { childOperations } from '../associations/index.js'
import {
  type KeyProvider,
  Keyring,
  type MasterKey,
  publicTenant,
  sealedStore,
  toProvider,
} from '../encryption/index.js'
import type { Application, Ctx, ManualClock, ResolvedOptions, Tenant } from '../kernel/index.js'
import {
  conflict,
  type EgressClient,
  expressionBudget,
  type FormulaRunner,
  invalid,
  newId,
  notFound,
  parse,
  refuseBadText,
  sha256,
  withEgress,
} from '../kernel/index.js'
import {
  clearState,
  deleteTenants,
  parseSnapshot,
  restoreSnapshot,
  type StateSnapshot,
  type SweepCounts,
  sweepExpired,
  takeSnapshot,
} from '../lifecycle/index.js'
import {
  CallbackQueue,
  DEFAULT_ASYNC_REACTS,
  DEFAULT_ASYNC_REACTS_PER_TENANT,
  formulaOperations,
  type OfficialFormulaAdmin,
  officialFormulaAdmin,
  parseEgressOrigins,
  reactorOperations,
} from '../reactors/index.js'
import { SEARCH_INDEX_PURPOSE } from '../search/index.js'
import { DEFAULT_UNAUTHORIZED_SESSIONS_PER_TENANT, sessionOperations } from '../sessions/index.js'
import { measuredStore } from '../store/index.js'
import { refingerprinted, tokenOperations, withoutExpiredCvc } from '../tokens/index.js'
import { transactionOperations } from '../transactions/index.js'
import { type AdminView, adminView } from './admin-view.js'
import { type Fixture, loadFixture } from './fixtures.js'
import { DEFAULT_IDEMPOTENCY_RECORDS_PER_TENANT, idempotent } from './idempotency.js'
import type { AdminCreateApplicationInput, CreateTenantInput } from './inputs.js'
import {
  DEFAULT_JOURNAL_SIZE,
  DEFAULT_JOURNAL_SIZE_PER_TENANT,
  failureCode,
  failureOutcome,
  Journal,
  type OperationJournal,
  touchedIds,
  type VaultEvent,
} from './journal.js'
import type { ServiceOptions } from './options.js'
import { permissionOperations, tenantOperations } from './tenants.js'
import { unchecked } from './unchecked.js'

/** A bound given as an option: a whole number of at least 1, or `fallback` when absent. */
const atLeastOne = (given: number | undefined, fallback: number) =>
  given === undefined ? fallback : Math.max(1, Math.floor(given))

/** A key the host chooses for an application (`admin.createApplication({ key })`). */
const GIVEN_KEY = /^key_[A-Za-z0-9_-]{24,}$/

/**
 * The master keys of the service: those given, or for a memory store a random one (nothing it
 * encrypts outlives the process anyway). A persistent store without one is refused.
 */
function masterKeys(options: ServiceOptions): KeyProvider[] {
  const given = options.masterKey
  if (given === undefined) {
    if (options.store.persistent) {
      throw new Error(
        'createService: `masterKey` is required with a persistent store (32 bytes, or a KeyProvider): token data is encrypted at rest under it',
      )
    }
    return [toProvider(randomBytes(32))]
  }
  const list = Array.isArray(given) ? [...given] : [given as MasterKey]
  if (!list.length) throw new Error('createService: `masterKey` is an empty list')
  return list.map(toProvider)
}

/**
 * What the composition root wires in where the options leave a part out: the package's main entry
 * (`entry/index.ts`) gives the sandbox runner of `adapters/sandbox`, so the core names no adapter.
 */
export interface ServiceDefaults {
  /** The formula runner when `options.runner` is absent (`null` turns formulas off instead). */
  runner(): FormulaRunner
  /** The egress client (formula `fetch`, react callbacks) when `options.egress` is absent. */
  egress(): EgressClient
}

// biome-ignore lint/suspicious/noExplicitAny: method tables of any shape
type Methods = Record<string, (...args: any[]) => Promise<unknown>>

/** How a client's calls run: each authenticates (`ctx`), then runs through `call`. */
interface Connection {
  /** The context of one call: the key is checked on every call. */
  ctx(): Promise<Ctx>
  /** Runs one call: `request` names it (operations, method, arguments), for idempotency. */
  call<T>(ctx: Ctx, request: unknown, run: () => Promise<T>): Promise<T>
}

/** Records one call in the journal: the operation, the caller (when the key authenticated), the outcome. */
type Recorder = (
  operation: string,
  ctx: Ctx | undefined,
  args: unknown[],
  result: unknown,
  error: unknown,
) => void

/** How the methods of an area are journaled: method name → operation name. Every method, nothing else. */
type OperationNames<T> = { readonly [K in keyof T]-?: `${string}.${string}` }

/**
 * The operation names of the client's methods, area by area (the journal's `operation`). Each
 * table is checked against its area's methods: a method missing from it, or a name that is no
 * method, fails to compile.
 */
const OPERATIONS = {
  tokens: {
    create: 'token.create',
    tokenize: 'token.tokenize',
    detokenize: 'token.detokenize',
    list: 'token.list',
    listV2: 'token.list_v2',
    search: 'token.search',
    searchV2: 'token.search_v2',
    get: 'token.get',
    update: 'token.update',
    delete: 'token.delete',
  } satisfies OperationNames<ReturnType<typeof tokenOperations>>,
  children: {
    link: 'token.child.link',
    unlink: 'token.child.unlink',
    create: 'token.child.create',
    list: 'token.child.list',
  } satisfies OperationNames<ReturnType<typeof childOperations>>,
  transactions: {
    create: 'transaction.create',
    commit: 'transaction.commit',
    rollback: 'transaction.rollback',
  } satisfies OperationNames<ReturnType<typeof transactionOperations>>,
  sessions: {
    create: 'session.create',
    authorize: 'session.authorize',
  } satisfies OperationNames<ReturnType<typeof sessionOperations>>,
  applications: {
    create: 'application.create',
    list: 'application.list',
    get: 'application.get',
    getByKey: 'application.get_by_key',
    update: 'application.update',
    regenerateKey: 'application.regenerate_key',
    delete: 'application.delete',
  } satisfies OperationNames<ReturnType<typeof applicationOperations>>,
  reactorFormulas: {
    create: 'reactor_formula.create',
    list: 'reactor_formula.list',
    get: 'reactor_formula.get',
    update: 'reactor_formula.update',
    delete: 'reactor_formula.delete',
  } satisfies OperationNames<ReturnType<typeof formulaOperations>>,
  reactors: {
    create: 'reactor.create',
    list: 'reactor.list',
    get: 'reactor.get',
    update: 'reactor.update',
    patch: 'reactor.patch',
    delete: 'reactor.delete',
    react: 'reactor.react',
    reactAsync: 'reactor.react_async',
  } satisfies OperationNames<ReturnType<typeof reactorOperations>>,
  applicationKeys: {
    create: 'application_key.create',
    list: 'application_key.list',
    get: 'application_key.get',
    delete: 'application_key.delete',
  } satisfies OperationNames<ReturnType<typeof applicationKeyOperations>>,
  tenants: { self: 'tenant.self' } satisfies OperationNames<ReturnType<typeof tenantOperations>>,
  permissions: { list: 'permission.list' } satisfies OperationNames<ReturnType<typeof permissionOperations>>,
}

/**
 * Turns an operations factory into methods that first authenticate the key (on every call), so a
 * deleted application or an expired session stops working at once; each call is journaled under
 * its name in `operations` (`token.create`, `session.authorize`). The factory runs once per call,
 * with that call's context.
 */
function authenticated<T extends Methods>(
  factory: (ctx: Ctx) => T,
  operations: OperationNames<T>,
  connection: Connection,
  record: Recorder,
): T {
  const out: Methods = {}
  for (const [name, operation] of Object.entries(operations) as [keyof T & string, string][]) {
    out[name] = async (...args: unknown[]) => {
      let ctx: Ctx | undefined
      try {
        const at = await connection.ctx()
        ctx = at
        // An id from the path reaches the store as it is: refused here alike for every store.
        for (const [i, arg] of args.entries())
          if (typeof arg === 'string') refuseBadText(arg, argumentField(operation, i))
        const run = () => factory(at)[name]!(...args)
        const result = await connection.call(at, [operation, args], run)
        record(operation, ctx, args, result, null)
        return result
      } catch (error) {
        record(operation, ctx, args, undefined, error ?? new Error('thrown'))
        throw error
      }
    }
  }
  return out as T
}

/** The name of a call's string argument `i` (an id from the path), as a 400 names it. */
function argumentField(operation: string, i: number): string {
  if (operation.startsWith('token.child.')) return i === 0 ? 'parent_id' : 'child_id'
  if (operation.startsWith('application_key.')) return i === 0 ? 'application_id' : 'id'
  return operation === 'application.get_by_key' ? 'key' : 'id'
}

/** The client of one API key: every operation of the HTTP API, as the key may perform it. */
export interface Client {
  tokens: ReturnType<typeof tokenOperations> & { children: ReturnType<typeof childOperations> }
  transactions: ReturnType<typeof transactionOperations>
  sessions: ReturnType<typeof sessionOperations>
  applications: ReturnType<typeof applicationOperations>
  reactorFormulas: ReturnType<typeof formulaOperations>
  reactors: ReturnType<typeof reactorOperations>
  /** Keys of an application (`/applications/{id}/keys`). */
  applicationKeys: ReturnType<typeof applicationKeyOperations>
  /** The caller's tenant (`/tenants/self`). */
  tenants: ReturnType<typeof tenantOperations>
  /** The permission catalogue (`/permissions`). */
  permissions: ReturnType<typeof permissionOperations>
}

/** The host's trusted operator API: no key, every tenant. Official formulas: see `OfficialFormulaAdmin`. */
export interface Admin extends OfficialFormulaAdmin {
  /** Creates a tenant. */
  createTenant(input: CreateTenantInput): Promise<Tenant>
  /**
   * Creates an application in a tenant; `key` in the answer is the plaintext key, shown only here.
   * The input may give the key itself (`key`: `key_` and 24 or more of A-Z a-z 0-9 _ -) so a CI
   * setup or a fixture can hard-code it; a key already in use is a conflict.
   */
  createApplication(input: AdminCreateApplicationInput): Promise<{ application: Application; key: string }>
  /**
   * Forgets what has expired: deletes expired sessions, expires open transactions past
   * `expires_at`, deletes expired tokens with their associations, and deletes transactions 24 hours
   * after they ended (until then commit/rollback answer 409, after it 404). Also sends, in the
   * background, the asynchronous react callbacks whose retry is due. The CLI runs it every 30 s.
   */
  sweep(): Promise<SweepCounts>
  /**
   * Checks that the service's master keys unwrap every tenant's data key; throws an error naming
   * the key that is missing or wrong (never the key material). The CLI runs it at start.
   */
  verifyMasterKey(): Promise<void>
  /**
   * Makes `next` the master key: every tenant's data key is unwrapped and wrapped again by `next`
   * (token ciphertexts are not touched). The service reads with the old and the new key meanwhile;
   * afterwards a service given only `next` reads everything.
   */
  rotateMasterKey(next: MasterKey): Promise<{ tenants: number; keyId: string }>
  /**
   * Loads a fixture (see `Fixture`): tenants with fixed ids, applications with fixed keys, tokens
   * with fixed ids, associations, formulas and reactors, each through its create operation. A bad
   * entry fails with a validation error naming its path (`tenants.0.tokens.2.data`).
   */
  loadFixture(fixture: Fixture): Promise<Tenant[]>
  /**
   * The operator's read-only view, page by page: tenants, tokens under their masks (never their
   * data), open transactions and their locks, reactors and their runs, applications without keys.
   */
  view: AdminView
}

/**
 * The test powers over the whole state, on the admin of a service made with `testMode: true` only
 * (the test kit's `createTestVault`, the CLI's `--test-mode` and its `/_test/` control plane): a
 * production service has none of them.
 */
export interface TestPowers {
  /**
   * The whole state as one JSON value, the clock's time included. Token data is **in the clear**
   * (so it restores under any master key, into any store): a test artifact, see `StateSnapshot`.
   */
  exportState(): Promise<StateSnapshot>
  /**
   * Replaces the whole state with `snapshot` (checked first: a bad one is a validation error and
   * changes nothing). A manual clock is set to the snapshot's time.
   */
  importState(snapshot: StateSnapshot): Promise<void>
  /** Deletes every record: tenants, applications, tokens, everything. */
  clearState(): Promise<void>
}

/** The admin of a service in test mode: the operator API and the test powers. */
export interface TestAdmin extends Admin, TestPowers {}

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
  connect(apiKey: string, options?: { transactionId?: string; idempotencyKey?: string }): Client
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
  const { clock } = options
  const keys = masterKeys(options)
  const keyring = new Keyring(options.store, keys)
  // Measured below the sealed store: a page's byte budget holds on any store, before decryption.
  const store = sealedStore(measuredStore(options.store), keyring, {
    searchIndexPurpose: SEARCH_INDEX_PURPOSE,
    // The clock is read only for a token with a cvc deadline (the rest have nothing due).
    asRead: (token) => (token.cvc_expires_at === undefined ? token : withoutExpiredCvc(token, now())),
  })
  const resolved: ResolvedOptions = {
    sessionTtlMs: options.sessionTtlMs ?? 3 * 60_000,
    transactionTtlMs: options.transactionTtlMs ?? 60 * 60_000,
    reactorTimeoutMs: options.reactorTimeoutMs ?? 10_000,
    idempotencyLeaseMs: options.idempotencyLeaseMs ?? 60_000,
    reactorEgress: parseEgressOrigins(options.reactorEgress),
    maxIdempotencyRecordsPerTenant: atLeastOne(
      options.maxIdempotencyRecordsPerTenant,
      DEFAULT_IDEMPOTENCY_RECORDS_PER_TENANT,
    ),
    maxUnauthorizedSessionsPerTenant: atLeastOne(
      options.maxUnauthorizedSessionsPerTenant,
      DEFAULT_UNAUTHORIZED_SESSIONS_PER_TENANT,
    ),
  }
  const egress = options.egress ?? defaults.egress()
  const given = options.runner === null ? undefined : (options.runner ?? defaults.runner())
  const runner = given && withEgress(given, egress)
  const journal = new Journal(
    options.journalSize ?? DEFAULT_JOURNAL_SIZE,
    options.journalSizePerTenant ??
      Math.min(DEFAULT_JOURNAL_SIZE_PER_TENANT, options.journalSize ?? DEFAULT_JOURNAL_SIZE),
  )
  const callbacks = new CallbackQueue(clock, egress, {
    perTenant: atLeastOne(options.maxAsyncReactsPerTenant, DEFAULT_ASYNC_REACTS_PER_TENANT),
    total: atLeastOne(options.maxAsyncReacts, DEFAULT_ASYNC_REACTS),
  })
  let lastMs = Number.NaN
  let lastIso = ''
  /** The clock's time as an ISO string (formatted once per distinct millisecond). */
  const now = () => {
    const date = clock.now()
    const ms = date.getTime()
    if (ms !== lastMs) {
      lastMs = ms
      lastIso = date.toISOString()
    }
    return lastIso
  }
  /** One call's context: it reads the clock once, so the whole call sees one instant. */
  const contextFor = (principal: Principal, transactionId: string | undefined, at?: string): Ctx => {
    let instant: string | undefined = at
    return {
      store,
      clock,
      options: resolved,
      runner,
      callbacks,
      principal,
      transactionId,
      budget: expressionBudget(),
      now: () => {
        instant ??= now()
        return instant
      },
      hmac: (purpose, value) => keyring.hmac(principal.tenantId, purpose, value),
    }
  }

  const record: Recorder = (operation, ctx, args, result, error) => {
    const principal = ctx?.principal
    journal.add(
      ctx ? ctx.now() : now(),
      principal?.tenantId ?? null,
      principal ? { kind: principal.kind, id: principal.id } : { kind: 'unknown' },
      operation,
      error === null ? null : failureCode(error),
      touchedIds(args, error === null ? result : undefined),
    )
  }
  /** Runs and journals an admin call (actor `admin`, the tenant it acted in) at one instant read once. */
  const adminCall = async <R>(
    operation: string,
    tenantOf: (r: R | undefined) => string | null,
    run: (at: string) => Promise<R>,
  ) => {
    const at = now()
    try {
      const result = await run(at)
      journal.record({
        at,
        tenant_id: tenantOf(result),
        actor: { kind: 'admin' },
        operation,
        outcome: { ok: true },
        ids: touchedIds([], result),
      })
      return result
    } catch (error) {
      const outcome = failureOutcome(error)
      journal.record({
        at,
        tenant_id: tenantOf(undefined),
        actor: { kind: 'admin' },
        operation,
        outcome,
        ids: [],
      })
      throw error
    }
  }

  const createTenant = async (input: CreateTenantInput, at: string, id = newId()): Promise<Tenant> => {
    const body = parse(createTenantInput, input)
    const tenant: Tenant = {
      id,
      name: body.name,
      created_at: at,
      data_key: await keyring.newTenantKey(id),
    }
    await store.write({ ops: [{ op: 'tenant.put', tenant }] })
    return publicTenant(tenant)
  }
  const createApplication = async (input: Parameters<Admin['createApplication']>[0], at: string) => {
    const { tenantId, key: given, ...body } = input
    if (typeof tenantId !== 'string' || !(await store.getTenant(tenantId))) throw notFound('tenant')
    if (given !== undefined && (typeof given !== 'string' || !GIVEN_KEY.test(given))) {
      throw invalid('key', 'must be key_ followed by 24 or more of A-Z a-z 0-9 _ -')
    }
    const { application, key } = newApplication(tenantId, body, at, undefined, given)
    // A given key must be new: the key index is unique, so a second application can't take it.
    if (given !== undefined && (await store.findKey(sha256(given)))) {
      throw conflict('an application or session already has this key')
    }
    await store.write({ ops: [{ op: 'application.put', application }] })
    return { application: shownApplication(application), key }
  }

  const admin: Admin = {
    createTenant: (input) =>
      adminCall(
        'tenant.create',
        (t) => t?.id ?? null,
        (at) => createTenant(input, at),
      ),
    createApplication: (input) =>
      adminCall(
        'application.create',
        () => (typeof input.tenantId === 'string' ? input.tenantId : null),
        (at) => createApplication(input, at),
      ),
    sweep: () => {
      // Callback retries that are due go out in the background.
      void callbacks.retryDue()
      return sweepExpired(store, now(), {
        transactionTtlMs: resolved.transactionTtlMs,
        refingerprint: (token) =>
          refingerprinted(token, (purpose, value) => keyring.hmac(token.tenant_id, purpose, value)),
      })
    },
    async verifyMasterKey() {
      for (const tenant of await store.listTenants()) {
        if (tenant.data_key) await keyring.unwrap(tenant.id, tenant.data_key)
      }
    },
    async rotateMasterKey(next) {
      const provider = toProvider(next)
      keys.unshift(provider)
      let rotated = 0
      for (const tenant of await store.listTenants()) {
        if (!tenant.data_key || tenant.data_key.key_id === provider.keyId) continue
        const dataKey = await keyring.unwrap(tenant.id, tenant.data_key)
        await store.write({
          ops: [
            { op: 'tenant.put', tenant: { ...tenant, data_key: await keyring.wrap(tenant.id, dataKey) } },
          ],
        })
        rotated++
      }
      return { tenants: rotated, keyId: provider.keyId }
    },
    ...officialFormulaAdmin({ store, runner, now }),
    view: adminView(store, now, journal),
    loadFixture: (fixture) =>
      loadFixture(
        {
          createTenant: (input, id) =>
            adminCall(
              'tenant.create',
              (t) => t?.id ?? null,
              async (at) => {
                if (id !== undefined && (await store.getTenant(id))) throw conflict(`tenant ${id} exists`)
                return createTenant(input, at, id)
              },
            ),
          createApplication: (input) => unchecked(admin).createApplication(input),
          deleteTenants: (ids) => deleteTenants(store, ids),
          operate: (tenantId) => {
            const as = (type: 'private' | 'management') =>
              contextFor(
                {
                  tenantId,
                  id: 'fixture',
                  kind: 'application',
                  type,
                  permissions: PERMISSIONS_BY_TYPE[type],
                },
                undefined,
              )
            // Each write of a fixture is journaled as the host's (actor admin), as any admin call is.
            const journaled = <T extends Methods>(methods: T, names: OperationNames<T>): T => {
              const out: Methods = {}
              for (const [name, operation] of Object.entries(names) as [keyof T & string, string][]) {
                out[name] = (...args: unknown[]) =>
                  adminCall(
                    operation,
                    () => tenantId,
                    async () => methods[name]!(...args),
                  )
              }
              return out as T
            }
            return unchecked({
              tokens: journaled(tokenOperations(as('private')), OPERATIONS.tokens),
              children: journaled(childOperations(as('private')), OPERATIONS.children),
              formulas: journaled(formulaOperations(as('management')), OPERATIONS.reactorFormulas),
              reactors: journaled(reactorOperations(as('management')), OPERATIONS.reactors),
            })
          },
        },
        fixture,
      ),
  }

  const powers: TestPowers = {
    exportState: () => takeSnapshot(store, now()),
    async importState(value) {
      const snapshot = parseSnapshot(value)
      await restoreSnapshot(store, keyring, snapshot)
      if ('set' in clock && typeof clock.set === 'function') (clock as ManualClock).set(snapshot.clock)
    },
    clearState: () => clearState(store),
  }

  return {
    // Every token in the clear to any holder of the admin: only in test mode.
    admin: options.testMode === true ? { ...admin, ...powers } : admin,
    connect(apiKey, connectOptions = {}) {
      const keyHash = hashApiKey(apiKey)
      const { transactionId, idempotencyKey } = connectOptions
      const context: Connection = {
        // The key is checked at the same instant the call then runs at.
        ctx: async () => {
          const at = now()
          const principal = await authenticate(store, at, keyHash)
          refuseBadText(transactionId, 'transaction_id')
          refuseBadText(idempotencyKey, 'idempotency_key')
          return contextFor(principal, transactionId, at)
        },
        call: (ctx, request, run) =>
          idempotencyKey === undefined
            ? run()
            : idempotent(
                {
                  store,
                  now: ctx.now(),
                  leaseMs: resolved.idempotencyLeaseMs,
                  maxRecords: resolved.maxIdempotencyRecordsPerTenant,
                  hmac: (tenantId, purpose, value) => keyring.hmac(tenantId, purpose, value),
                },
                ctx.principal,
                idempotencyKey,
                [request, transactionId ?? null],
                run,
              ),
      }
      // Each group's methods are bound on first use: a request touches one group, not nine.
      const bind = <T extends Methods>(factory: (ctx: Ctx) => T, operations: OperationNames<T>) =>
        authenticated(factory, operations, context, record)
      let tokens: Client['tokens'] | undefined
      let transactions: Client['transactions'] | undefined
      let sessions: Client['sessions'] | undefined
      let applications: Client['applications'] | undefined
      let reactorFormulas: Client['reactorFormulas'] | undefined
      let reactors: Client['reactors'] | undefined
      let applicationKeys: Client['applicationKeys'] | undefined
      let tenants: Client['tenants'] | undefined
      let permissions: Client['permissions'] | undefined
      return {
        get tokens() {
          tokens ??= {
            ...bind(tokenOperations, OPERATIONS.tokens),
            children: bind(childOperations, OPERATIONS.children),
          }
          return tokens
        },
        get transactions() {
          transactions ??= bind(transactionOperations, OPERATIONS.transactions)
          return transactions
        },
        get sessions() {
          sessions ??= bind(sessionOperations, OPERATIONS.sessions)
          return sessions
        },
        get applications() {
          applications ??= bind(applicationOperations, OPERATIONS.applications)
          return applications
        },
        get reactorFormulas() {
          reactorFormulas ??= bind(formulaOperations, OPERATIONS.reactorFormulas)
          return reactorFormulas
        },
        get reactors() {
          reactors ??= bind(reactorOperations, OPERATIONS.reactors)
          return reactors
        },
        get applicationKeys() {
          applicationKeys ??= bind(applicationKeyOperations, OPERATIONS.applicationKeys)
          return applicationKeys
        },
        get tenants() {
          tenants ??= bind(tenantOperations, OPERATIONS.tenants)
          return tenants
        },
        get permissions() {
          permissions ??= bind(permissionOperations, OPERATIONS.permissions)
          return permissions
        },
      }
    },
    async tenantOf(apiKey) {
      try {
        return (await authenticate(store, now(), hashApiKey(apiKey))).tenantId
      } catch (error) {
        // A key refused before any call (the HTTP adapter's admission) is journaled as a call's would be.
        record('key.authenticate', undefined, [], undefined, error)
        throw error
      }
    },
    journal,
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
      await runner?.close()
      await store.close()
    },
  }
}

export type { ApplicationWithKey }

import {
  applicationKeyOperations,
  applicationOperations,
  authenticate,
  hashApiKey,
} from '../applications/index.js'
import { childOperations } from '../associations/index.js'
import { logOperations } from '../audit/index.js'
import type { Ctx, Principal } from '../call/index.js'
import { clientKeyOperations } from '../client-keys/index.js'
import { documentOperations } from '../documents/index.js'
import type { AccessDecision, CallRecorder } from '../kernel/index.js'
import { refuseBadText, ServiceError } from '../kernel/index.js'
import { proxiesOperations, proxyOperations } from '../proxy/index.js'
import { formulaOperations, reactorOperations } from '../reactors/index.js'
import { sessionOperations } from '../sessions/index.js'
import { tokenIntentOperations, tokenOperations } from '../tokens/index.js'
import { transactionOperations } from '../transactions/index.js'
import { webhookOperations } from '../webhooks/index.js'
import { logCall, writeCallEvents } from './audit-calls.js'
import type { CallInfo } from './effects.js'
import { applicationTemplateOperations, hostedTenantOperations, roleOperations } from './hosted.js'
import { type IdempotencyOutcome, idempotent } from './idempotency.js'
import { permissionOperations, tenantOperations } from './tenants.js'
import type { Methods, OperationNames, Recorder, Wiring } from './wiring.js'

/** The client of one API key: every operation of the HTTP API, as the key may perform it. */
export interface Client {
  tokens: ReturnType<typeof tokenOperations> & { children: ReturnType<typeof childOperations> }
  transactions: ReturnType<typeof transactionOperations>
  /** Token intents (`/token-intents`): data held for a day until it is made a token. */
  tokenIntents: ReturnType<typeof tokenIntentOperations>
  sessions: ReturnType<typeof sessionOperations>
  applications: ReturnType<typeof applicationOperations>
  reactorFormulas: ReturnType<typeof formulaOperations>
  reactors: ReturnType<typeof reactorOperations>
  /** Keys of an application (`/applications/{id}/keys`). */
  applicationKeys: ReturnType<typeof applicationKeyOperations>
  /** The caller's tenant (`/tenants/self`), and what a host-owned tenant answers of its writes and usage report. */
  tenants: ReturnType<typeof tenantOperations> & ReturnType<typeof hostedTenantOperations>
  /** The reference's application templates (`/application-templates`): none here. */
  applicationTemplates: ReturnType<typeof applicationTemplateOperations>
  /** The reference's tenant-member roles (`/roles`): none here. */
  roles: ReturnType<typeof roleOperations>
  /** The permission catalogue (`/permissions`). */
  permissions: ReturnType<typeof permissionOperations>
  /** Webhooks (`/webhooks`, `/webhooks/event-types`, `/ping`), as node-sdk 5's `client.webhooks`. */
  webhooks: ReturnType<typeof webhookOperations>
  /** The tenant's audit log (`/logs`, `/logs/entity-types`), with `log:read`. */
  logs: ReturnType<typeof logOperations>
  /** Client encryption keys (`/keys`): a public key for a browser's JWE, the private key kept sealed. */
  keys: ReturnType<typeof clientKeyOperations>
  /** Documents (`/documents`): files sealed in 64 KiB chunks, uploaded and downloaded as streams. */
  documents: ReturnType<typeof documentOperations>
  /** The proxy (`/proxy`): a request sent on with its detokenization expressions replaced. */
  proxy: ReturnType<typeof proxyOperations>
  /** Pre-configured proxies (`/proxies`). */
  proxies: ReturnType<typeof proxiesOperations>
  /**
   * This client for one call or request: the same key, with `call` over the client's own options
   * (a field given replaces the client's). The view's calls carry `call.requestId` into their
   * audit entries and tell `call.recorder` alone; the client and its other views are untouched, so
   * concurrent views of one client share nothing a call writes. Cheap (no key hashed, no method
   * table built before a group is used): the HTTP adapter keeps one client per key and takes a
   * view per request. A view's groups are getters of its class (`Object.keys` lists none); it is
   * not enumerable as the client of `connect` is. Not a method of the API: nothing is journaled.
   */
  withCall(call: CallOptions): Client
}

/** The areas of a client: everything but `withCall`. */
type Groups = Omit<Client, 'withCall'>

/**
 * What a client's calls carry beside the key: the transaction to enlist in, the idempotency key,
 * the request id, the recorder. Given to `connect` for every call of the client, or to
 * `withCall` for the calls of one view.
 */
export interface CallOptions {
  transactionId?: string
  idempotencyKey?: string
  /** The request id the HTTP adapter answers in `x-request-id`: the audit log's `request_id`. */
  requestId?: string
  /**
   * Told each access decision (its trace built when asked: `decision.trace()`) and each journal
   * entry of this client's calls (the HTTP adapter's request log in test mode). Without it, and
   * outside test mode, nothing is recorded.
   */
  recorder?: CallRecorder
  /**
   * Aborts when the caller is gone (the HTTP adapter gives its request's): a proxy call's request to
   * its destination is aborted then, and its place given back, rather than held until it answers.
   */
  signal?: AbortSignal
  /**
   * Told, when a call with `idempotencyKey` acted (its first request), whether its answer was kept
   * for replay (`replayable`): the HTTP adapter answers `Idempotency-Replayable: false` when not.
   */
  idempotencyOutcome?: IdempotencyOutcome
}

/** What `connect` takes beside the key (see `CallOptions`). */
export type ConnectOptions = CallOptions

/** How many access traces one call keeps (a list decides per token): the first ones and the last. */
const TRACES_PER_CALL = 20

/** How a client's calls run: each authenticates (`ctx`), then runs through `call`. */
interface Connection {
  /** The context of one call (`call`: its operation and tally): the key is checked on every call. */
  ctx(call: CallInfo): Promise<Ctx>
  /** Runs one call: `request` names it (operations, method, arguments), for idempotency. */
  call<T>(ctx: Ctx, request: unknown, run: () => Promise<T>): Promise<T>
  /** Tells the connection's recorder, if any, of the journal entry `seq` a call made. */
  journaled(seq: number, ctx: Ctx | undefined, operation: string): void
}

/**
 * The operation names of the client's methods, area by area (the journal's `operation`). Each
 * table is checked against its area's methods: a method missing from it, or a name that is no
 * method, fails to compile.
 */
export const OPERATIONS = {
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
    result: 'reactor.result',
  } satisfies OperationNames<ReturnType<typeof reactorOperations>>,
  applicationKeys: {
    create: 'application_key.create',
    list: 'application_key.list',
    get: 'application_key.get',
    delete: 'application_key.delete',
  } satisfies OperationNames<ReturnType<typeof applicationKeyOperations>>,
  tenants: { self: 'tenant.self' } satisfies OperationNames<ReturnType<typeof tenantOperations>>,
  hostedTenants: {
    update: 'tenant.update',
    delete: 'tenant.delete',
    usageReport: 'tenant.usage_report',
  } satisfies OperationNames<ReturnType<typeof hostedTenantOperations>>,
  applicationTemplates: {
    list: 'application_template.list',
    get: 'application_template.get',
  } satisfies OperationNames<ReturnType<typeof applicationTemplateOperations>>,
  roles: { list: 'role.list' } satisfies OperationNames<ReturnType<typeof roleOperations>>,
  permissions: { list: 'permission.list' } satisfies OperationNames<ReturnType<typeof permissionOperations>>,
  webhooks: {
    create: 'webhook.create',
    list: 'webhook.list',
    get: 'webhook.get',
    update: 'webhook.update',
    delete: 'webhook.delete',
    eventTypes: 'webhook.event_types',
    ping: 'webhook.ping',
  } satisfies OperationNames<ReturnType<typeof webhookOperations>>,
  logs: { list: 'log.list', entityTypes: 'log.entity_types' } satisfies OperationNames<
    ReturnType<typeof logOperations>
  >,
  keys: {
    create: 'key.create',
    list: 'key.list',
    get: 'key.get',
    delete: 'key.delete',
  } satisfies OperationNames<ReturnType<typeof clientKeyOperations>>,
  tokenIntents: {
    create: 'token_intent.create',
    get: 'token_intent.get',
    delete: 'token_intent.delete',
  } satisfies OperationNames<ReturnType<typeof tokenIntentOperations>>,
  documents: {
    upload: 'document.upload',
    get: 'document.get',
    data: 'document.data',
    delete: 'document.delete',
  } satisfies OperationNames<ReturnType<typeof documentOperations>>,
  proxy: { invoke: 'proxy.invoke' } satisfies OperationNames<ReturnType<typeof proxyOperations>>,
  proxies: {
    create: 'proxy.create',
    list: 'proxy.list',
    get: 'proxy.get',
    update: 'proxy.update',
    patch: 'proxy.patch',
    delete: 'proxy.delete',
  } satisfies OperationNames<ReturnType<typeof proxiesOperations>>,
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
  w: Wiring,
): T {
  const out: Methods = {}
  for (const [name, operation] of Object.entries(operations) as [keyof T & string, string][]) {
    out[name] = async (...args: unknown[]) => {
      let ctx: Ctx | undefined
      const call: CallInfo = { operation, tally: { entries: 0 } }
      // In flight until answered, its entry's commit included: background work waits meanwhile.
      w.calls.begin()
      try {
        const at = await connection.ctx(call)
        ctx = at
        // An id from the path reaches the store as it is: refused here alike for every store.
        for (const [i, arg] of args.entries())
          if (typeof arg === 'string') refuseBadText(arg, argumentField(operation, i))
        const run = () => factory(at)[name]!(...args)
        let result: unknown
        try {
          result = await connection.call(at, [operation, args], run)
        } catch (error) {
          await writeCallEvents(w, at, call, error ?? new Error('thrown'))?.catch(() => {})
          await logCall(w, at, call, args, undefined, error ?? new Error('thrown')).catch(() => {})
          throw error
        }
        // The answer leaves only once its events and its entry are committed (a failure answers instead).
        try {
          // Most calls make no event: then no promise either (`writeCallEvents` answers undefined).
          const events = writeCallEvents(w, at, call, null, result)
          if (events) await events
        } catch (error) {
          await logCall(w, at, call, args, undefined, error).catch(() => {})
          throw error
        }
        await logCall(w, at, call, args, result, null)
        connection.journaled(record(operation, ctx, args, result, null), ctx, operation)
        return result
      } catch (error) {
        connection.journaled(
          record(operation, ctx, args, undefined, error ?? new Error('thrown')),
          ctx,
          operation,
        )
        // Test mode: the thrown error explains the access decisions the call made.
        if (call.traces && w.testMode && error instanceof ServiceError)
          error.trace = call.traces.map((d) => d.trace())
        throw error
      } finally {
        w.calls.end()
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

/** The connection of one key: its calls authenticate at the instant they run, idempotent when asked. */
function connection(w: Wiring, keyHash: string | null, options: CallOptions): Connection {
  const { transactionId, idempotencyKey, requestId, recorder, signal, idempotencyOutcome } = options
  const explains = w.testMode || recorder !== undefined
  return {
    // The key is checked at the same instant the call then runs at.
    ctx: async (call) => {
      const at = w.now()
      const found = await authenticate(w.store, at, keyHash)
      const principal = explains ? explained(found, call, recorder) : found
      refuseBadText(transactionId, 'transaction_id')
      refuseBadText(idempotencyKey, 'idempotency_key')
      // The call's own record (its tally and request id are read again when it is logged).
      if (requestId !== undefined) call.requestId = requestId
      const ctx = w.contextFor(principal, transactionId, at, call)
      if (signal !== undefined) ctx.signal = signal
      return ctx
    },
    call: (ctx, request, run) =>
      idempotencyKey === undefined
        ? run()
        : idempotent(
            {
              store: w.store,
              now: ctx.now(),
              leaseMs: w.resolved.idempotencyLeaseMs,
              maxRecords: w.resolved.maxIdempotencyRecordsPerTenant,
              hmac: (tenantId, purpose, value) => w.keyring.hmac(tenantId, purpose, value),
            },
            ctx.principal,
            idempotencyKey,
            [request, transactionId ?? null],
            run,
            idempotencyOutcome,
          ),
    journaled: (seq, ctx, operation) => {
      if (recorder === undefined) return
      const principal = ctx?.principal
      recorder.journaled({
        seq,
        tenant_id: principal?.tenantId ?? null,
        actor_id: principal?.id ?? null,
        operation,
      })
    },
  }
}

/**
 * The principal of one call with a recorder keeping its decisions on `call` (and telling `recorder`).
 * Written out field by field: on Node 20 a spread followed by another field (`{ ...p, recorder }`)
 * leaves V8's fast copy and costs about 1.7 µs, a whole request log entry's work ten times over.
 */
function explained(principal: Principal, call: CallInfo, recorder: CallRecorder | undefined): Principal {
  const { tenantId, id, kind, type, permissions, rules, observed, expiresAt, keyHash } = principal
  const out: Principal = {
    tenantId,
    id,
    kind,
    type,
    permissions,
    rules,
    expiresAt,
    keyHash,
    recorder: new CallDecisions(call, recorder),
  }
  if (observed !== undefined) out.observed = observed
  return out
}

/** Keeps a call's access decisions on `call.traces` and tells them to the connection's recorder, if any. */
class CallDecisions implements CallRecorder {
  constructor(
    private readonly call: CallInfo,
    private readonly recorder: CallRecorder | undefined,
  ) {}

  decided(decision: AccessDecision): void {
    this.call.traces ??= []
    const traces = this.call.traces
    // The last decision is kept whatever came before: a refusal ends the call.
    if (traces.length < TRACES_PER_CALL) traces.push(decision)
    else traces[TRACES_PER_CALL - 1] = decision
    this.recorder?.decided(decision)
  }

  journaled(): void {}
}

/** How each area's methods are made: its factory bound to one connection (see `authenticated`). */
type Bind = <T extends Methods>(factory: (ctx: Ctx) => T, operations: OperationNames<T>) => T

/** Each area of a client, made from `bind` on first use: a request touches one area, not fifteen. */
const AREAS: { readonly [K in keyof Groups]: (bind: Bind) => Groups[K] } = {
  tokens: (bind) => ({
    ...bind(tokenOperations, OPERATIONS.tokens),
    children: bind(childOperations, OPERATIONS.children),
  }),
  transactions: (bind) => bind(transactionOperations, OPERATIONS.transactions),
  tokenIntents: (bind) => bind(tokenIntentOperations, OPERATIONS.tokenIntents),
  sessions: (bind) => bind(sessionOperations, OPERATIONS.sessions),
  applications: (bind) => bind(applicationOperations, OPERATIONS.applications),
  reactorFormulas: (bind) => bind(formulaOperations, OPERATIONS.reactorFormulas),
  reactors: (bind) => bind(reactorOperations, OPERATIONS.reactors),
  applicationKeys: (bind) => bind(applicationKeyOperations, OPERATIONS.applicationKeys),
  tenants: (bind) => ({
    ...bind(tenantOperations, OPERATIONS.tenants),
    ...bind(hostedTenantOperations, OPERATIONS.hostedTenants),
  }),
  applicationTemplates: (bind) => bind(applicationTemplateOperations, OPERATIONS.applicationTemplates),
  roles: (bind) => bind(roleOperations, OPERATIONS.roles),
  permissions: (bind) => bind(permissionOperations, OPERATIONS.permissions),
  webhooks: (bind) => bind(webhookOperations, OPERATIONS.webhooks),
  logs: (bind) => bind(logOperations, OPERATIONS.logs),
  keys: (bind) => bind(clientKeyOperations, OPERATIONS.keys),
  documents: (bind) => bind(documentOperations, OPERATIONS.documents),
  proxy: (bind) => bind(proxyOperations, OPERATIONS.proxy),
  proxies: (bind) => bind(proxiesOperations, OPERATIONS.proxies),
}

/**
 * A client of one key hash under one set of call options. A class, so that making one (a view
 * per request) builds nothing: its areas are getters of the prototype, each made on first use.
 */
class CallClient implements Client {
  readonly #w: Wiring
  readonly #keyHash: string | null
  readonly #options: CallOptions
  readonly #areas: Partial<Groups> = {}
  #bind: Bind | undefined

  constructor(w: Wiring, keyHash: string | null, options: CallOptions) {
    this.#w = w
    this.#keyHash = keyHash
    this.#options = options
  }

  /** The area `name`, made on first use with this client's connection. */
  area<K extends keyof Groups>(name: K): Groups[K] {
    const made = this.#areas[name]
    if (made !== undefined) return made
    if (this.#bind === undefined) {
      const w = this.#w
      const context = connection(w, this.#keyHash, this.#options)
      this.#bind = (factory, operations) => authenticated(factory, operations, context, w.record, w)
    }
    const area = AREAS[name](this.#bind)
    this.#areas[name] = area
    return area
  }

  withCall(call: CallOptions): Client {
    return new CallClient(this.#w, this.#keyHash, { ...this.#options, ...call })
  }

  get tokens() {
    return this.area('tokens')
  }
  get transactions() {
    return this.area('transactions')
  }
  get tokenIntents() {
    return this.area('tokenIntents')
  }
  get sessions() {
    return this.area('sessions')
  }
  get applications() {
    return this.area('applications')
  }
  get reactorFormulas() {
    return this.area('reactorFormulas')
  }
  get reactors() {
    return this.area('reactors')
  }
  get applicationKeys() {
    return this.area('applicationKeys')
  }
  get tenants() {
    return this.area('tenants')
  }
  get applicationTemplates() {
    return this.area('applicationTemplates')
  }
  get roles() {
    return this.area('roles')
  }
  get permissions() {
    return this.area('permissions')
  }
  get webhooks() {
    return this.area('webhooks')
  }
  get logs() {
    return this.area('logs')
  }
  get keys() {
    return this.area('keys')
  }
  get documents() {
    return this.area('documents')
  }
  get proxy() {
    return this.area('proxy')
  }
  get proxies() {
    return this.area('proxies')
  }
}

/**
 * The client of `apiKey` (see `Service.connect`): its areas are enumerable properties (a caller
 * may list its methods), `withCall` is not (it is no method of the API).
 */
export function connectClient(w: Wiring, apiKey: string, options: ConnectOptions = {}): Client {
  const c = new CallClient(w, hashApiKey(apiKey), options)
  const client: Groups = {
    get tokens() {
      return c.area('tokens')
    },
    get transactions() {
      return c.area('transactions')
    },
    get tokenIntents() {
      return c.area('tokenIntents')
    },
    get sessions() {
      return c.area('sessions')
    },
    get applications() {
      return c.area('applications')
    },
    get reactorFormulas() {
      return c.area('reactorFormulas')
    },
    get reactors() {
      return c.area('reactors')
    },
    get applicationKeys() {
      return c.area('applicationKeys')
    },
    get tenants() {
      return c.area('tenants')
    },
    get applicationTemplates() {
      return c.area('applicationTemplates')
    },
    get roles() {
      return c.area('roles')
    },
    get permissions() {
      return c.area('permissions')
    },
    get webhooks() {
      return c.area('webhooks')
    },
    get logs() {
      return c.area('logs')
    },
    get keys() {
      return c.area('keys')
    },
    get documents() {
      return c.area('documents')
    },
    get proxy() {
      return c.area('proxy')
    },
    get proxies() {
      return c.area('proxies')
    },
  }
  return Object.defineProperty(client, 'withCall', {
    value: (call: CallOptions) => c.withCall(call),
  }) as Client
}

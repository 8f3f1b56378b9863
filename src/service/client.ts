import {
  applicationKeyOperations,
  applicationOperations,
  authenticate,
  hashApiKey,
} from '../applications/index.js'
import { childOperations } from '../associations/index.js'
import { logOperations } from '../audit/index.js'
import type { Ctx, Principal } from '../call/index.js'
import type { CallRecorder } from '../kernel/index.js'
import { refuseBadText, ServiceError } from '../kernel/index.js'
import { proxiesOperations, proxyOperations } from '../proxy/index.js'
import { formulaOperations, reactorOperations } from '../reactors/index.js'
import { sessionOperations } from '../sessions/index.js'
import { tokenOperations } from '../tokens/index.js'
import { transactionOperations } from '../transactions/index.js'
import { webhookOperations } from '../webhooks/index.js'
import { logCall } from './audit-calls.js'
import type { CallInfo } from './effects.js'
import { applicationTemplateOperations, hostedTenantOperations, roleOperations } from './hosted.js'
import { idempotent } from './idempotency.js'
import { permissionOperations, tenantOperations } from './tenants.js'
import type { Methods, OperationNames, Recorder, Wiring } from './wiring.js'

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
  /** The proxy (`/proxy`): a request sent on with its detokenization expressions replaced. */
  proxy: ReturnType<typeof proxyOperations>
  /** Pre-configured proxies (`/proxies`). */
  proxies: ReturnType<typeof proxiesOperations>
}

/** What `connect` takes beside the key: the transaction to enlist in, the idempotency key. */
export interface ConnectOptions {
  transactionId?: string
  idempotencyKey?: string
  /** The request id the HTTP adapter answers in `x-request-id`: the audit log's `request_id`. */
  requestId?: string
  /**
   * Told each access decision's trace and each journal entry of this client's calls (the HTTP
   * adapter's request log in test mode). Without it, and outside test mode, nothing is traced.
   */
  recorder?: CallRecorder
}

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
          await logCall(w, at, call, args, undefined, error ?? new Error('thrown')).catch(() => {})
          throw error
        }
        // The answer leaves only once its entry is committed (a failed commit answers instead).
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
        if (call.traces && w.testMode && error instanceof ServiceError) error.trace = call.traces
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

/** The connection of one key: its calls authenticate at the instant they run, idempotent when asked. */
function connection(w: Wiring, apiKey: string, options: ConnectOptions): Connection {
  const keyHash = hashApiKey(apiKey)
  const { transactionId, idempotencyKey, requestId, recorder } = options
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
      return w.contextFor(principal, transactionId, at, call)
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

/** The principal of one call with a recorder keeping its traces on `call` (and telling `recorder`). */
function explained(principal: Principal, call: CallInfo, recorder: CallRecorder | undefined): Principal {
  const decided: CallRecorder['decided'] = (trace) => {
    call.traces ??= []
    const traces = call.traces
    // The last decision is kept whatever came before: a refusal ends the call.
    if (traces.length < TRACES_PER_CALL) traces.push(trace)
    else traces[TRACES_PER_CALL - 1] = trace
    recorder?.decided(trace)
  }
  return { ...principal, recorder: { decided, journaled: () => {} } }
}

/** The client of `apiKey` (see `Service.connect`). */
export function connectClient(w: Wiring, apiKey: string, options: ConnectOptions = {}): Client {
  const context = connection(w, apiKey, options)
  const bind = <T extends Methods>(factory: (ctx: Ctx) => T, operations: OperationNames<T>) =>
    authenticated(factory, operations, context, w.record, w)
  // Each group's methods are bound on first use: a request touches one group, not nine.
  const groups: Partial<Client> = {}
  return {
    get tokens() {
      groups.tokens ??= {
        ...bind(tokenOperations, OPERATIONS.tokens),
        children: bind(childOperations, OPERATIONS.children),
      }
      return groups.tokens
    },
    get transactions() {
      groups.transactions ??= bind(transactionOperations, OPERATIONS.transactions)
      return groups.transactions
    },
    get sessions() {
      groups.sessions ??= bind(sessionOperations, OPERATIONS.sessions)
      return groups.sessions
    },
    get applications() {
      groups.applications ??= bind(applicationOperations, OPERATIONS.applications)
      return groups.applications
    },
    get reactorFormulas() {
      groups.reactorFormulas ??= bind(formulaOperations, OPERATIONS.reactorFormulas)
      return groups.reactorFormulas
    },
    get reactors() {
      groups.reactors ??= bind(reactorOperations, OPERATIONS.reactors)
      return groups.reactors
    },
    get applicationKeys() {
      groups.applicationKeys ??= bind(applicationKeyOperations, OPERATIONS.applicationKeys)
      return groups.applicationKeys
    },
    get tenants() {
      groups.tenants ??= {
        ...bind(tenantOperations, OPERATIONS.tenants),
        ...bind(hostedTenantOperations, OPERATIONS.hostedTenants),
      }
      return groups.tenants
    },
    get applicationTemplates() {
      groups.applicationTemplates ??= bind(applicationTemplateOperations, OPERATIONS.applicationTemplates)
      return groups.applicationTemplates
    },
    get roles() {
      groups.roles ??= bind(roleOperations, OPERATIONS.roles)
      return groups.roles
    },
    get permissions() {
      groups.permissions ??= bind(permissionOperations, OPERATIONS.permissions)
      return groups.permissions
    },
    get webhooks() {
      groups.webhooks ??= bind(webhookOperations, OPERATIONS.webhooks)
      return groups.webhooks
    },
    get logs() {
      groups.logs ??= bind(logOperations, OPERATIONS.logs)
      return groups.logs
    },
    get proxy() {
      groups.proxy ??= bind(proxyOperations, OPERATIONS.proxy)
      return groups.proxy
    },
    get proxies() {
      groups.proxies ??= bind(proxiesOperations, OPERATIONS.proxies)
      return groups.proxies
    },
  }
}

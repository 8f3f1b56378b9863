import type { Principal } from './access.js'
import { type ApplicationWithKey, applicationOperations, newApplication } from './applications.js'
import { authenticate, hashApiKey } from './auth.js'
import { childOperations } from './children.js'
import type { Ctx, ResolvedOptions, ServiceOptions } from './context.js'
import { newId } from './crypto.js'
import { notFound } from './errors.js'
import { formulaOperations, type OfficialFormulaAdmin, officialFormulaAdmin } from './formulas.js'
import { reactorOperations } from './reactors.js'
import { type FormulaRunner, lazyRunner } from './runner.js'
import { createTenantInput } from './schemas/application.js'
import { sessionOperations } from './sessions.js'
import { sweepExpired } from './sweep.js'
import { tokenOperations } from './tokens.js'
import { transactionOperations } from './transactions.js'
import type { Application, Tenant } from './types.js'
import { parse } from './validate.js'

/**
 * The default formula runner, `sandboxRunner()` of `tokenvault/adapters/sandbox`, imported on first
 * use. The one place the core names an adapter: the sandbox is the runtime the core's formula rules
 * need by default, and importing it lazily keeps the core free of `node:worker_threads` and of the
 * WebAssembly engine until a formula is created or run (`runner: null` never loads it).
 */
function defaultRunner(): FormulaRunner {
  return lazyRunner(async () => (await import('../adapters/sandbox/index.js')).sandboxRunner())
}

// biome-ignore lint/suspicious/noExplicitAny: method tables of any shape
type Methods = Record<string, (...args: any[]) => Promise<unknown>>

/**
 * Turns an operations factory into methods that first authenticate the key (on every call), so a
 * deleted application or an expired session stops working at once.
 */
function authenticated<T extends Methods>(factory: (ctx: Ctx) => T, context: () => Promise<Ctx>): T {
  const names = Object.keys(factory(undefined as unknown as Ctx))
  const out: Methods = {}
  for (const name of names) {
    out[name] = async (...args: unknown[]) => (factory(await context()) as Methods)[name]!(...args)
  }
  return out as T
}

/** The client of one API key: every operation of the HTTP API, as the key may perform it. */
export interface Client {
  tokens: ReturnType<typeof tokenOperations> & { children: ReturnType<typeof childOperations> }
  transactions: ReturnType<typeof transactionOperations>
  sessions: ReturnType<typeof sessionOperations>
  applications: ReturnType<typeof applicationOperations>
  reactorFormulas: ReturnType<typeof formulaOperations>
  reactors: ReturnType<typeof reactorOperations>
}

/** The host's trusted operator API: no key, every tenant. Official formulas: see `OfficialFormulaAdmin`. */
export interface Admin extends OfficialFormulaAdmin {
  /** Creates a tenant. */
  createTenant(input: { name: string }): Promise<Tenant>
  /** Creates an application in a tenant; `key` is the plaintext key, shown only here. */
  createApplication(
    input: { tenantId: string } & Record<string, unknown>,
  ): Promise<{ application: Application; key: string }>
  /** Deletes expired sessions and expires open transactions past `expires_at`. */
  sweep(): Promise<{ sessions: number; transactions: number }>
}

/** A running service over one store. */
export interface Service {
  admin: Admin
  /** A client acting as `apiKey`, enlisted in `transactionId` when given. The key is checked on every call. */
  connect(apiKey: string, options?: { transactionId?: string }): Client
  /** Closes the formula runner, if any, then the store. */
  close(): Promise<void>
}

/** Creates the service: every domain rule, over `store`, with time from `clock`. */
export function createService(options: ServiceOptions): Service {
  const { store, clock } = options
  const resolved: ResolvedOptions = {
    sessionTtlMs: options.sessionTtlMs ?? 3 * 60_000,
    transactionTtlMs: options.transactionTtlMs ?? 60 * 60_000,
    reactorTimeoutMs: options.reactorTimeoutMs ?? 10_000,
  }
  const runner = options.runner === null ? undefined : (options.runner ?? defaultRunner())
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
  const contextFor = (principal: Principal, transactionId: string | undefined): Ctx => {
    let instant: string | undefined
    return {
      store,
      clock,
      options: resolved,
      runner,
      principal,
      transactionId,
      now: () => {
        instant ??= now()
        return instant
      },
    }
  }

  const admin: Admin = {
    async createTenant(input) {
      const body = parse(createTenantInput, input)
      const tenant: Tenant = { id: newId(), name: body.name, created_at: now() }
      await store.write({ ops: [{ op: 'tenant.put', tenant }] })
      return tenant
    },
    async createApplication(input) {
      const { tenantId, ...body } = input
      if (typeof tenantId !== 'string' || !(await store.getTenant(tenantId))) throw notFound('tenant')
      const { application, key } = newApplication(tenantId, body, now())
      await store.write({ ops: [{ op: 'application.put', application }] })
      const { key_hash: _hash, ...shown } = application
      return { application: shown, key }
    },
    sweep: () => sweepExpired(store, now()),
    ...officialFormulaAdmin({ store, runner, now }),
  }

  return {
    admin,
    connect(apiKey, connectOptions = {}) {
      const keyHash = hashApiKey(apiKey)
      const context = async () =>
        contextFor(await authenticate(store, clock, keyHash), connectOptions.transactionId)
      return {
        tokens: {
          ...authenticated(tokenOperations, context),
          children: authenticated(childOperations, context),
        },
        transactions: authenticated(transactionOperations, context),
        sessions: authenticated(sessionOperations, context),
        applications: authenticated(applicationOperations, context),
        reactorFormulas: authenticated(formulaOperations, context),
        reactors: authenticated(reactorOperations, context),
      }
    },
    async close() {
      await runner?.close()
      await store.close()
    },
  }
}

export type { ApplicationWithKey }

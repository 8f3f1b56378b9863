import { randomBytes } from 'node:crypto'
import type { Principal } from './access.js'
import { applicationKeyOperations } from './application-keys.js'
import {
  type ApplicationWithKey,
  applicationOperations,
  newApplication,
  shownApplication,
} from './applications.js'
import { authenticate, hashApiKey } from './auth.js'
import { childOperations } from './children.js'
import type { Ctx, ResolvedOptions, ServiceOptions } from './context.js'
import { newId, sha256 } from './crypto.js'
import { type KeyProvider, type MasterKey, toProvider } from './encryption/keyring.js'
import { Keyring, publicTenant, sealedStore } from './encryption/sealed-store.js'
import { conflict, invalid, notFound } from './errors.js'
import { formulaOperations, type OfficialFormulaAdmin, officialFormulaAdmin } from './formulas.js'
import { reactorOperations } from './reactors.js'
import { type FormulaRunner, lazyRunner } from './runner.js'
import { createTenantInput } from './schemas/application.js'
import { sessionOperations } from './sessions.js'
import { type SweepCounts, sweepExpired } from './sweep.js'
import { permissionOperations, tenantOperations } from './tenants.js'
import { tokenOperations } from './tokens.js'
import { transactionOperations } from './transactions.js'
import type { Application, Tenant } from './types.js'
import { parse } from './validate.js'

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
  createTenant(input: { name: string }): Promise<Tenant>
  /**
   * Creates an application in a tenant; `key` in the answer is the plaintext key, shown only here.
   * The input may give the key itself (`key`: `key_` and 24 or more of A-Z a-z 0-9 _ -) so a CI
   * setup or a fixture can hard-code it; a key already in use is a conflict.
   */
  createApplication(
    input: { tenantId: string } & Record<string, unknown>,
  ): Promise<{ application: Application; key: string }>
  /**
   * Forgets what has expired: deletes expired sessions, expires open transactions past
   * `expires_at`, deletes expired tokens with their associations, and deletes transactions 24 hours
   * after they ended (until then commit/rollback answer 409, after it 404). The CLI runs it every 30 s.
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
}

/** A running service over one store. */
export interface Service {
  admin: Admin
  /** A client acting as `apiKey`, enlisted in `transactionId` when given. The key is checked on every call. */
  connect(apiKey: string, options?: { transactionId?: string }): Client
  /** Whether the store answers (readiness): false while its disk or database can't be reached. */
  ready(): Promise<boolean>
  /** Closes the formula runner, if any, then the store. */
  close(): Promise<void>
}

/** Creates the service: every domain rule, over `store`, with time from `clock`. */
export function createService(options: ServiceOptions): Service {
  const { clock } = options
  const keys = masterKeys(options)
  const keyring = new Keyring(options.store, keys)
  const store = sealedStore(options.store, keyring)
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
      const id = newId()
      const tenant: Tenant = {
        id,
        name: body.name,
        created_at: now(),
        data_key: await keyring.newTenantKey(id),
      }
      await store.write({ ops: [{ op: 'tenant.put', tenant }] })
      return publicTenant(tenant)
    },
    async createApplication(input) {
      const { tenantId, key: given, ...body } = input
      if (typeof tenantId !== 'string' || !(await store.getTenant(tenantId))) throw notFound('tenant')
      if (given !== undefined && (typeof given !== 'string' || !GIVEN_KEY.test(given))) {
        throw invalid('key', 'must be key_ followed by 24 or more of A-Z a-z 0-9 _ -')
      }
      const { application, key } = newApplication(tenantId, body, now(), undefined, given)
      // A given key must be new: the key index is unique, so a second application can't take it.
      if (given !== undefined && (await store.findKey(sha256(given)))) {
        throw conflict('an application or session already has this key')
      }
      await store.write({ ops: [{ op: 'application.put', application }] })
      return { application: shownApplication(application), key }
    },
    sweep: () => sweepExpired(store, now(), { transactionTtlMs: resolved.transactionTtlMs }),
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
        applicationKeys: authenticated(applicationKeyOperations, context),
        tenants: authenticated(tenantOperations, context),
        permissions: authenticated(permissionOperations, context),
      }
    },
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

import type { Principal } from '../applications/index.js'
import {
  createTenantInput,
  newApplication,
  PERMISSIONS_BY_TYPE,
  shownApplication,
} from '../applications/index.js'
import { childOperations } from '../associations/index.js'
import { publicTenant } from '../encryption/index.js'
import type { Application, ManualClock, Tenant } from '../kernel/index.js'
import { conflict, invalid, newId, notFound, parse, sha256 } from '../kernel/index.js'
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
  formulaOperations,
  type OfficialFormulaAdmin,
  officialFormulaAdmin,
  parseEgressOrigins,
  reactorOperations,
} from '../reactors/index.js'
import { refingerprinted, tokenOperations } from '../tokens/index.js'
import { type WebhookAdmin, webhookAdmin } from '../webhooks/index.js'
import { type KeyAdmin, keyAdmin } from './admin-keys.js'
import { type LogAdmin, logAdmin, logTenantCreated } from './admin-logs.js'
import { type AdminView, adminView } from './admin-view.js'
import { OPERATIONS } from './client.js'
import { type Fixture, type FixtureDeps, loadFixture } from './fixtures.js'
import type { AdminCreateApplicationInput, CreateTenantInput } from './inputs.js'
import { unchecked } from './unchecked.js'
import type { Methods, OperationNames, Wiring } from './wiring.js'

/** A key the host chooses for an application (`admin.createApplication({ key })`). */
const GIVEN_KEY = /^key_[A-Za-z0-9_-]{24,}$/

/** The host's trusted operator API: no key, every tenant. Official formulas: see `OfficialFormulaAdmin`. */
export interface Admin extends OfficialFormulaAdmin, KeyAdmin, LogAdmin {
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
   * after they ended (until then commit/rollback answer 409, after it 404). Also starts, in the
   * background, a pass over the outbox entries that are due (webhook deliveries, react callbacks,
   * accepted asynchronous reacts). The CLI runs it every 30 s.
   */
  sweep(): Promise<SweepCounts>
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
  /**
   * Webhook deliveries and callbacks: the signing public key, deliver what is due, a tenant's
   * deliveries with each attempt, deliver now (past the back-off), deliver again (see `WebhookAdmin`).
   */
  webhooks: WebhookAdmin
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
  /**
   * Sets the origins the test destinations add to the egress allow-list, replacing the last set
   * (the `egress` option's origins stay listed): how the CLI's `POST /_test/proxy/destinations`
   * lets a destination registered at run time be reached, and how removing it takes it off the
   * list again. A bad origin throws a `TypeError` and changes nothing.
   */
  allowTestEgress(origins: readonly string[]): void
}

/** The admin of a service in test mode: the operator API and the test powers. */
export interface TestAdmin extends Admin, TestPowers {}

/** Creates tenant `id` at `at`, with a new data key wrapped by the current master key. */
async function createTenant(w: Wiring, input: CreateTenantInput, at: string, id = newId()): Promise<Tenant> {
  const body = parse(createTenantInput, input)
  const tenant: Tenant = {
    id,
    name: body.name,
    created_at: at,
    ...(await w.keyring.newTenantKeys(id, at)),
  }
  await w.store.write({ ops: [{ op: 'tenant.put', tenant }] })
  await logTenantCreated(w, id, at)
  return publicTenant(tenant)
}

/** Creates an application in an existing tenant, with a new key or the one given (which must be unused). */
async function createApplication(w: Wiring, input: AdminCreateApplicationInput, at: string) {
  const { tenantId, key: given, ...body } = input
  if (typeof tenantId !== 'string' || !(await w.store.getTenant(tenantId))) throw notFound('tenant')
  if (given !== undefined && (typeof given !== 'string' || !GIVEN_KEY.test(given))) {
    throw invalid('key', 'must be key_ followed by 24 or more of A-Z a-z 0-9 _ -')
  }
  const { application, key } = newApplication(tenantId, body, at, undefined, given)
  // A given key must be new: the key index is unique, so a second application can't take it.
  if (given !== undefined && (await w.store.findKey(sha256(given)))) {
    throw conflict('an application or session already has this key')
  }
  await w.store.write({ ops: [{ op: 'application.put', application }] })
  return { application: shownApplication(application), key }
}

/** The operations a fixture writes a tenant's records with, each journaled as the host's. */
function fixtureOperations(w: Wiring, tenantId: string) {
  const as = (type: 'private' | 'management') => {
    const principal: Principal = {
      tenantId,
      id: 'fixture',
      kind: 'application',
      type,
      permissions: PERMISSIONS_BY_TYPE[type],
    }
    return w.contextFor(principal, undefined)
  }
  // Each write of a fixture is journaled as the host's (actor admin), as any admin call is.
  const journaled = <T extends Methods>(methods: T, names: OperationNames<T>): T => {
    const out: Methods = {}
    for (const [name, operation] of Object.entries(names) as [keyof T & string, string][]) {
      out[name] = (...args: unknown[]) =>
        w.adminCall(
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
}

/** What `loadFixture` writes through: tenants with fixed ids, the admin's applications, the operations. */
function fixtureDeps(w: Wiring, admin: Admin): FixtureDeps {
  return {
    createTenant: (input, id) =>
      w.adminCall(
        'tenant.create',
        (t) => t?.id ?? null,
        async (at) => {
          if (id !== undefined && (await w.store.getTenant(id))) throw conflict(`tenant ${id} exists`)
          return createTenant(w, input, at, id)
        },
      ),
    createApplication: (input) => unchecked(admin).createApplication(input),
    deleteTenants: (ids) => deleteTenants(w.store, ids),
    operate: (tenantId) => fixtureOperations(w, tenantId),
  }
}

/** The host's operator API over the wired service. */
export function createAdmin(w: Wiring): Admin {
  const admin: Admin = {
    createTenant: (input) =>
      w.adminCall(
        'tenant.create',
        (t) => t?.id ?? null,
        (at) => createTenant({ ...w, store: w.adminStore('tenant.create', at) }, input, at),
      ),
    createApplication: (input) =>
      w.adminCall(
        'application.create',
        () => (typeof input.tenantId === 'string' ? input.tenantId : null),
        (at) => createApplication({ ...w, store: w.adminStore('application.create', at) }, input, at),
      ),
    sweep: async () => {
      // Due outbox entries (webhook deliveries, callbacks, accepted reacts) go out in the background.
      w.webhooks.dispatcher.kick()
      await admin.webhooks.purgeFinished().catch(() => 0)
      const now = w.now()
      const counts = await sweepExpired(w.adminStore('admin.sweep', now, 'system'), now, {
        transactionTtlMs: w.resolved.transactionTtlMs,
        refingerprint: (token) =>
          refingerprinted(token, (purpose, value) => w.keyring.hmac(token.tenant_id, purpose, value)),
      })
      await admin.sweepLogs()
      return counts
    },
    ...keyAdmin(w),
    ...logAdmin(w),
    ...officialFormulaAdmin({ store: w.store, runner: w.runner, now: w.now }),
    view: adminView(w.store, w.now, w.journal),
    webhooks: webhookAdmin({
      store: w.store,
      dispatcher: w.webhooks.dispatcher,
      signer: w.webhooks.signer,
      now: w.now,
    }),
    loadFixture: (fixture) => loadFixture(fixtureDeps(w, admin), fixture),
  }
  return admin
}

/** The test powers (see `TestPowers`): only a service in test mode gives them. */
export function testPowers(w: Wiring): TestPowers {
  // The allow-list the service was made with: test destinations are added to it, never replace it.
  const given = w.resolved.reactorEgress
  return {
    exportState: () => takeSnapshot(w.store, w.now()),
    async importState(value) {
      const snapshot = parseSnapshot(value)
      await restoreSnapshot(w.store, w.keyring, snapshot)
      // Tenants restored under ids this process held keys for have new keys now.
      w.keyring.forget()
      const clock = w.clock
      if ('set' in clock && typeof clock.set === 'function') (clock as ManualClock).set(snapshot.clock)
    },
    clearState: async () => {
      await clearState(w.store)
      w.keyring.forget()
    },
    allowTestEgress(origins) {
      // Every operation reads the list from the resolved options when it sends, so this is enough.
      w.resolved.reactorEgress = parseEgressOrigins([...given, ...origins])
    },
  }
}

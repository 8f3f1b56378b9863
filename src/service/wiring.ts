import { randomBytes } from 'node:crypto'
import type { Principal } from '../applications/index.js'
import {
  AUDIT_PURPOSE,
  AuditLog,
  type AuditMac,
  DEFAULT_LOG_RETENTION_DAYS,
  DEFAULT_MAX_LOG_ENTRIES_PER_TENANT,
} from '../audit/index.js'
import type { CallbackPort, Ctx, ResolvedOptions } from '../call/index.js'
import {
  type KeyProvider,
  Keyring,
  keyedHash,
  type MasterKey,
  sealedStore,
  type TenantKey,
  toProvider,
} from '../encryption/index.js'
import type {
  AccessUse,
  Clock,
  EgressClient,
  FormulaRunner,
  Observed,
  ObservedCall,
  Observer,
  Pacer,
} from '../kernel/index.js'
import {
  backgroundTurn,
  CallsInFlight,
  expressionBudget,
  pacedTurn,
  TenantGate,
  withEgress,
} from '../kernel/index.js'
import { DEFAULT_PROXY_CALLS_PER_TENANT, DEFAULT_PROXY_TIMEOUT_MS } from '../proxy/index.js'
import { acceptedOf, parseEgressOrigins, runAccepted } from '../reactors/index.js'
import { SEARCH_INDEX_PURPOSE } from '../search/index.js'
import { DEFAULT_UNAUTHORIZED_SESSIONS_PER_TENANT } from '../sessions/index.js'
import type { WriteEffectHook } from '../store/index.js'
import { measuredStore, type Store } from '../store/index.js'
import { withoutExpiredCvc } from '../tokens/index.js'
import { DEFAULT_STAGED_CHARS_PER_TENANT } from '../transactions/index.js'
import {
  DEFAULT_PENDING_DELIVERIES_PER_TENANT,
  DELIVERY_SHARE,
  isTestSigningKey,
  TEST_WEBHOOK_PRIVATE_KEY,
  type WebhookRuntime,
  webhookRuntime,
} from '../webhooks/index.js'
import { adminContext, type CallInfo, callContext, storeWithEffects } from './effects.js'
import { DEFAULT_IDEMPOTENCY_RECORDS_PER_TENANT } from './idempotency.js'
import {
  DEFAULT_JOURNAL_SIZE,
  DEFAULT_JOURNAL_SIZE_PER_TENANT,
  failureCode,
  failureOutcome,
  Journal,
  touchedIds,
} from './journal.js'
import type { ServiceOptions } from './options.js'

/**
 * What the composition root wires in where the options leave a part out: the package's main entry
 * (`entry/index.ts`) gives the sandbox runner of `adapters/sandbox`, so the core names no adapter.
 */
export interface ServiceDefaults {
  /** The formula runner when `options.runner` is absent (`null` turns formulas off instead). */
  runner(): FormulaRunner
  /** The egress client (formula `fetch`, react callbacks) when `options.egressClient` is absent. */
  egress(): EgressClient
  /** Monotonic time and pauses for paced background work when `options.pacer` is absent. */
  pacer(): Pacer
}

// biome-ignore lint/suspicious/noExplicitAny: method tables of any shape
export type Methods = Record<string, (...args: any[]) => Promise<unknown>>

/** How the methods of an area are journaled: method name → operation name. Every method, nothing else. */
export type OperationNames<T> = { readonly [K in keyof T]-?: `${string}.${string}` }

/** Records one call in the journal: the operation, the caller (when the key authenticated), the outcome. */
export type Recorder = (
  operation: string,
  ctx: Ctx | undefined,
  args: unknown[],
  result: unknown,
  error: unknown,
) => number

/** Runs and journals an admin call (actor `admin`, the tenant it acted in) at one instant read once. */
export type AdminCall = <R>(
  operation: string,
  tenantOf: (r: R | undefined) => string | null,
  run: (at: string) => Promise<R>,
) => Promise<R>

/** The parts of one service that its client, its admin and its test powers share. */
export interface Wiring {
  clock: Clock
  /** The master keys, newest first (`rotateMasterKey` puts a new one in front). */
  keys: KeyProvider[]
  keyring: Keyring
  /** The sealed, measured store every operation goes through. */
  store: Store
  resolved: ResolvedOptions
  runner: FormulaRunner | undefined
  journal: Journal
  /** The clock's time as an ISO string. */
  now(): string
  /**
   * The effects every write of a call goes through (audit entries, outbox events), in order: each
   * call's `ctx.store` and the admin's writes apply them (see src/kernel/write-effects.ts). A
   * feature adds its effect here, in `wire`.
   */
  effects: WriteEffectHook[]
  /** Webhook deliveries and the outbox: signer, dispatcher, write effect (src/webhooks). */
  webhooks: WebhookRuntime
  /** The audit log (absent with `auditLog: false`): its write effect is in `effects`. */
  audit: AuditLog | undefined
  /** How long audit log entries are kept (ms). */
  logRetentionMs: number
  /** Most audit log entries a tenant keeps after a sweep (`maxLogEntriesPerTenant`). */
  maxLogEntries: number
  /**
   * The store an admin or sweep call writes through: `store` with `effects`, its writes logged
   * under the actor `admin` (or `system` for the sweep) as `operation` at `at`.
   */
  adminStore(operation: string, at: string, actorType?: 'admin' | 'system'): Store
  /**
   * One call's context: it reads the clock once (or takes `at`), so the whole call sees one instant.
   * With `call` (its operation and request id), its store's writes go through `effects`.
   */
  contextFor(principal: Principal, transactionId: string | undefined, at?: string, call?: CallInfo): Ctx
  record: Recorder
  adminCall: AdminCall
  /** Whether the service runs in test mode: its calls' access decisions are traced (`AccessTrace`). */
  testMode: boolean
  /**
   * The client calls in flight (begun, not yet answered): background work, the re-encryption
   * sweep, waits for none to be before each step (`backgroundTurn`), a bounded number of turns.
   */
  calls: CallsInFlight
  /** Time and pauses of background work kept to a share of the time (see `ServiceOptions.pacer`). */
  pacer: Pacer
}

/** A bound given as an option: a whole number of at least 1, or `fallback` when absent. */
export const atLeastOne = (given: number | undefined, fallback: number) =>
  given === undefined ? fallback : Math.max(1, Math.floor(given))

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
 * The key webhook deliveries are signed with: the one given; in test mode, the published test key;
 * else none (the signer makes one for itself). The published test key is refused with a persistent
 * store outside test mode: deliveries that outlive the process, signed with a key anyone has.
 */
function signingKeyOf(options: ServiceOptions): string | undefined {
  const given = options.webhookSigningKey
  if (given !== undefined && !options.testMode && options.store.persistent && isTestSigningKey(given)) {
    throw new Error(
      'createService: `webhookSigningKey` is the published test key: a receiver would accept deliveries anyone signs. Give a key of your own, or `testMode`',
    )
  }
  return given ?? (options.testMode ? TEST_WEBHOOK_PRIVATE_KEY : undefined)
}

/** The options the operations read, defaults filled in. */
function resolveOptions(options: ServiceOptions): ResolvedOptions {
  return {
    sessionTtlMs: options.sessionTtlMs ?? 3 * 60_000,
    transactionTtlMs: options.transactionTtlMs ?? 60 * 60_000,
    reactorTimeoutMs: options.reactorTimeoutMs ?? 10_000,
    idempotencyLeaseMs: options.idempotencyLeaseMs ?? 60_000,
    // `egress` is the option's name; `reactorEgress` stays as its alias (both lists are allowed).
    reactorEgress: parseEgressOrigins([...(options.egress ?? []), ...(options.reactorEgress ?? [])]),
    proxyTimeoutMs: atLeastOne(options.proxyTimeoutMs, DEFAULT_PROXY_TIMEOUT_MS),
    maxIdempotencyRecordsPerTenant: atLeastOne(
      options.maxIdempotencyRecordsPerTenant,
      DEFAULT_IDEMPOTENCY_RECORDS_PER_TENANT,
    ),
    maxUnauthorizedSessionsPerTenant: atLeastOne(
      options.maxUnauthorizedSessionsPerTenant,
      DEFAULT_UNAUTHORIZED_SESSIONS_PER_TENANT,
    ),
    maxPendingDeliveriesPerTenant: atLeastOne(
      options.maxPendingDeliveriesPerTenant,
      DEFAULT_PENDING_DELIVERIES_PER_TENANT,
    ),
    maxStagedCharsPerTenant: atLeastOne(options.maxStagedCharsPerTenant, DEFAULT_STAGED_CHARS_PER_TENANT),
  }
}

/** The clock's time as an ISO string, formatted once per distinct millisecond. */
function isoNow(clock: Clock): () => string {
  let lastMs = Number.NaN
  let lastIso = ''
  return () => {
    const date = clock.now()
    const ms = date.getTime()
    if (ms !== lastMs) {
      lastMs = ms
      lastIso = date.toISOString()
    }
    return lastIso
  }
}

/** The journal's recorder of client calls: the caller's tenant and kind, or the `unknown` actor. */
function recorder(journal: Journal, now: () => string): Recorder {
  return (operation, ctx, args, result, error) => {
    const principal = ctx?.principal
    return journal.add(
      ctx ? ctx.now() : now(),
      principal?.tenantId ?? null,
      principal ? { kind: principal.kind, id: principal.id } : { kind: 'unknown' },
      operation,
      error === null ? null : failureCode(error),
      touchedIds(args, error === null ? result : undefined),
    )
  }
}

/** Runs admin calls, journaling each under the actor `admin`, its outcome and the ids it touched. */
function adminCaller(journal: Journal, now: () => string): AdminCall {
  return async (operation, tenantOf, run) => {
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
}

/** The journal of a service, sized by its options. */
function journalOf(options: ServiceOptions): Journal {
  const size = options.journalSize ?? DEFAULT_JOURNAL_SIZE
  return new Journal(size, options.journalSizePerTenant ?? Math.min(DEFAULT_JOURNAL_SIZE_PER_TENANT, size))
}

/** The principal of one call with the observation port told its decisions (`ServiceOptions.observe`). */
function observedPrincipal(principal: Principal, port: Observer, operation: string, uses = true): Principal {
  const { tenantId, id, kind, type, permissions, rules, recorder, expiresAt, keyHash } = principal
  const call = { tenantId, principalId: id, kind, operation }
  const observed: Observed = uses ? { port, call } : { port, call, uses: false }
  // Field by field, not a spread: it runs for every call with the log on, and a spread cost more.
  return { tenantId, id, kind, type, permissions, rules, recorder, observed, expiresAt, keyHash }
}

/** How long audit log entries are kept (ms) and how many a tenant keeps, from the options. */
function logBounds(options: ServiceOptions): Pick<Wiring, 'logRetentionMs' | 'maxLogEntries'> {
  return {
    logRetentionMs: atLeastOne(options.logRetentionDays, DEFAULT_LOG_RETENTION_DAYS) * 86_400_000,
    maxLogEntries: atLeastOne(options.maxLogEntriesPerTenant, DEFAULT_MAX_LOG_ENTRIES_PER_TENANT),
  }
}

/** The audit log's MACs: one key look-up per write (or verification page) for all its entries. */
function auditMac(keyring: Keyring): AuditMac {
  return (tenantId, values) => {
    const key = keyring.keyFor(tenantId)
    const macs = (k: TenantKey) => values.map((value) => keyedHash(k, AUDIT_PURPOSE, value))
    return key instanceof Promise ? key.then(macs) : macs(key)
  }
}

/**
 * The principal of one call: told to the observation port, if any, and with the audit log on,
 * noting in `call.revealed` each token whose plaintext left in the call (its entries then say,
 * token by token, revealed or masked).
 */
function callPrincipal(
  principal: Principal,
  call: CallInfo,
  observe: Observer | undefined,
  audited: boolean,
) {
  if (!audited) return observe ? observedPrincipal(principal, observe, call.operation) : principal
  return observedPrincipal(principal, new RevealNotes(call, observe), call.operation, observe !== undefined)
}

/**
 * The audit log's port of one call: notes in `call.revealed` each token whose plaintext left, and
 * passes everything on to the service's observer, if any. Without one, uses are not told at all
 * (the log names no permission), so nothing is built for them.
 */
class RevealNotes implements Observer {
  constructor(
    private readonly call: CallInfo,
    private readonly next: Observer | undefined,
  ) {}

  used(c: ObservedCall, use: AccessUse): void {
    this.next?.used(c, use)
  }

  revealed(c: ObservedCall, tokenId: string): void {
    if (this.call.revealed) this.call.revealed.add(tokenId)
    else this.call.revealed = new Set([tokenId])
    this.next?.revealed(c, tokenId)
  }
}

/**
 * What a call tells the outbox: an accepted asynchronous react (a pass of the dispatcher starts),
 * and a reactor or proxy about to be invoked (`admitCall`: the tenant's pending bound).
 */
function callbackPort(options: ServiceOptions, clock: Clock, webhooks: () => WebhookRuntime): CallbackPort {
  return {
    // An accepted asynchronous react runs at once, as a write's webhook deliveries go out at once.
    accepted: () => {
      if (options.webhookDelivery !== 'manual') webhooks().dispatcher.kick()
    },
    invoking: (tenantId, types) => webhooks().admitCall(tenantId, types, clock.now().getTime()),
  }
}

/** Builds the shared parts of a service from its options, `defaults` for what they leave out. */
export function wire(options: ServiceOptions, defaults: ServiceDefaults): Wiring {
  const { clock } = options
  const now = isoNow(clock)
  const keys = masterKeys(options)
  const keyring = new Keyring(options.store, keys, clock, options.dataKeys ?? {})
  // Measured below the sealed store: a page's byte budget holds on any store, before decryption.
  const store = sealedStore(measuredStore(options.store), keyring, {
    searchIndexPurpose: SEARCH_INDEX_PURPOSE,
    // The clock is read only for a token with a cvc deadline (the rest have nothing due).
    asRead: (token) => (token.cvc_expires_at === undefined ? token : withoutExpiredCvc(token, now())),
  })
  const resolved = resolveOptions(options)
  const egress = options.egressClient ?? defaults.egress()
  const given = options.runner === null ? undefined : (options.runner ?? defaults.runner())
  const runner = given && withEgress(given, egress)
  const journal = journalOf(options)
  const callbacks = callbackPort(options, clock, () => webhooks)
  const proxyGate = new TenantGate(atLeastOne(options.maxProxyCallsPerTenant, DEFAULT_PROXY_CALLS_PER_TENANT))
  const audit = options.auditLog === false ? undefined : new AuditLog(options.store, auditMac(keyring))
  const effects: WriteEffectHook[] = audit ? [audit.effect] : []
  const calls = new CallsInFlight()
  const pacer = options.pacer ?? defaults.pacer()
  const webhooks = webhookRuntime({
    store,
    clock,
    egress,
    origins: () => resolved.reactorEgress,
    signingKey: signingKeyOf(options),
    deliverAfterWrites: options.webhookDelivery !== 'manual',
    // An accepted asynchronous react runs as its caller, its writes (the tokens it makes) with effects.
    runReact: (entry, last) =>
      runAccepted(
        contextFor(acceptedOf(entry).principal, undefined, undefined, { operation: 'reactor.react_async' }),
        entry,
        last,
      ),
    maxPendingPerTenant: atLeastOne(
      options.maxPendingDeliveriesPerTenant,
      DEFAULT_PENDING_DELIVERIES_PER_TENANT,
    ),
    // Deliveries are background work: their steps yield to the calls in flight, kept to a share.
    turns: () =>
      pacedTurn(
        () => backgroundTurn(calls),
        pacer,
        DELIVERY_SHARE,
        () => calls.begun,
      ),
  })
  effects.push(webhooks.effect)
  const contextFor = (
    principal: Principal,
    transactionId: string | undefined,
    at?: string,
    call?: CallInfo,
  ): Ctx => {
    let instant: string | undefined = at
    const callNow = () => {
      instant ??= now()
      return instant
    }
    return {
      store: call ? storeWithEffects(store, effects, callContext(principal, call, callNow)) : store,
      clock,
      options: resolved,
      runner,
      callbacks,
      egress,
      proxyGate,
      principal: call ? callPrincipal(principal, call, options.observe, audit !== undefined) : principal,
      transactionId,
      budget: expressionBudget(),
      now: callNow,
      hmac: (purpose, value) => keyring.hmac(principal.tenantId, purpose, value),
    }
  }
  return {
    clock,
    keys,
    keyring,
    store,
    resolved,
    runner,
    journal,
    now,
    effects,
    webhooks,
    audit,
    ...logBounds(options),
    adminStore: (operation, at, actorType = 'admin') =>
      storeWithEffects(store, effects, () => adminContext(null, operation, at, actorType)),
    contextFor,
    record: recorder(journal, now),
    adminCall: adminCaller(journal, now),
    testMode: options.testMode === true,
    calls,
    pacer,
  }
}

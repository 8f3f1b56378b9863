import type {
  AccessRule,
  ApplicationType,
  CallRecorder,
  Clock,
  EgressClient,
  ExpressionBudget,
  FormulaRunner,
  Observed,
  Permission,
  TenantGate,
} from '../kernel/index.js'
import type { Store } from '../store/index.js'

/** Who is calling: an application, or a session acting with what it was granted. */
export interface Principal {
  tenantId: string
  /** Application id, or session id for a session key. */
  id: string
  kind: 'application' | 'session'
  /** The application type (a session counts as `public`). */
  type: ApplicationType
  permissions: readonly Permission[]
  /** When present and non-empty, these alone decide access to tokens. */
  rules?: readonly AccessRule[] | undefined
  /**
   * When the key stops working: an application's `expires_at` when it has one; a session's
   * `expires_at`, or its authorizing application's when that comes first.
   */
  expiresAt?: string | undefined
  /** The SHA-256 hash of the application key the call came with (none for a session's). */
  keyHash?: string | undefined
  /** The observation port and this call, when the service has one (`ServiceOptions.observe`). */
  observed?: Observed | undefined
  /** Where the evaluator explains its decisions for this call (test mode); absent: nothing is computed. */
  recorder?: CallRecorder | undefined
}

/**
 * What an asynchronous react tells the service once accepted. The react and its callback are
 * entries of the durable outbox (src/webhooks), run and delivered by its dispatcher.
 */
export interface CallbackPort {
  /** Told when an asynchronous react's outbox entry is acknowledged: the outbox's dispatcher runs it at once. */
  accepted(): void
  /**
   * Asked before a call invokes a reactor or a proxy (whose events, `types`, are written once it
   * ended): rejects with 429 when a webhook of the tenant takes one of them and its pending
   * deliveries are at their bound, so a call is refused before it acts, never after. Undefined
   * (no promise) when the tenant's webhooks are known to take none.
   */
  invoking(tenantId: string, types: readonly string[]): Promise<void> | undefined
}

/**
 * What a call invoked, told by the code that invoked it — a reactor's run, a proxy's request — so
 * that once the call ends the service writes its webhook events (`reactor.invoked` and
 * `.completed` or `.failed`, `proxy.invoked`). Plain names and numbers: never a token's data, the
 * arguments, a body, a header or a query.
 */
export type Invocation = ReactorInvoked | ProxyInvoked

/**
 * A synchronous react's run. (An asynchronous react's `reactor.invoked` is derived from the write
 * that accepts it, and its end from the write of its result: see src/webhooks/events.ts.)
 */
export interface ReactorInvoked {
  kind: 'reactor'
  reactor: { id: string; name: string }
  /** The clock's time (ms) when the run started. */
  startedMs: number
  /** Why the run failed, in the vault's own words (never the formula's message), when it did. */
  failure?: string
}

/** A proxy's request to its destination. */
export interface ProxyInvoked {
  kind: 'proxy'
  /** The pre-configured proxy called; absent for the ephemeral proxy. */
  proxy?: { id: string; name: string }
  method: string
  /** The destination's origin and path (never its query). */
  url: string
  startedMs: number
  /** The destination's status and time, once it answered. */
  destination?: { status: number; elapsedMs: number }
}

/** Options with defaults filled in. */
export interface ResolvedOptions {
  sessionTtlMs: number
  transactionTtlMs: number
  reactorTimeoutMs: number
  idempotencyLeaseMs: number
  /** The egress allow-list, as origins (`URL.origin`). */
  reactorEgress: readonly string[]
  /** How long a proxy call waits for its destination before answering 408 (ms). */
  proxyTimeoutMs: number
  maxIdempotencyRecordsPerTenant: number
  maxUnauthorizedSessionsPerTenant: number
  /** Pending outbox entries (deliveries, callbacks, accepted asynchronous reacts) one tenant may have. */
  maxPendingDeliveriesPerTenant: number
  /** Characters of token JSON one tenant's open transactions may hold staged together. */
  maxStagedCharsPerTenant: number
}

/** What every operation runs with: the store, the clock, the caller, and its transaction. */
export interface Ctx {
  store: Store
  clock: Clock
  options: ResolvedOptions
  /** The formula runner, when the service has one. */
  runner: FormulaRunner | undefined
  /** Told of each accepted asynchronous react, so the outbox runs it at once: see `CallbackPort`. */
  callbacks: CallbackPort
  /** Carries what the vault sends out (the proxy's requests), under `options.reactorEgress`. */
  egress: EgressClient
  /** The proxy calls each tenant has in flight, bounded per tenant (`maxProxyCallsPerTenant`). */
  proxyGate: TenantGate
  principal: Principal
  /** The transaction the caller enlisted in, if any. */
  transactionId: string | undefined
  /**
   * What this call's expressions may still do (masks shown, masks, fingerprints and search indexes
   * of the tokens it writes): one budget per call, see src/kernel/budget.ts.
   */
  budget: ExpressionBudget
  /** The time of this call as an ISO string: read from the clock once per call. */
  now(): string
  /**
   * Aborts when the caller went away (the HTTP adapter's client closed its connection): what the
   * call sends out (the proxy's request) is aborted with it. Absent: the call runs to its end.
   */
  signal?: AbortSignal | undefined
  /**
   * HMAC-SHA-256 (base64url) of `value` under the caller's tenant key for `purpose` (a subkey of
   * the tenant's data key per purpose): search indexes, fingerprints. Never stored in the clear.
   */
  hmac(purpose: string, value: string | readonly string[]): Promise<string>
  /** What the call invoked, once it did (see `Invocation`): set by the reactor and proxy code. */
  invoked?: Invocation | undefined
}

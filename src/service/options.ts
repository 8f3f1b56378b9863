import type { DataKeyPolicy, MasterKey } from '../encryption/index.js'
import type { Clock, EgressClient, FormulaRunner, Observer, Pacer } from '../kernel/index.js'
import type { Store } from '../store/index.js'

/** Options of `createService`. Durations are in milliseconds. */
export interface ServiceOptions {
  store: Store
  clock: Clock
  /** Lifetime of a created session (default 3 minutes). */
  sessionTtlMs?: number
  /** Lifetime of a transaction (default 1 hour). */
  transactionTtlMs?: number
  /**
   * Runs reactor formula code in isolation. By default `sandboxRunner()` from
   * `tokenvault/adapters/sandbox` (QuickJS in WebAssembly, in worker threads), loaded and started
   * on the first formula create or react. `null` turns formulas off: their code is not
   * compile-checked and `reactors.react` answers `formula_invalid`. `service.close()` closes it.
   */
  runner?: FormulaRunner | null
  /** Wall-clock limit of one formula run (default 10 seconds). */
  reactorTimeoutMs?: number
  /**
   * The egress allow-list: origins (`https://api.example.com`) formula code may reach with `fetch`
   * and asynchronous reacts may deliver their `callback_url` to. The host makes every request
   * (`src/reactors/egress.ts`: loopback and private addresses refused unless listed by address, redirects only
   * to listed origins, time and size bounded). Empty by default: no network at all.
   */
  reactorEgress?: readonly string[]
  /**
   * The egress allow-list for everything the vault sends out — formula `fetch`, react callbacks,
   * the proxy: origins (`https://api.example.com`, `http://127.0.0.1:8080`). `reactorEgress` is its
   * older name, kept as an alias (both lists are allowed together). Empty by default: no network.
   */
  egress?: readonly string[]
  /**
   * How long a proxy call waits for its destination; past it the call answers 408, as the
   * reference's proxy does after 25 seconds.
   * @default 25000
   */
  proxyTimeoutMs?: number
  /**
   * Proxy calls one tenant may have in flight (waiting for their destination); one more answers 429
   * with `Retry-After`, so one tenant's slow destination never holds another tenant's calls.
   * @default 64
   */
  maxProxyCallsPerTenant?: number
  /**
   * Carries the requests `reactorEgress` lets out (formula `fetch`, react callbacks): by default the
   * node client of `adapters/egress` (`egressFetch`, loaded on first use). A test may route the
   * listed origins to in-process handlers instead (`routedEgress`); the allow-list still applies.
   */
  egressClient?: EgressClient
  /**
   * Monotonic time and pauses for background work kept to a share of the time (the re-encryption
   * sweep's `share`): by default `performance.now()` and `setTimeout`. Never the domain's time
   * (`clock`); a test may give a fake to see the pauses without waiting for them.
   */
  pacer?: Pacer
  /**
   * How long a request made with an idempotency key holds the key while it runs (default 1 minute):
   * a repeat meanwhile answers 409; after it (the first presumed lost with its process), a repeat
   * runs anew.
   */
  idempotencyLeaseMs?: number
  /**
   * The master key that wraps each tenant's data key (token `data` and `mask` are encrypted at rest
   * under the data keys): 32 bytes of key material, or a `KeyProvider` (a KMS, an HSM). Several:
   * the first wraps new data keys, every one unwraps (during a rotation). Required for a persistent
   * store; a memory store without one uses a random key that dies with the process.
   */
  masterKey?: MasterKey | readonly MasterKey[]
  /**
   * The tenants' data-key lifecycle (see `DataKeyPolicy`): seals per version before it rotates
   * (`maxSeals`, default 3 865 470 566, below the AES-GCM bound of 2³²), seals reserved at once
   * (`sealBlock`, default 1024), a cryptoperiod (`maxAgeMs`, off by default, on `clock`), and how
   * long a process trusts keys it read (`refreshMs`, default 15 000).
   */
  dataKeys?: Partial<DataKeyPolicy>
  /**
   * How many operations `service.journal` keeps in all (the newest; 0 keeps none, events still
   * fire). Full, a new entry evicts the oldest of the tenant that holds the most.
   * @default 1000
   */
  journalSize?: number
  /**
   * How many operations of one tenant the journal keeps (calls whose key did not authenticate count
   * as one tenant): its next entry evicts its own oldest, never another tenant's.
   * @default 500 (at most `journalSize`)
   */
  journalSizePerTenant?: number
  /**
   * No effect; still accepted for compatibility. Asynchronous reacts and their callbacks are
   * entries of the durable outbox, bounded per tenant by `maxPendingDeliveriesPerTenant`.
   * @deprecated Use `maxPendingDeliveriesPerTenant`.
   */
  maxAsyncReactsPerTenant?: number
  /**
   * No effect; still accepted for compatibility. The outbox has no bound in all, only the one per
   * tenant (`maxPendingDeliveriesPerTenant`).
   * @deprecated Use `maxPendingDeliveriesPerTenant`.
   */
  maxAsyncReacts?: number
  /**
   * Idempotency records one tenant may hold (each kept 24 hours after its first request, until the
   * sweep deletes it). At the bound a request with a new idempotency key answers 429 with
   * `Retry-After`, before it acts; repeats of kept keys are still answered.
   * @default 10000
   */
  maxIdempotencyRecordsPerTenant?: number
  /**
   * Sessions one tenant's public keys may have made and not yet had authorized (each lives
   * `sessionTtlMs` until authorized or swept). At the bound session create answers 429 with
   * `Retry-After`; authorizing one frees its place at once.
   * @default 1000
   */
  maxUnauthorizedSessionsPerTenant?: number
  /**
   * Characters of token JSON (as staged, before sealing) one tenant's open transactions may hold
   * staged together, beside each transaction's own 16 MiB. Past it a staging write answers 429 with
   * `Retry-After` and stages nothing; a transaction that ends (commit, rollback, expiry) frees its share.
   * @default 67108864 (64 MiB)
   */
  maxStagedCharsPerTenant?: number
  /**
   * The RSA private key (PEM) webhook deliveries are signed with (`BT-SIGNATURE`, RSA-PSS over
   * SHA-256, as the reference documents); receivers verify with its public half
   * (`service.admin.webhooks.publicKey`). Absent: with `testMode`, the published test key of
   * `tokenvault/testing` (`TEST_WEBHOOK_PUBLIC_KEY`: a delivery signed with it proves nothing);
   * otherwise a key pair made for this service on first use, which dies with it: give a key with a
   * persistent store. The published test key with a persistent store outside `testMode` is refused.
   */
  webhookSigningKey?: string
  /**
   * `auto`: a write that owes deliveries starts a delivery pass at once, in this process.
   * `manual`: this process only writes the outbox; deliveries go out when
   * `service.admin.webhooks.deliverDue()` runs (here or in another process on the same store: a
   * delivery worker).
   * @default 'auto'
   */
  webhookDelivery?: 'auto' | 'manual'
  /**
   * Webhook deliveries and callbacks one tenant may have pending (not yet delivered or given up). A
   * write whose events would take it past this answers 429 with `Retry-After`, and changes nothing.
   * @default 10000
   */
  maxPendingDeliveriesPerTenant?: number
  /**
   * Gives `service.admin` the test powers (`exportState`, `importState`, `clearState`: the whole
   * state, token data in the clear). For the test kit and the CLI's `--test-mode` only; a
   * production service leaves it out and has none of them.
   * @default false
   */
  testMode?: boolean
  /**
   * The audit log (`GET /logs`): each write's entries ride in the write itself, each read's are
   * group-committed before its answer. `false` turns it off (for comparisons: nothing is logged).
   * @default true
   */
  auditLog?: boolean
  /**
   * How long audit log entries are kept, in days (PCI DSS 10.5.1: twelve months); the sweep
   * (`admin.sweepExpired`, `admin.sweepLogs`) removes older ones without breaking verification.
   * @default 365
   */
  logRetentionDays?: number
  /**
   * Most audit log entries a tenant keeps: the sweep (`admin.sweepExpired`, `admin.sweepLogs`)
   * removes its oldest entries beyond it, as retention does (verification still holds), so a
   * tenant's log — the memory store's above all — never grows without bound between two sweeps'
   * worth of calls.
   * @default 1_000_000
   */
  maxLogEntriesPerTenant?: number
  /**
   * The observation port: told, with plain data (ids, operation, permission, deciding rule; never
   * token data), of each access decision that let a call act and of each token whose plaintext
   * left the vault in an answer. The test kit's exposure and used-access accounting use it. Absent:
   * nothing is computed.
   */
  observe?: Observer
}

/**
 * The records the service keeps. Field names are the JSON (snake_case) names the HTTP bodies use.
 * Timestamps are ISO 8601 UTC strings as the clock gave them (`2030-01-01T00:00:00.000Z`).
 */

/** Any JSON value. */
export type Json = null | boolean | number | string | JsonArray | JsonObject
/** A JSON array. (An interface, as `JsonObject`: recursion through interfaces stays shallow for the type checker.) */
export interface JsonArray extends Array<Json> {}
/** A JSON object. */
export interface JsonObject {
  [key: string]: Json
}

export interface Tenant {
  id: string
  name: string
  created_at: string
  /**
   * The tenant's root key, wrapped by the master key (stored; never shown to callers): it keys the
   * tenant's keyed hashes (fingerprints, search indexes, cursors), and for a tenant from before
   * versioned keys it is also data key version 1. Removed when the tenant's keys are destroyed.
   */
  data_key?: { key_id: string; wrapped: string }
  /** The tenant's versioned data keys (see `TenantKeys`); absent on a tenant from before them. */
  keys?: TenantKeys
}

/**
 * One version of a tenant's data key: wrapped by the master key `key_id` (bound to the tenant and
 * the version), or (`root: true`, version 1 of a tenant from before versioned keys) the root key.
 */
export interface DataKeyVersion {
  version: number
  created_at: string
  key_id?: string
  /** base64 of the wrapped key. */
  wrapped?: string
  root?: true
}

/**
 * A tenant's data-key lifecycle, kept on its record and changed only under `tenant.unchanged`:
 * the versions held, the one new seals use, the seals reserved under it, and the re-encryption
 * sweep's place.
 */
export interface TenantKeys {
  /** The version new seals use (0 once destroyed). */
  current: number
  /** The versions still held, oldest first: reads open any of them. */
  versions: DataKeyVersion[]
  /** Seals reserved under `current`: never fewer than the seals made under it (a crash loses only unused ones). */
  sealed: number
  /** When `current` became current (ISO). */
  rotated_at: string
  /** The re-encryption sweep's place: the last token id it re-sealed up to, under version `to`. */
  sweep?: { to: number; after?: string; done: number; started_at: string; total?: number }
  /** When the keys were destroyed (crypto-shredding): nothing of the tenant decrypts from then on. */
  destroyed_at?: string
}

export type ApplicationType = 'private' | 'public' | 'management'

export type Permission =
  | 'token:create'
  | 'token:read'
  | 'token:update'
  | 'token:delete'
  | 'token:use'
  | 'token:search'
  | 'reactor:create'
  | 'reactor:read'
  | 'reactor:update'
  | 'reactor:delete'
  | 'application:create'
  | 'application:read'
  | 'application:update'
  | 'application:delete'
  | 'tenant:read'
  | 'tenant:update'
  | 'tenant:delete'
  | 'log:read'
  | 'proxy:read'
  | 'proxy:create'
  | 'proxy:update'
  | 'proxy:delete'
  | 'tenant:member:read'
  | 'tenant:member:update'
  | 'tenant:member:delete'
  | 'tenant:invitation:create'
  | 'tenant:invitation:read'
  | 'tenant:invitation:update'
  | 'tenant:invitation:delete'
  | 'report:read'
  | 'webhook:create'
  | 'webhook:read'
  | 'webhook:update'
  | 'webhook:delete'
  | 'keys:create'
  | 'keys:read'
  | 'keys:delete'
  | 'token-intent:create'
  | 'token-intent:read'
  | 'token-intent:delete'
  | 'documents:create'
  | 'documents:read'
  | 'documents:reveal'
  | 'documents:delete'

export type Transform = 'redact' | 'mask' | 'reveal'

export interface Condition {
  attribute: 'id' | 'container'
  operator: 'equals' | 'starts_with'
  value: string
}

/** An access rule: for tokens it matches, it grants `permissions` with `transform` applied on reads. */
export interface AccessRule {
  description: string
  priority: number
  container?: string
  conditions?: Condition[]
  transform: Transform
  permissions: Permission[]
}

export interface Application {
  id: string
  tenant_id: string
  name: string
  type: ApplicationType
  permissions: Permission[]
  rules?: AccessRule[]
  created_at: string
  created_by?: string
  modified_at?: string
  modified_by?: string
  /** When the application is deleted (by the sweep); its key answers 401 from then on. */
  expires_at?: string
}

/** One API key of an application, as stored: the SHA-256 (hex) of the key, never the key. */
export interface StoredApplicationKey {
  id: string
  key_hash: string
  created_at: string
  created_by?: string
}

/**
 * An application as stored, with its keys' hashes. `keys` lists every key of the application (an
 * application may hold several, or none); records written before applications had several keys
 * hold their one key's hash in `key_hash` instead. `applicationKeyHashes` reads both.
 */
export interface StoredApplication extends Application {
  key_hash?: string
  keys?: StoredApplicationKey[]
}

export interface Token {
  id: string
  tenant_id: string
  type: string
  data?: Json
  containers: string[]
  metadata: Record<string, string>
  mask?: Json
  /**
   * Identifies the token's contents within its tenant and type: a keyed hash (HMAC under the
   * tenant's key) of what `fingerprint_expression` (or the type's default) renders, never the text.
   */
  fingerprint?: string
  /** The expression the fingerprint was made from, when the caller gave one. */
  fingerprint_expression?: string
  expires_at?: string
  /** Search index expressions (`{{ data.number | last4 }}`): `data` terms of a search match their values. */
  search_indexes?: string[]
  created_by: string
  created_at: string
  modified_by?: string
  modified_at?: string
  /** Answers to a create asking for deduplication only (never stored): whether a duplicate answered. */
  _extras?: { deduplicated: boolean }
}

/** A token as stored: `data` is always present. */
export interface StoredToken extends Token {
  data: Json
  /**
   * The evaluated `search_indexes` (see `searchIndexValues`), in the clear, set by the core on a
   * write: the sealed store replaces them by `search_index_hashes` before anything is stored, and
   * never answers them.
   */
  search_index_values?: string[]
  /** Keyed hashes (HMAC under the tenant's key) of `search_index_values`, as stored. */
  search_index_hashes?: string[]
  /** When a `card`'s `data.cvc` is deleted (see `withoutExpiredCvc`); in the clear, never shown. */
  cvc_expires_at?: string
}

export interface Association {
  tenant_id: string
  parent_id: string
  child_id: string
  created_at: string
}

/** A link named by its two ends (within one tenant). */
export interface LinkKey {
  parent_id: string
  child_id: string
}

export type TransactionState = 'open' | 'committed' | 'rolled_back' | 'expired'

/** The public shape of a transaction. */
export interface Transaction {
  id: string
  created_at: string
  created_by: string
  expires_at: string
}

/**
 * A transaction as stored: its state and a version. Its staged writes are records of their own
 * (`StagedWrite`), so the transaction record keeps one size however much it stages.
 */
export interface StoredTransaction extends Transaction {
  tenant_id: string
  state: TransactionState
  /**
   * How many staging writes it has taken (each puts it again with this one more): a commit,
   * rollback or expiry guarded on the transaction as read (`transaction.unchanged`) fails when a
   * write was staged after it listed the staged records, and starts over with it.
   */
  version: number
  /** When it was committed, rolled back or expired; the sweep deletes it 24 hours later. */
  ended_at?: string
  /** How many writes it staged so far (each enlisted write counts); absent: none. Bounded by the core. */
  staged_writes?: number
  /** The characters of token JSON it staged so far (deletes count none); absent: none. Bounded by the core. */
  staged_chars?: number
}

/**
 * What an open transaction staged over one token, kept as its own record (keyed by tenant,
 * transaction and token) beside the token's lock record until the transaction ends: the commit
 * applies it, a rollback or expiry deletes it.
 */
export interface StagedWrite {
  tenant_id: string
  transaction_id: string
  token_id: string
  /** The transaction's `version` when it was staged: a commit applies its staged writes in this order. */
  seq: number
  /** The token as staged, or null: staged deleted (with its links, at commit). */
  token: StoredToken | null
  /**
   * Set when the token is new to the store: this transaction staged its create (and maybe changed
   * or deleted it since). The commit puts it guarded `token.absent` (its event is `token.created`),
   * and writes nothing for it when it is staged deleted. Absent: the token existed before.
   */
  creates?: true
}

/**
 * A lock record: while it exists, the open transaction `transaction_id` holds the token, until it
 * ends (the core deletes the record in the same write) or until `expires_at` (the transaction's
 * expiry) has passed, when another transaction may take the lock over by putting its own record.
 */
export interface TokenLock {
  tenant_id: string
  token_id: string
  transaction_id: string
  expires_at: string
}

export type SessionState = 'created' | 'authorized'

/** A session as stored. The key and nonce are kept only as SHA-256 hashes. */
export interface StoredSession {
  id: string
  tenant_id: string
  /** The public application that created the session. */
  application_id: string
  key_hash: string
  nonce_hash: string
  state: SessionState
  permissions: Permission[]
  rules?: AccessRule[]
  created_at: string
  expires_at: string
  /** The private application that authorized the session. */
  authorized_by?: string
  /**
   * The SHA-256 hash of the key it authorized with: the session works only while that application
   * still holds that key (deleted, expired, the key deleted or regenerated: the session answers 401).
   * Absent on sessions authorized before it was kept: those follow the application alone.
   */
  authorized_by_key_hash?: string
  authorized_at?: string
}

export type FormulaType = 'official' | 'private'
export type FormulaStatus = 'verified' | 'coming_soon'
export type ElementType = 'string' | 'boolean' | 'number'

export interface ConfigurationElement {
  name: string
  description?: string
  type: ElementType
}

export interface RequestParameterElement {
  name: string
  description?: string
  type: ElementType
  optional: boolean
}

export interface ReactorFormula {
  id: string
  name: string
  description?: string
  type: FormulaType
  status: FormulaStatus
  icon?: string
  code: string
  configuration: ConfigurationElement[]
  request_parameters: RequestParameterElement[]
  created_at?: string
  created_by?: string
  modified_at?: string
  modified_by?: string
}

/** A formula as stored: `tenant_id` is null for official formulas, which every tenant sees. */
export interface StoredFormula extends ReactorFormula {
  tenant_id: string | null
}

/**
 * A reactor as stored: formula-based (`formula_id`, its configuration checked against the formula's)
 * or with its own inline `code` (configuration a free map). `application_id`: the application the
 * reactor acts for, when one was given.
 */
export interface Reactor {
  id: string
  tenant_id: string
  name: string
  formula_id?: string
  code?: string
  application_id?: string
  configuration: Record<string, string | number | boolean>
  created_at: string
  created_by: string
  modified_at?: string
  modified_by?: string
}

/**
 * A formula-use record: reactor `reactor_id` of tenant `tenant_id` runs formula `formula_id` (of
 * that tenant, or official). The core writes it with the reactor and deletes it with the reactor
 * or when the reactor changes formula; `formula.unused` guards a formula's delete on there being
 * none.
 */
export interface FormulaUse {
  formula_id: string
  tenant_id: string
  reactor_id: string
}

/**
 * The first answer to a request made with an idempotency key, as stored. `id` is a keyed hash of
 * the caller and the idempotency key (the key itself is not stored); `request` a keyed hash of the
 * request (operation and arguments). While the first request runs the record is `pending` under a
 * `claim` (random) that lasts until `lease_until`; once it succeeded it is `done` with its `answer`
 * (JSON text, sealed at rest: it may hold token data), or with `answer_not_kept` when the answer
 * was longer than an idempotency record keeps. It is forgotten at `expires_at`.
 */
export interface IdempotencyRecord {
  tenant_id: string
  id: string
  state: 'pending' | 'done'
  claim: string
  request: string
  answer?: string
  /** The request succeeded but its answer was too long to keep: a repeat is refused, not replayed. */
  answer_not_kept?: true
  created_at: string
  lease_until: string
  expires_at: string
}

/**
 * A token intent as stored (`POST /token-intents`): the data of a token not yet made, kept until
 * it is converted into a token (`token_intent_id` on token create) or deleted, and at most until
 * `expires_at` (a day after it was made). `data` is sealed at rest like a token's, bound to the
 * intent's tenant and id; the summaries (`card`, `bank`) and the fingerprint are in the clear.
 */
export interface StoredTokenIntent {
  id: string
  tenant_id: string
  type: string
  data: Json
  fingerprint?: string
  /** The card summary of a `card` intent (`bin`, `last4`, expiry, `brand`, `funding`, `authentication`). */
  card?: Record<string, Json>
  /** The bank summary of a `bank` intent (`routing_number`, `account_number_last4`). */
  bank?: Record<string, Json>
  created_by: string
  created_at: string
  expires_at: string
}

/**
 * A pre-configured proxy as stored (`POST /proxies`): its destination, its transforms' code, the
 * application whose access the transforms' tokenize and detokenize use, and its `configuration`
 * (third parties' secrets: sealed at rest, as a reactor's). Its key is not stored: it is derived
 * from the tenant's key (see `src/proxy/keys.ts`).
 */
export interface StoredProxy {
  id: string
  tenant_id: string
  name: string
  destination_url: string
  request_transform?: { code: string }
  response_transform?: { code: string }
  application_id?: string
  configuration: Record<string, string>
  require_auth: boolean
  created_at: string
  created_by: string
  modified_at?: string
  modified_by?: string
}

/**
 * A document's head as stored (`POST /documents`): what `GET /documents/{id}` answers, and how its
 * bytes are kept — `chunks` records of at most 64 KiB each (`StoredDocumentChunk`), sealed one by
 * one. `state` is `uploading` while its chunks are being written (the document answers as unknown
 * then) and `ready` once every chunk is; `size` and `chunks` are set when it turns `ready`.
 * `metadata` is in the clear, as a token's.
 */
export interface StoredDocument {
  id: string
  tenant_id: string
  state: 'uploading' | 'ready'
  metadata: Record<string, string>
  content_type: string
  size: number
  chunks: number
  created_by: string
  created_at: string
}

/**
 * One chunk of a document's bytes: `data` is their base64 in the clear as the service hands it to
 * its store, and sealed (AES-256-GCM bound to the tenant, document id, chunk index and whether it is
 * the last) in every store.
 */
export interface StoredDocumentChunk {
  tenant_id: string
  document_id: string
  index: number
  last: boolean
  data: string
}

/** Whether a webhook sends (`enabled`) or not (`disabled`), as the reference names it. */
export type WebhookStatus = 'enabled' | 'disabled'

/** A webhook subscription as stored: the reference's shape (`POST /webhooks`). Nothing in it is secret. */
export interface StoredWebhook {
  id: string
  tenant_id: string
  status: WebhookStatus
  name: string
  url: string
  notify_email?: string
  /** Event types it is sent (`token.created`, …), each once. */
  events: string[]
  created_by: string
  created_at: string
  modified_by?: string
  modified_at?: string
}

/** One attempt of an outbox delivery: when, and what came of it (`status` when the receiver answered). */
export interface OutboxAttempt {
  at: string
  ok: boolean
  status?: number
  /** Why it failed without an answer (connection refused, timeout, egress refusal); never a secret. */
  error?: string
}

/**
 * One delivery the outbox owes: a webhook event to one webhook (`kind: 'webhook'`), or an
 * asynchronous react's result to its `callback_url` (`kind: 'callback'`). Written in the same store
 * write as the change that caused it; then attempted until delivered or out of attempts.
 * - `pending`: `due_at` is when the next attempt may start. A process claims it by putting it with
 *   `due_at` = now + the lease and a new `claim` (guarded by `outbox.unchanged`), so while one
 *   process attempts it no other sees it due; if that process dies, it is due again when the lease ends.
 * - `delivered` / `failed`: finished, kept until `expires_at` for tests and the console, then swept.
 * `body` is the JSON text sent (a webhook event without `delivered_at`; a callback's body, sealed at
 * rest: it may hold token data), or, for an accepted asynchronous react (`kind: 'react'`), what it
 * runs with (its checked arguments and caller, sealed at rest); it is run as an attempt is made.
 */
export interface OutboxEntry {
  tenant_id: string
  /** Sorts in the order the tenant's writes made them (time, then a per-process sequence). */
  id: string
  kind: 'webhook' | 'callback' | 'react'
  /** The reactor an accepted asynchronous react runs (`kind: 'react'`; its id is the request id). */
  reactor_id?: string
  /** Its reactor's name when it was accepted (`kind: 'react'`): what its `reactor.invoked` event names. */
  reactor_name?: string
  /**
   * What an asynchronous react answered once run (`kind: 'react'`): the JSON text of `{ ok: true,
   * result }` or `{ ok: false, status, detail, errors? }`; sealed at rest like `body`.
   */
  result?: string
  /** The webhook it goes to (`kind: 'webhook'`). */
  webhook_id?: string
  /** The event it carries (`kind: 'webhook'`): shared by the deliveries of one event to several webhooks. */
  event_id?: string
  event_type?: string
  url: string
  body: string
  created_at: string
  state: 'pending' | 'delivered' | 'failed'
  due_at?: string
  claim?: string
  attempts: OutboxAttempt[]
  expires_at?: string
}

/**
 * One entry of a tenant's audit log (`GET /logs`): who did what to which record, when, and how it
 * ended. Never token data, masks' output, keys, nonces or configuration values: only ids, names of
 * operations and outcome codes. Entries form per-process chains (`lane`, `seq`): see src/audit/.
 */
export interface LogEntry {
  tenant_id: string
  /**
   * The writer ‖ `:` ‖ the writer's number of the entry, 12 digits: its place in chain order, where
   * each lane's entries sort in seq order (entries of the first format: `lane` ‖ `:` ‖ `seq`).
   */
  id: string
  /** The application or session id; absent for the admin and the service itself. */
  actor_id?: string
  /** `application`, `session`, `admin` or `system`. */
  actor_type: string
  /** `token`, `application`, `reactor`, `reactor_formula`, `session`, `transaction`, `tenant`, … */
  entity_type: string
  /** The record's id, when the entry is about one. */
  entity_id?: string
  /** What was done: `create`, `read`, `update`, `delete`, `commit`, `authorize`, … */
  operation: string
  /** A sentence naming the call and the change (never a stored value). */
  message: string
  /** `success`, or the failure's code (`forbidden`, `not_found`, …). */
  outcome: string
  /** The HTTP request id, when the call came through the HTTP adapter. */
  request_id?: string
  created_at: string
  /** The chain this entry belongs to: one writer's lane (a process's id and a number). */
  lane: string
  /** The entry's place in its lane: 0, 1, 2, … without gaps. */
  seq: number
  /** Retention removed the lane's entries before this one (covered by the MAC). */
  floor?: true
  /** HMAC-SHA-256 (base64url) of every other field under the tenant's audit key. */
  mac: string
}

/**
 * A tokenize answer: the request's shape with each token create body replaced by the token made,
 * and each plain value (string, number, boolean) by the id of the `token`-type token made of it.
 */
export type TokenTree = Token | string | null | TokenTree[] | { [key: string]: TokenTree }

/** What `react` answers: the formula's `raw` output, and the tokens made from its `tokenize` output. */
export interface ReactResult {
  raw?: Json
  /**
   * The `tokenize` output with each token create body replaced by the token created (without
   * `data`) and each plain value by the id of the `token`-type token made of it.
   */
  tokens: TokenTree
}

/** A body that must be empty when given: absent, `null` or `{}` (`transactions.create`, `sessions.create`). */
export type EmptyInput = Record<string, never> | null | undefined

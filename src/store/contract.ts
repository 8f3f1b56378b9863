import type {
  Association,
  IdempotencyRecord,
  LogEntry,
  OutboxEntry,
  Reactor,
  StagedWrite,
  StoredApplication,
  StoredClientKey,
  StoredDocument,
  StoredDocumentChunk,
  StoredFormula,
  StoredProxy,
  StoredSession,
  StoredToken,
  StoredTokenIntent,
  StoredTransaction,
  StoredWebhook,
  Tenant,
} from '../kernel/index.js'
import type { Check, Op } from './protocol.js'

/**
 * An exact term a token carries, as stores index it beside the token (kept in the same atomic
 * write as the token): what `findTokenIds` answers from.
 * - `id`: the token's id; `type`: its type; `fingerprint`: its fingerprint;
 * - `container`: one of its containers, exactly as stored (`/a/b/`);
 * - `metadata`: a metadata entry `key` whose value, lower-cased (`toLowerCase`), is `value` (the
 *   core lower-cases `value` before it asks);
 * - `search_index`: one of its `search_index_hashes`.
 */
export type TokenTerm =
  | { kind: 'id' | 'type' | 'fingerprint' | 'container' | 'search_index'; value: string }
  | { kind: 'metadata'; key: string; value: string }

/**
 * A token's plain fields: every field but `data` and `mask` (which the service seals). What the
 * core matches filters, queries and access rules on before it reads (and decrypts) a whole token.
 */
export type TokenHead = Omit<StoredToken, 'data' | 'mask'> & {
  /**
   * The bytes the token's `data` and `mask` take as the store holds them (sealed: ciphertext, IV
   * and tag), when the store knows it without reading them: what the core bounds a page's answer
   * by before it reads (and decrypts) anything. Never stored. A store that leaves it out costs a
   * read of the sealed record per head: the service (`measuredStore`) measures it then, never
   * decrypting.
   */
  stored_bytes?: number
}

/** One child in a parent's link order: its id and the link's opaque place in that order. */
export interface ChildKey {
  id: string
  /** Increases with link order within one parent; a later `after` resumes past it. */
  key: string
}

/** A slice of a list: `items` from `offset`, and `total`, the count of all matches. */
export interface Page<T> {
  items: T[]
  total: number
}

/** Where a list starts and how many items it holds at most. */
export interface Range {
  offset: number
  limit: number
}

/** A place in the order of due outbox entries (`listDueOutbox`): an entry's `due_at`, tenant and id. */
export interface DueKey {
  due_at: string
  tenant_id: string
  id: string
}

/** The outcome of `Store.write`: applied, or refused because `failed` did not hold (nothing written). */
export type WriteResult = { ok: true } | { ok: false; failed: Check }

/** A principal found by key hash. */
export type KeyOwner =
  | { kind: 'application'; application: StoredApplication }
  | { kind: 'session'; session: StoredSession }

/** A tenant's record named by id, as `listExpired` answers. */
export interface RecordKey {
  tenant_id: string
  id: string
}

/**
 * What `listExpired` lists, each by a field the store keeps in the clear:
 * - `token`, `session`, `application`: records with `expires_at <= before`;
 * - `transaction.open`: transactions in state `open` with `expires_at <= before`;
 * - `transaction.ended`: transactions in any other state with `expires_at <= before` (a transaction
 *   ends at the latest when it expires, so `before` = now − 24 h finds every one ended a day ago);
 * - `idempotency`: idempotency records with `expires_at <= before`;
 * - `token.cvc`: tokens with `cvc_expires_at <= before` (cards whose cvc is due for deletion).
 * - `outbox`: finished outbox entries (delivered or failed) with `expires_at <= before`.
 * - `token_intent`: token intents with `expires_at <= before`.
 */
export type ExpiringKind =
  | 'token'
  | 'token.cvc'
  | 'session'
  | 'application'
  | 'transaction.open'
  | 'transaction.ended'
  | 'idempotency'
  | 'outbox'
  | 'token_intent'

/**
 * What `countRecords` counts of one tenant, expired or not (the sweep deletes expired records):
 * - `idempotency`: its idempotency records, in any state;
 * - `session.created`: its sessions in state `created` (made by a public key, not yet authorized).
 * - `webhook`: its webhooks; `outbox.pending`: its outbox entries in state `pending`.
 * - `log`: its audit log entries (the sweep keeps them under `maxLogEntriesPerTenant`).
 * - `transaction.staged`: not a number of records but a sum: the `staged_chars` of its transactions
 *   in state `open` (what they hold staged, expired or not until ended), for the bound of
 *   `maxStagedCharsPerTenant`.
 */
export type CountedKind =
  | 'idempotency'
  | 'session.created'
  | 'webhook'
  | 'outbox.pending'
  | 'log'
  | 'transaction.staged'

/**
 * What a transaction record adds to its tenant's `transaction.staged` count (`Store.countRecords`):
 * its `staged_chars` while it is open, nothing once it has ended. Every store keeps the count by
 * this rule, moving it by the difference between the record it replaces and the one it writes.
 */
export function stagedCharsHeld(tx: StoredTransaction | undefined | null): number {
  return tx?.state === 'open' ? (tx.staged_chars ?? 0) : 0
}

/**
 * Every record a store holds, each kind sorted by its key: for tests that compare whole stores.
 * Audit log entries are not part of it (a refused call logs an entry, and "changes nothing"
 * compares the records it could have changed): read them with `listLogs`.
 */
export interface StoreDump {
  tenants: Tenant[]
  applications: StoredApplication[]
  tokens: StoredToken[]
  associations: Association[]
  transactions: StoredTransaction[]
  /** Staged records, by tenant, transaction, then token id. */
  staged: StagedWrite[]
  sessions: StoredSession[]
  formulas: StoredFormula[]
  reactors: Reactor[]
  idempotency: IdempotencyRecord[]
  /** Pre-configured proxies, by tenant then id (configuration sealed, as stored). */
  proxies: StoredProxy[]
  /** Client encryption keys, by tenant then id (private keys sealed, as stored). */
  client_keys: StoredClientKey[]
  /** Token intents, by tenant then id (data sealed, as stored). */
  token_intents: StoredTokenIntent[]
  /** Webhooks, by tenant then id. */
  webhooks: StoredWebhook[]
  /** Documents' heads, by tenant then id. */
  documents: StoredDocument[]
  /** Documents' chunks, by tenant, document id, then index (data sealed, as stored). */
  document_chunks: StoredDocumentChunk[]
  /** Outbox entries, by tenant then id. */
  outbox: OutboxEntry[]
}

/**
 * What `listLogs` reads: in `order` `newest` (by `created_at` then `id`, descending), `oldest`
 * (ascending) or `chain` (by `id` ascending: each lane's entries in sequence order, lane after
 * lane). `entity_type` (and with it `entity_id`) and `from` (`created_at >= from`) / `to`
 * (`created_at <= to`) filter; `after` is the last entry of the previous page (its `created_at`
 * and `id`; only `id` counts in `chain` order).
 */
export interface LogQuery {
  order: 'newest' | 'oldest' | 'chain'
  entity_type?: string
  entity_id?: string
  from?: string
  to?: string
  after?: { created_at: string; id: string }
  limit: number
}

/** What `listReactors` may filter by: `name` as `listFormulas` does, `ids` (non-empty) by id. */
export interface ReactorQuery extends Range {
  name?: string
  ids?: string[]
}

/**
 * Where the service keeps its records. Every method is async and every id is scoped by tenant.
 * Absent records are `null`. Records handed in and out are copies, or (`findKey`, which every call makes) deeply frozen:
 * mutating them never changes the store.
 *
 * Concurrency: `write` is atomic and linearizable. Its checks and ops take effect together, as if
 * every `write` ran alone in some serial order: under any number of concurrent calls (in one process
 * or, for shared stores, across processes) whose checks conflict — such as `session.unchanged` on one
 * session or `transaction.unchanged` on one transaction — exactly one succeeds and the others get
 * `{ ok: false }`. A write that is acknowledged (its promise resolved `{ ok: true }`) is durable to the
 * degree the adapter promises (the file store: on disk).
 */
export interface Store {
  /**
   * Whether what the store holds outlives the process (file, PostgreSQL). A persistent store needs
   * the service's `masterKey`: data encrypted under a random key would be unreadable after a restart.
   */
  readonly persistent?: boolean
  /**
   * Applies `ops` in order, atomically, if every check in `checks` holds; otherwise writes nothing.
   * `deferSync`: the caller loses nothing if a power loss or an operating-system crash undoes this
   * write (the re-encryption sweep's re-seals and place: the records as they were still open, and
   * the sweep does them again). A store may then acknowledge it once it is committed, before it is
   * synced, provided any later write acknowledged without the flag makes it durable too (the file
   * store commits it unsynced, and its next synced commit syncs the file; PostgreSQL commits it with
   * `synchronous_commit` off, and a later commit's WAL flush covers it); the memory store ignores it.
   */
  write(batch: { checks?: Check[]; ops: Op[]; deferSync?: boolean }): Promise<WriteResult>

  getTenant(id: string): Promise<Tenant | null>
  /** Whether the store holds any tenant at all (a fresh store holds none). */
  hasTenants(): Promise<boolean>
  /** Every tenant, ordered by id (for key rotation and checks over all tenants). */
  listTenants(): Promise<Tenant[]>
  /** The application or session whose key hashes (SHA-256, hex) to `keyHash`, in any tenant. */
  findKey(keyHash: string): Promise<KeyOwner | null>
  getApplication(tenantId: string, id: string): Promise<StoredApplication | null>
  /** Applications of a tenant ordered by `created_at`, then `id`, restricted to `ids` when given (non-empty). */
  listApplications(tenantId: string, query: Range & { ids?: string[] }): Promise<Page<StoredApplication>>

  /** A token by id, expired or not (the service decides what expiry means). */
  getToken(tenantId: string, id: string): Promise<StoredToken | null>
  hasAssociation(tenantId: string, parentId: string, childId: string): Promise<boolean>
  /**
   * Every link `tokenId` is part of, as parent or as child, whether or not the tokens exist, in no
   * promised order: what the core deletes with the token (guarded by `links.within`). SQL: two
   * index reads (`parent_id = $2`, `child_id = $2`); DynamoDB: a Query of the token's link items;
   * Redis: `SMEMBERS` of the token's two link sets.
   */
  listLinks(tenantId: string, tokenId: string): Promise<Association[]>
  /**
   * Children of `parentId` in the order their associations were made, skipping absent tokens and
   * tokens whose `expires_at <= now`, restricted to `ids` and `types` when given (non-empty).
   *
   * These are plain field filters on the child record, applied before paging so a page is full:
   * no visibility rule is decided here. Which parent the caller may list, what a transaction
   * stages over the committed children, and whether the caller may see each child are decided by
   * the core. SQL: a join of the link index to the token rows with
   * `WHERE (expires_at IS NULL OR expires_at > $now) AND type = ANY($types)`; DynamoDB: a Query on
   * the parent's link partition in link order, then a `BatchGetItem` of those children, filtered on
   * the two fields, continuing until the page is full; Redis: a sorted set of links per parent by
   * link order, then `MGET` of the children, filtered the same way. A page ends before the child
   * that would take its sealed `data` and `mask` past 4 MiB (`STORE_PAGE_BYTES` of
   * `src/store/stored-bytes.ts`), as `listTokens` does; the core answers a v1 page that came back
   * short with a 400 naming the bound.
   */
  listChildren(
    tenantId: string,
    parentId: string,
    query: Range & { ids?: string[]; types?: string[]; now: string },
  ): Promise<Page<StoredToken>>

  /**
   * Tokens of a tenant ordered by id (code-point order), skipping tokens whose `expires_at <= now`,
   * restricted to `ids` and `types` when given (non-empty) and to `fingerprint` when given: plain
   * field filters, as `listChildren` (SQL: an index on tenant and fingerprint serves the last).
   * SQL: `WHERE tenant_id = $1 AND (expires_at IS NULL OR expires_at > $now) ORDER BY id COLLATE "C"`
   * over the primary key; DynamoDB: a Query on the tenant's partition; Redis: a sorted set of ids.
   * The offset page of v1 lists, whose `total` may cost a count but never a decryption: it hands
   * back only the page's records. Keyset walks (v2 lists, searches) read `findTokenIds` instead.
   * A page ends before the token that would take its sealed `data` and `mask` past 4 MiB
   * (`STORE_PAGE_BYTES` of `src/store/stored-bytes.ts`).
   */
  listTokens(
    tenantId: string,
    query: Range & { ids?: string[]; types?: string[]; fingerprint?: string; now: string },
  ): Promise<Page<StoredToken>>

  /**
   * Keyset read of an index: at most `limit` ids of the tenant's tokens, in id order (code-unit
   * order, as `listTokens`), strictly after `after` when given, that carry `term` (every token
   * when `term` is absent). Expired tokens are not skipped: the core reads their heads and decides.
   * Costs what it answers: a store never reads the tokens or the whole index to answer.
   * SQL: `SELECT id FROM token_terms WHERE tenant_id = $1 AND kind = $2 AND name = $3 AND value = $4
   * AND id > $5 ORDER BY id LIMIT $6` over its primary key (a side table kept with each token
   * write), or the tokens' primary key for `id` and for no term; LMDB: a range read of an ordered
   * database keyed `tenant ‖ term ‖ id` from `tenant ‖ term ‖ after`; DynamoDB: a Query of a
   * term item collection (partition `tenant#term`, sort key the id) with
   * `ExclusiveStartKey`; Redis: `ZRANGE term-key (after + BYLEX LIMIT 0 limit`.
   */
  findTokenIds(
    tenantId: string,
    query: { term?: TokenTerm; after?: string; limit: number },
  ): Promise<string[]>

  /**
   * Keyset read of a parent's links: at most `limit` children of `parentId` in link order (as
   * `listChildren`), strictly after the link whose `key` is `after` when given. Absent and expired
   * children are not skipped. SQL: `SELECT child_id, seq FROM associations WHERE tenant_id = $1
   * AND parent_id = $2 AND seq > $3 ORDER BY seq LIMIT $4` over the parent index; LMDB: a range
   * read of `tenant ‖ parent ‖ seq`; DynamoDB: a Query of the parent's link partition by sort key.
   */
  findChildIds(
    tenantId: string,
    parentId: string,
    query: { after?: string; limit: number },
  ): Promise<ChildKey[]>

  /**
   * The heads (plain fields, no `data` or `mask`) of the tenant's tokens among `ids` that exist,
   * expired or not, in the order of `ids` (duplicates answered once). Never decrypts anything.
   * SQL: `SELECT doc - 'data' - 'mask' … WHERE tenant_id = $1 AND id = ANY ($2)`; DynamoDB:
   * `BatchGetItem` with a projection; LMDB: one `get` per id.
   */
  getTokenHeads(tenantId: string, ids: readonly string[]): Promise<TokenHead[]>

  /**
   * The whole records of the tenant's tokens among `ids` that exist, expired or not, in the order
   * of `ids` (duplicates answered once): what the core reads once it knows it answers them (the
   * sealed store decrypts exactly these). SQL: `… WHERE tenant_id = $1 AND id = ANY ($2)`.
   */
  getTokens(tenantId: string, ids: readonly string[]): Promise<StoredToken[]>

  getTransaction(tenantId: string, id: string): Promise<StoredTransaction | null>

  /**
   * Keyset read of a tenant's transactions in id order (code-unit order), strictly after `after`
   * when given, at most `limit`, in any state: what the key lifecycle walks to find the staged
   * writes it re-seals. SQL: `… WHERE tenant_id = $1 AND id > $2 ORDER BY id COLLATE "C" LIMIT $3`
   * over the primary key; LMDB: a range read of `tenant ‖ id`.
   */
  listTransactions(tenantId: string, query: { after?: string; limit: number }): Promise<StoredTransaction[]>

  /**
   * The staged records of transaction `transactionId` over the tokens among `tokenIds` that it
   * staged, in the order of `tokenIds` (duplicates answered once). SQL: `… WHERE tenant_id = $1 AND
   * transaction_id = $2 AND token_id = ANY ($3)` over the primary key; LMDB: one `get` per id.
   */
  getStaged(tenantId: string, transactionId: string, tokenIds: readonly string[]): Promise<StagedWrite[]>

  /**
   * Keyset read of a transaction's staged records: at most `limit`, in token id order (code-unit
   * order), strictly after token id `after` when given. What a commit, rollback or expiry reads
   * (page after page) and what the core's view merges into a walk in id order. SQL: `… WHERE
   * tenant_id = $1 AND transaction_id = $2 AND token_id > $3 ORDER BY token_id LIMIT $4` over the
   * primary key; LMDB: a range read of `tenant ‖ transaction ‖ token`.
   */
  listStaged(
    tenantId: string,
    transactionId: string,
    query: { after?: string; limit: number },
  ): Promise<StagedWrite[]>

  getSessionByNonce(tenantId: string, nonceHash: string): Promise<StoredSession | null>

  /** A formula visible to the tenant: its own private one or an official one (`tenantId` null: official only). */
  getFormula(tenantId: string | null, id: string): Promise<StoredFormula | null>
  /**
   * Formulas visible to the tenant ordered by name, then id. `name` filters case-insensitively:
   * `*` matches any run of characters; without `*` the name must contain the filter.
   */
  listFormulas(tenantId: string, query: Range & { name?: string }): Promise<Page<StoredFormula>>
  getReactor(tenantId: string, id: string): Promise<Reactor | null>
  /**
   * Reactors of a tenant ordered by `created_at`, then `id`; `name` filters as in `listFormulas`,
   * `ids` (when non-empty) keeps only those ids.
   */
  listReactors(tenantId: string, query: ReactorQuery): Promise<Page<Reactor>>

  /** An idempotency record by id, expired or not (the service decides what expiry means). */
  getIdempotency(tenantId: string, id: string): Promise<IdempotencyRecord | null>
  /**
   * Keyset read of a tenant's idempotency records in id order (code-unit order), strictly after
   * `after` when given, at most `limit`, expired or not: what the key lifecycle walks to re-seal the
   * kept answers. SQL: `… WHERE tenant_id = $1 AND id > $2 ORDER BY id COLLATE "C" LIMIT $3` over
   * the primary key; LMDB: a range read of `tenant ‖ id`.
   */
  listIdempotency(tenantId: string, query: { after?: string; limit: number }): Promise<IdempotencyRecord[]>

  /**
   * How many records of `kind` the tenant holds (see `CountedKind`), exactly as of some moment
   * between the call and its answer: what the core bounds each tenant's records by. Costs O(1) or
   * one index lookup, never a scan of the tenant's records: a store keeps the count beside the
   * records, in the same atomic write that puts or deletes one (memory: the size of the tenant's map
   * and a counter; LMDB: a counter record per tenant and kind written in the record's transaction;
   * SQL: a row per tenant and kind kept by a trigger, or a counter updated in the write's own
   * transaction; DynamoDB: an `ADD` on a counter item in the same `TransactWriteItems`).
   */
  countRecords(tenantId: string, kind: CountedKind): Promise<number>

  /**
   * At most `limit` records of `kind` whose time has come (see `ExpiringKind`), in no promised
   * order: the core reads each, decides, and deletes or changes it with a guarded `write`, batch
   * after batch, until a batch comes back short. A store serves this from an index on the time field
   * (SQL: `WHERE expires_at <= $1 LIMIT $2` over a partial index), never by loading every record.
   */
  listExpired(query: { kind: ExpiringKind; before: string; limit: number }): Promise<RecordKey[]>

  /** A pre-configured proxy by id, or null. */
  getProxy(tenantId: string, id: string): Promise<StoredProxy | null>
  /** Proxies of a tenant ordered by `created_at`, then `id`; `ids` (when non-empty) keeps only those ids. */
  listProxies(tenantId: string, query: Range & { ids?: string[] }): Promise<Page<StoredProxy>>
  /** A client encryption key by id, expired or not (the service decides what expiry means), or null. */
  getClientKey(tenantId: string, id: string): Promise<StoredClientKey | null>
  /** Client encryption keys of a tenant ordered by `created_at`, then `id` (a tenant holds a handful: the core bounds them). */
  listClientKeys(tenantId: string, query: Range): Promise<Page<StoredClientKey>>
  /** A token intent by id, expired or not (the service decides what expiry means), or null. */
  getTokenIntent(tenantId: string, id: string): Promise<StoredTokenIntent | null>
  /**
   * Keyset read of a tenant's token intents in id order (code-unit order), strictly after `after`
   * when given, at most `limit`, expired or not: what the key lifecycle walks to re-seal them.
   * SQL: `… WHERE tenant_id = $1 AND id > $2 ORDER BY id COLLATE "C" LIMIT $3`; LMDB: a range read.
   */
  listTokenIntents(tenantId: string, query: { after?: string; limit: number }): Promise<StoredTokenIntent[]>
  /**
   * Keyset read of a tenant's document heads in id order (code-unit order), strictly after `after`
   * when given, at most `limit`, in any state: what the key lifecycle walks. SQL: `… WHERE
   * tenant_id = $1 AND id > $2 ORDER BY id COLLATE "C" LIMIT $3`; LMDB: a range read of `tenant ‖ id`.
   */
  listDocuments(tenantId: string, query: { after?: string; limit: number }): Promise<StoredDocument[]>
  /** A document's head by id, in any state, or null. */
  getDocument(tenantId: string, id: string): Promise<StoredDocument | null>
  /**
   * Chunk `index` of a document, or null: one record read (SQL: the primary key; LMDB: one `get`),
   * so a download holds one chunk at a time.
   */
  getDocumentChunk(tenantId: string, documentId: string, index: number): Promise<StoredDocumentChunk | null>
  /** A webhook by id, or null. */
  getWebhook(tenantId: string, id: string): Promise<StoredWebhook | null>
  /** Webhooks of a tenant ordered by `created_at`, then `id` (a tenant holds a handful: the core bounds them). */
  listWebhooks(tenantId: string, query: Range): Promise<Page<StoredWebhook>>
  /** An outbox entry by id, or null. */
  getOutbox(tenantId: string, id: string): Promise<OutboxEntry | null>
  /**
   * Keyset read of a tenant's outbox entries in id order (the order its writes made them), strictly
   * after `after` when given, at most `limit`. SQL: `… WHERE tenant_id = $1 AND id > $2 ORDER BY id
   * COLLATE "C" LIMIT $3` over the primary key; LMDB: a range read of `tenant ‖ id`.
   */
  listOutbox(tenantId: string, query: { after?: string; limit: number }): Promise<OutboxEntry[]>
  /**
   * At most `limit` pending outbox entries of any tenant with `due_at <= before`, by `due_at`, then
   * tenant, then id, strictly after the entry `after` names in that order when given (a keyset
   * page): what the dispatcher claims. Served from an index on `due_at` kept with each entry (SQL: a
   * partial index on `(due_at, tenant_id, id) WHERE due_at IS NOT NULL`; LMDB: a database keyed
   * `due_at ‖ tenant ‖ id`).
   */
  listDueOutbox(query: { before: string; limit: number; after?: DueKey }): Promise<OutboxEntry[]>

  /**
   * Keyset read of a tenant's audit log entries (see `LogQuery`): at most `limit`, strictly after
   * `after` in the query's order. Costs what it answers: served from an index per order (SQL:
   * `(tenant_id, created_at, id)`, `(tenant_id, entity_type, entity_id, created_at, id)` and the
   * primary key `(tenant_id, id)`; LMDB: ordered databases keyed the same way).
   */
  listLogs(tenantId: string, query: LogQuery): Promise<LogEntry[]>

  /**
   * The id of the first of `entries` (the tenant's, as `listLogs` answered them in chain order) that
   * a filtered page would not find as it is, else null: an index that misses it, or that files it
   * under another time, type or entity (LMDB: a key of `logsByTime`, `logsByType` or `logsByEntity`
   * removed; SQL: a column the indexes read that differs from the entry). `verifyLogs` asks it of
   * every page: an entry hidden from `GET /logs?entity_id=…` while its MAC still holds is a break.
   * Costs the entries asked about.
   */
  unindexedLog(tenantId: string, entries: readonly LogEntry[]): Promise<string | null>

  /** Every record, for tests and tools. */
  dump(): Promise<StoreDump>

  /** Flushes and releases what the store holds. Later calls fail. */
  close(): Promise<void>
}

/** The read side of the store contract: every method but `write` and `close`. */
export type StoreReads = Omit<Store, 'write' | 'close' | 'persistent'>

import type {
  Association,
  FormulaUse,
  IdempotencyRecord,
  LinkKey,
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
  TokenLock,
} from '../kernel/index.js'

// The store's write language: what the core asks a store to check and to do in one atomic write.

/**
 * One record write. A batch of these is applied atomically by `Store.write`. Each op writes only
 * the record it names (and the indexes of that record a store keeps beside it): the core writes
 * every other consequence as ops of its own, such as the lock records of a transaction and the
 * links of a deleted token (`token.delete` deletes the token alone; `association.put` puts the link
 * whether or not its tokens exist: the core guards it with `token.present`). A put of a link that
 * exists leaves it as it is, in its place in link order.
 * The core stages with `transaction.put` (the version bumped), `lock.put` and `staged.put`, and
 * commits with the staged tokens' own ops, `staged.delete` and `lock.delete`, guarded by
 * `transaction.unchanged`: no store replays, appends or derives anything.
 */
export type Op =
  | { op: 'tenant.put'; tenant: Tenant }
  /** Deletes only the tenant record: the core deletes the tenant's other records first. */
  | { op: 'tenant.delete'; id: string }
  | { op: 'application.put'; application: StoredApplication }
  | { op: 'application.delete'; tenant_id: string; id: string }
  | { op: 'token.put'; token: StoredToken }
  | { op: 'token.delete'; tenant_id: string; id: string }
  | { op: 'association.put'; association: Association }
  | { op: 'association.delete'; tenant_id: string; parent_id: string; child_id: string }
  | { op: 'transaction.put'; transaction: StoredTransaction }
  | { op: 'transaction.delete'; tenant_id: string; id: string }
  /**
   * Puts the lock record of `lock.token_id` (one per token: it replaces the one there). SQL: an
   * upsert on `(tenant_id, token_id)`; DynamoDB: a `Put` of the lock item; Redis: `HSET` of the
   * token's lock key.
   */
  | { op: 'lock.put'; lock: TokenLock }
  /** Deletes the lock record of a token (whichever transaction it names): `DELETE`, `Delete`, `DEL`. */
  | { op: 'lock.delete'; tenant_id: string; token_id: string }
  /**
   * Puts the staged record of `(tenant, transaction, token)`, replacing the one there. SQL: an upsert
   * on `(tenant_id, transaction_id, token_id)`; DynamoDB: a `Put` in the transaction's item
   * collection; Redis: `HSET` of the transaction's staged hash.
   */
  | { op: 'staged.put'; staged: StagedWrite }
  /** Deletes a staged record (absent: nothing): `DELETE` on the key, `Delete`, `HDEL`. */
  | { op: 'staged.delete'; tenant_id: string; transaction_id: string; token_id: string }
  | { op: 'session.put'; session: StoredSession }
  | { op: 'session.delete'; tenant_id: string; id: string }
  | { op: 'formula.put'; formula: StoredFormula }
  | { op: 'formula.delete'; tenant_id: string | null; id: string }
  | { op: 'reactor.put'; reactor: Reactor }
  | { op: 'reactor.delete'; tenant_id: string; id: string }
  /**
   * Puts a formula-use record (leaves one that exists as it is). SQL: an insert on the primary key
   * `(formula_id, tenant_id, reactor_id)` with `ON CONFLICT DO NOTHING`; DynamoDB: `ADD` to the
   * formula's use set; Redis: `SADD`.
   */
  | { op: 'formula_use.put'; use: FormulaUse }
  /** Deletes a formula-use record: `DELETE` on the key; DynamoDB `DELETE` from the set; Redis `SREM`. */
  | { op: 'formula_use.delete'; formula_id: string; tenant_id: string; reactor_id: string }
  | { op: 'idempotency.put'; record: IdempotencyRecord }
  | { op: 'idempotency.delete'; tenant_id: string; id: string }
  | { op: 'webhook.put'; webhook: StoredWebhook }
  /** Puts a pre-configured proxy (replacing the one with its id): SQL upsert on `(tenant_id, id)`. */
  | { op: 'proxy.put'; proxy: StoredProxy }
  /** Deletes a pre-configured proxy (absent: nothing). */
  | { op: 'proxy.delete'; tenant_id: string; id: string }
  /** Puts a client encryption key (replacing the one with its id): SQL upsert on `(tenant_id, id)`. */
  | { op: 'client_key.put'; key: StoredClientKey }
  /** Deletes a client encryption key (absent: nothing). */
  | { op: 'client_key.delete'; tenant_id: string; id: string }
  | { op: 'webhook.delete'; tenant_id: string; id: string }
  /** Puts a token intent (replacing the one with its id): SQL upsert on `(tenant_id, id)`. */
  | { op: 'token_intent.put'; intent: StoredTokenIntent }
  /** Deletes a token intent (absent: nothing). */
  | { op: 'token_intent.delete'; tenant_id: string; id: string }
  /** Puts an outbox entry (replacing the one with its id): SQL upsert on `(tenant_id, id)`. */
  | { op: 'outbox.put'; entry: OutboxEntry }
  | { op: 'outbox.delete'; tenant_id: string; id: string }
  /** Puts a document's head (replacing the one with its id): SQL upsert on `(tenant_id, id)`. */
  | { op: 'document.put'; document: StoredDocument }
  /**
   * Puts one chunk of a document's bytes (replacing the one with its index): SQL upsert on
   * `(tenant_id, document_id, index)`; a store keeps each chunk as a record of its own.
   */
  | { op: 'document_chunk.put'; chunk: StoredDocumentChunk }
  /**
   * Deletes a document's head and every chunk of it (absent: nothing): SQL `DELETE … WHERE
   * tenant_id = $1 AND document_id = $2`; LMDB: a range delete of `tenant ‖ document ‖ *`.
   */
  | { op: 'document.delete'; tenant_id: string; id: string }
  /** Puts an audit log entry (replacing the one with its id): SQL upsert on `(tenant_id, id)`. */
  | { op: 'log.put'; entry: LogEntry }
  /** Deletes an audit log entry (absent: nothing): what retention removes. */
  | { op: 'log.delete'; tenant_id: string; id: string }

/**
 * A precondition of a write, checked atomically with it. `now` is an ISO timestamp from the clock.
 * Each reads only the records it names, so a store expresses it with its engine's own primitive
 * (SQL: a boolean expression evaluated in the write's transaction after it locked those records;
 * DynamoDB: a `ConditionCheck` or condition expression in one `TransactWriteItems`; Redis: `WATCH`
 * the keys, compare, then `MULTI`/`EXEC`, or one Lua script). Whether a transaction is open and
 * unexpired, a session's nonce unused, a token visible to the caller: the core decides these on the
 * records it read, and holds the decision with a compare-and-set guard on those records.
 * - `token.absent` / `token.present`: a token with this id does (not) exist, expired or not.
 *   SQL: `[NOT] EXISTS` on the primary key; DynamoDB: `attribute_not_exists(pk)` /
 *   `attribute_exists(pk)`; Redis: `EXISTS` on the watched key.
 * - `token.unlocked`: no open, unexpired transaction other than `except` locks the token. The core
 *   writes a lock record (`lock.put`: token → holding transaction, with that transaction's
 *   `expires_at`) as it stages and deletes it as the transaction ends, so this is a field guard on
 *   one record: absent, or naming `except`, or `expires_at <= now`. SQL: `NOT EXISTS` on the lock
 *   row with those fields in the `WHERE`; DynamoDB: `attribute_not_exists(pk) OR transaction_id =
 *   :except OR expires_at <= :now` on the lock item; Redis: `HGETALL` of the watched lock key,
 *   compared before `MULTI`.
 * - `lock.held`: the token's lock record exists and names `transaction_id` (the core deletes the
 *   records its ending transaction still holds under this guard: one taken over by another
 *   transaction after it expired is not its own to delete). SQL: `EXISTS … WHERE transaction_id =
 *   $3` on the lock row's primary key; DynamoDB: `transaction_id = :tx` on the lock item; Redis:
 *   `HGET` of the watched lock key.
 * - `token.unchanged` / `transaction.unchanged` / `session.unchanged` / `application.unchanged`:
 *   the record exists and equals the given one as JSON (compare-and-set for read-modify-write; an
 *   application's keys change this way too). SQL: `WHERE doc = $1` on the primary key (or a version
 *   column); DynamoDB: `version = :read` on a version attribute the store bumps with every put;
 *   Redis: `GET` of the watched key compared with the given JSON (or a version field).
 * - `links.within`: the token is part of no link (as parent or child) beyond `links`: what the
 *   core read with `listLinks` before deleting the token with each of those links, so that a link
 *   made meanwhile makes the delete fail and start over instead of surviving as an orphan (a link
 *   made after the delete fails its own `token.present`). SQL: `NOT EXISTS (SELECT 1 FROM links
 *   WHERE tenant = $1 AND (parent = $2 OR child = $2) AND (parent, child) NOT IN (…))` over the two
 *   link indexes, serialized with link puts by the lock both take on the token (a link put names
 *   both its tokens); DynamoDB: the token's links kept as a string set on one item per token, which
 *   every link put and delete updates (`ADD`/`DELETE`) in its `TransactWriteItems`, and a
 *   `ConditionCheck` that the set equals the one read; Redis: `WATCH` the token's link set keys
 *   and compare their `SMEMBERS` before `MULTI`.
 * - `association.absent` / `association.present`: the link record by (tenant, parent, child).
 *   SQL: `[NOT] EXISTS` on that primary key; DynamoDB: `attribute_[not_]exists` on the link item;
 *   Redis: `SISMEMBER`/`HEXISTS` on the watched link key.
 * - `formula.present`: the tenant's own formula or the official one with this id exists: two keys.
 *   SQL: `EXISTS … WHERE tenant_key IN ($tenant, '')`; DynamoDB: two `ConditionCheck`s can't be
 *   OR-ed, so the core's read names which key and the store checks that one (or keeps one item per
 *   visible id); Redis: `EXISTS` on the two watched keys.
 * - `formula.unused`: no formula-use record names this formula (the core writes one per reactor
 *   of any tenant that runs it, with the reactor). SQL: `NOT EXISTS` on the use table's primary
 *   key prefix `(formula_id)`; DynamoDB: the uses kept as a string set on one item per formula
 *   (`ADD`/`DELETE` of `tenant#reactor` by the use ops), checked `attribute_not_exists(uses)`
 *   (DynamoDB removes an emptied set); Redis: `EXISTS` of the watched per-formula use set is 0.
 * - `reactor.unchanged`: as `token.unchanged`, for a reactor (the core updates and deletes a
 *   reactor under it, so that the formula-use records it writes follow the formula it read).
 * - `application.present` / `reactor.present`: the record by key, as `token.present`.
 * - `token.fingerprint_absent`: no token of the tenant with this `fingerprint` and `expires_at`
 *   absent or after `now` (what deduplication guards on). SQL: `NOT EXISTS` over an index on
 *   (tenant, fingerprint), every token put naming the fingerprint it writes in its row locks;
 *   DynamoDB: a fingerprint item per (tenant, fingerprint) naming the token, put with the token;
 *   Redis: `SMEMBERS` of the watched per-fingerprint set, then the members' expiries.
 * - `idempotency.absent`: no idempotency record with this id (as `token.absent`).
 *   `idempotency.claimed`: the record exists and its `claim` field is the given one: SQL `WHERE
 *   claim = $1`; DynamoDB `claim = :claim`; Redis `HGET` of the watched key.
 */
export type Check =
  | { check: 'token.absent' | 'token.present'; tenant_id: string; id: string }
  | { check: 'token.unlocked'; tenant_id: string; id: string; now: string; except?: string }
  | { check: 'lock.held'; tenant_id: string; token_id: string; transaction_id: string }
  | { check: 'links.within'; tenant_id: string; token_id: string; links: LinkKey[] }
  | { check: 'token.unchanged'; tenant_id: string; id: string; token: StoredToken }
  | { check: 'transaction.unchanged'; tenant_id: string; id: string; transaction: StoredTransaction }
  | {
      check: 'association.absent' | 'association.present'
      tenant_id: string
      parent_id: string
      child_id: string
    }
  | { check: 'session.unchanged'; tenant_id: string; id: string; session: StoredSession }
  | { check: 'formula.present'; tenant_id: string; id: string }
  | { check: 'formula.unused'; id: string }
  | { check: 'reactor.unchanged'; tenant_id: string; id: string; reactor: Reactor }
  | { check: 'application.present' | 'reactor.present'; tenant_id: string; id: string }
  | { check: 'application.unchanged'; tenant_id: string; id: string; application: StoredApplication }
  | { check: 'idempotency.absent'; tenant_id: string; id: string }
  | { check: 'idempotency.claimed'; tenant_id: string; id: string; claim: string }
  | { check: 'token.fingerprint_absent'; tenant_id: string; fingerprint: string; now: string }
  /** The tenant record exists and equals `tenant` as JSON (compare-and-set of its data keys). */
  | { check: 'tenant.unchanged'; tenant_id: string; tenant: Tenant }
  /** The token intent exists (as `token.present`): what converting one is guarded by, so it converts once. */
  | { check: 'token_intent.present'; tenant_id: string; id: string }
  /** The webhook exists (as `token.present`). */
  | { check: 'webhook.present'; tenant_id: string; id: string }
  /** The outbox entry exists and equals the given one as JSON (compare-and-set: a claim, a result). */
  | { check: 'outbox.unchanged'; tenant_id: string; id: string; entry: OutboxEntry }
  /** The proxy exists and equals the given one as JSON (compare-and-set: the key lifecycle's re-seal). */
  | { check: 'proxy.unchanged'; tenant_id: string; id: string; proxy: StoredProxy }
  /**
   * The tenant holds at most `max` records of `kind` (`countRecords`) before this write: a per-tenant
   * bound kept in the write itself (the core passes the bound less what the write adds).
   */
  | { check: 'count.within'; tenant_id: string; kind: BoundedKind; max: number }

/** The counts (`CountedKind`) a write may be bounded by (`count.within`). */
export type BoundedKind = 'webhook' | 'outbox.pending' | 'transaction.staged'

/** The ops of tokens and what hangs on them: links, transactions, staged writes and locks. */
export type TokenOp = Extract<
  Op,
  {
    op:
      | 'token.put'
      | 'token.delete'
      | 'association.put'
      | 'association.delete'
      | 'transaction.put'
      | 'transaction.delete'
      | 'staged.put'
      | 'staged.delete'
      | 'lock.put'
      | 'lock.delete'
  }
>

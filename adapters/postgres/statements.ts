import { insertEntriesSql } from './logs.js'
import { expiredOutboxSql } from './outbox.js'
import type { Tables } from './tables.js'

export { type Tables, tables } from './tables.js'

/** The SQL of every fixed statement the store issues (reads build theirs). */
export type Statements = ReturnType<typeof statements>

/**
 * A plain create's statement (`statements.create`), its token's term rows given by `terms` (a
 * SELECT that reads `l`): the fingerprint's lock first, then the row, the count and the terms. Every
 * part reads its rows from `l`, which yields its one row only once every lock is granted, so no
 * part writes (and holds a row lock, as the count's upsert does) while the statement waits for a
 * lock: a deduplicating create holding the lock then never waits for this one's count row.
 */
const plainCreateSql = (t: Tables, terms: string, logged = '') => `WITH l AS MATERIALIZED (
    SELECT count(*) AS n FROM (SELECT pg_advisory_xact_lock_shared(k) FROM unnest($7::bigint[]) AS k) AS x
  ), t AS (
    INSERT INTO ${t.tokens} (tenant_id, id, type, expires_at, doc) SELECT $1, $2, $3, $4, $5::jsonb FROM l
  ), c AS (
    INSERT INTO ${t.tokenCounts} AS c (tenant_id, shard, n) SELECT $1, pg_backend_pid() % 16, 1 FROM l
    ON CONFLICT (tenant_id, shard) DO UPDATE SET n = c.n + 1
  )${logged}
  INSERT INTO ${t.schema}.token_terms (tenant_id, kind, name, value, id) ${terms}`

/**
 * Plain creates of several tokens in one statement (`statements.createMany`), their term rows given
 * by `terms` (a SELECT that reads `d`, the tokens, which reads `l`, the locks), as
 * `plainCreateSql` for one.
 */
const plainCreateManySql = (t: Tables, terms: string, logged = '') => `WITH l AS MATERIALIZED (
    SELECT count(*) AS n FROM (SELECT pg_advisory_xact_lock_shared(k) FROM unnest($2::bigint[]) AS k) AS x
  ), d AS MATERIALIZED (
    SELECT e AS doc FROM l, jsonb_array_elements($1::jsonb) AS e
  ), ${tokenRowsSql(t)}${logged}
  INSERT INTO ${t.schema}.token_terms (tenant_id, kind, name, value, id) ${terms}`

/** The parts of a statement that write the tokens of `d` (their docs) and their tenants' counts. */
const tokenRowsSql = (t: Tables) => `t AS (
    INSERT INTO ${t.tokens} (tenant_id, id, type, expires_at, doc)
    SELECT doc ->> 'tenant_id', doc ->> 'id', doc ->> 'type', doc ->> 'expires_at', doc FROM d
  ), c AS (
    INSERT INTO ${t.tokenCounts} AS c (tenant_id, shard, n)
    SELECT doc ->> 'tenant_id', pg_backend_pid() % 16, count(*) FROM d GROUP BY 1
    ON CONFLICT (tenant_id, shard) DO UPDATE SET n = c.n + EXCLUDED.n
  )`

/**
 * Creates with webhook deliveries (`hookedCreate` in ops.ts) of one tenant in one statement, their
 * term rows given by `terms` (a SELECT that reads `d`), as `tv_write_many` applies them without the
 * function. `l` takes the locks in their one order (see `LockKeys.order`); `g` then reads the
 * bound (`tv_count_within`, which reads with a snapshot of its own, after the locks); every part
 * reads its rows from `g` and writes only when the bound held. Answers `ok`; false: nothing written.
 * The deliveries go in without `ON CONFLICT`: their ids are new (the core made them), and an upsert
 * fires the table's UPDATE statement trigger too (`outbox_count_updated`, its two transition tables
 * read for nothing): about a quarter of what the deliveries added to the statement. An id that is
 * there after all fails the statement whole, and the write goes through `tv_write`, which writes
 * over it (`isDeliveryConflict` in writes.ts; a group through `tv_write_many`).
 */
const hookedCreateSql = (t: Tables, terms: string) => `WITH l AS MATERIALIZED (
    SELECT count(*) AS n FROM (
      SELECT CASE WHEN s THEN pg_advisory_xact_lock_shared(k) ELSE pg_advisory_xact_lock(k) END
      FROM unnest($2::bigint[], $3::boolean[]) AS u(k, s)) AS x
  ), g AS MATERIALIZED (
    SELECT ${t.schema}.tv_count_within($6, 'outbox.pending', $7) AS ok FROM l
  ), d AS MATERIALIZED (
    SELECT e AS doc FROM g, jsonb_array_elements($1::jsonb) AS e WHERE g.ok
  ), ${tokenRowsSql(t)}, r AS (
    INSERT INTO ${t.schema}.token_terms (tenant_id, kind, name, value, id) ${terms}
  ), entries AS (
    ${insertEntriesSql(t.schema, 'g, jsonb_array_elements($4::jsonb) AS e WHERE g.ok')}
  ), deliveries AS (
    INSERT INTO ${t.schema}.outbox (tenant_id, id, due_at, expires_at, doc)
    SELECT e ->> 'tenant_id', e ->> 'id', CASE WHEN e ->> 'state' = 'pending' THEN e ->> 'due_at' END,
      CASE WHEN e ->> 'state' <> 'pending' THEN e ->> 'expires_at' END, e
    FROM g, jsonb_array_elements($5::jsonb) AS e WHERE g.ok
  )
  SELECT ok FROM g`

/**
 * The part of a plain create's statement that writes its audit entries (`$n`, a JSON array of
 * them), as `tv_write`'s `log.put_many` does: after the locks (it reads `l`); the count of entries
 * moves by the table's statement trigger (migration 16).
 */
const loggedSql = (t: Tables, n: number) => `, g AS (
    ${insertEntriesSql(t.schema, `l, jsonb_array_elements($${n}::jsonb) AS e`)}
  )`

/** The statements of plain creates (see `plainCreate` in ops.ts), with and without audit entries. */
function createStatements(t: Tables) {
  return {
    /**
     * A plain create (see `plainCreate` in ops.ts) of the usual token in one statement, as `tv_write`
     * applies it without the function: $1 tenant id, $2 token id, $3 type, $4 expires_at, $5 the
     * token (JSON), $6 its container (its one term: see `onlyContainerTerm`), $7 the lock keys (its
     * fingerprint's, or none). The locks are taken, shared, before the row is made (the INSERT reads
     * its one row from `l`); a deduplicating create, which takes its fingerprint's lock exclusive,
     * is so ordered against it. The token's own lock is not taken: its id is new (the core made
     * it), so no other write names it, and its guard `token.absent` is the primary key, which makes
     * a second INSERT of one id wait for the first and then fail with a unique violation.
     */
    create: plainCreateSql(t, `SELECT $1, 'container', '', $6, $2 FROM l`),

    /**
     * The same for a token with other terms (metadata, search indexes, several containers): its
     * terms are the rows of `token_terms_of`; $6 is unused (null).
     */
    createAny: plainCreateSql(
      t,
      `SELECT $1, x.kind, x.name, x.value, $2 FROM l, ${t.schema}.token_terms_of($5::jsonb) AS x WHERE $6::text IS NULL`,
    ),

    /**
     * Plain creates of several tokens in one statement, as `create`, each the usual token (its one
     * term its one container): $1 the tokens (a JSON array), $2 the lock keys of their fingerprints
     * (ascending, taken shared, before any row is made: every part reads `d`, which reads `l`).
     */
    createMany: plainCreateManySql(
      t,
      `SELECT doc ->> 'tenant_id', 'container', '', doc -> 'containers' ->> 0, doc ->> 'id' FROM d`,
    ),

    /** The same for tokens any of which has other terms: their terms the rows of `token_terms_of`. */
    createManyAny: plainCreateManySql(
      t,
      `SELECT d.doc ->> 'tenant_id', x.kind, x.name, x.value, d.doc ->> 'id' FROM d, ${t.schema}.token_terms_of(d.doc) AS x`,
    ),

    /**
     * `create`, `createAny`, `createMany` and `createManyAny` with the creates' audit entries
     * (`plainCreate`) written in the same statement: $8 (one token) or $3 (several) the entries,
     * a JSON array.
     */
    createLogged: plainCreateSql(t, `SELECT $1, 'container', '', $6, $2 FROM l`, loggedSql(t, 8)),
    createAnyLogged: plainCreateSql(
      t,
      `SELECT $1, x.kind, x.name, x.value, $2 FROM l, ${t.schema}.token_terms_of($5::jsonb) AS x WHERE $6::text IS NULL`,
      loggedSql(t, 8),
    ),
    createManyLogged: plainCreateManySql(
      t,
      `SELECT doc ->> 'tenant_id', 'container', '', doc -> 'containers' ->> 0, doc ->> 'id' FROM d`,
      loggedSql(t, 3),
    ),
    createManyAnyLogged: plainCreateManySql(
      t,
      `SELECT d.doc ->> 'tenant_id', x.kind, x.name, x.value, d.doc ->> 'id' FROM d, ${t.schema}.token_terms_of(d.doc) AS x`,
      loggedSql(t, 3),
    ),

    /**
     * Creates with webhook deliveries of one tenant (`hookedCreateQuery` in writes.ts), each the
     * usual token: $1 the tokens, $4 their audit entries, $5 their outbox entries (JSON arrays),
     * $2 lock keys and $3 whether each is shared (`hookedCreateNames`), $6 the tenant, $7 the most
     * pending deliveries it may hold before these. Answers `ok`: false when the bound did not hold.
     */
    createHooked: hookedCreateSql(
      t,
      `SELECT doc ->> 'tenant_id', 'container', '', doc -> 'containers' ->> 0, doc ->> 'id' FROM d`,
    ),
    /** The same for tokens any of which has other terms: their terms the rows of `token_terms_of`. */
    createHookedAny: hookedCreateSql(
      t,
      `SELECT d.doc ->> 'tenant_id', x.kind, x.name, x.value, d.doc ->> 'id' FROM d, ${t.schema}.token_terms_of(d.doc) AS x`,
    ),
  }
}

/** Builds the write and expiry statements for these tables. Placeholders are documented beside each. */
export function statements(t: Tables) {
  return {
    /**
     * $1 the checks, $2 the ops (each a JSON array; see `opArguments`), $3 lock keys (bigint[],
     * ascending), $4 whether each is shared: one `Store.write` (see `writeFunctionSql`). Answers
     * `failed`, the index of the first check that failed, or -1 when the ops were applied.
     */
    write: `SELECT ${t.schema}.tv_write($1::jsonb, $2::jsonb, $3::bigint[], $4::boolean[]) AS failed`,

    /**
     * `write` for a write the caller marks `deferSync` (a sweep's, a re-seal's): its transaction
     * commits without waiting for the WAL to be flushed (`synchronous_commit` off for it alone; the
     * setting is read at commit). What it wrote outlives the vault's process; a crash of the
     * database server can lose the last of it. A write of audit entries only (a read's) is committed
     * so too, by `logsUnsynced`. Other writes keep the server's setting.
     */
    writeUnsynced: `SELECT set_config('synchronous_commit', 'off', true) AS unsynced, ${t.schema}.tv_write($1::jsonb, $2::jsonb, $3::bigint[], $4::boolean[]) AS failed`,

    /**
     * $1 audit entries (a JSON array), of any tenants: a write of entries only (a group commit of
     * reads' entries), as `tv_write`'s `log.put_many` writes them, without the function (no guard,
     * no lock), committed as `writeUnsynced` is. The count of entries moves by the table's statement
     * trigger (migration 16).
     */
    logsUnsynced: `WITH s AS MATERIALIZED (SELECT set_config('synchronous_commit', 'off', true) AS unsynced)
    ${insertEntriesSql(t.schema, 's, jsonb_array_elements($1::jsonb) AS e')}`,

    /**
     * $1 the writes (a JSON array of [checks, ops] pairs, as `write` takes each), $2 lock keys of them
     * all (ascending), $3 whether each is shared: several `Store.write`s in one call (see
     * `writeFunctionSql`). Answers `answers`, one per write, as `write` answers `failed` (-2: a
     * deferred guard failed).
     */
    writeMany: `SELECT ${t.schema}.tv_write_many($1::jsonb, $2::bigint[], $3::boolean[]) AS answers`,

    ...createStatements(t),

    /** $1 before, $2 limit: keys of finished outbox entries past $1 (`outbox_expiry`). */
    expiredOutbox: expiredOutboxSql(t),

    /** $1 before, $2 limit: keys of idempotency records past $1 (`idempotency_by_expiry`). */
    expiredIdempotency: `SELECT tenant_id, id FROM ${t.idempotency} WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2`,

    /** $1 before, $2 limit: keys of tokens that expire at or before $1 (partial index `tokens_by_expiry`). */
    expiredTokens: `SELECT tenant_id, id FROM ${t.tokens} WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2`,
    /** $1 before, $2 limit: keys of tokens whose cvc is due at or before $1 (`tokens_by_cvc_expiry`). */
    expiredCvcs: `SELECT tenant_id, id FROM ${t.tokens}
      WHERE (doc ->> 'cvc_expires_at') COLLATE "C" <= $1 ORDER BY (doc ->> 'cvc_expires_at') COLLATE "C" LIMIT $2`,
    /** $1 before, $2 limit: keys of sessions that expire at or before $1 (`sessions_by_expiry`). */
    expiredSessions: `SELECT tenant_id, id FROM ${t.sessions} WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2`,
    /** $1 before, $2 limit: keys of applications that expire at or before $1 (`applications_by_expiry`). */
    expiredApplications: `SELECT tenant_id, id FROM ${t.applications}
      WHERE (doc ->> 'expires_at') COLLATE "C" <= $1 ORDER BY (doc ->> 'expires_at') COLLATE "C" LIMIT $2`,
    /** $1 before, $2 limit: keys of open transactions past $1 (`transactions_open_by_expiry`). */
    expiredOpenTransactions: `SELECT tenant_id, id FROM ${t.transactions}
      WHERE state = 'open' AND expires_at <= $1 ORDER BY expires_at LIMIT $2`,
    /** $1 before, $2 limit: keys of ended transactions that expire(d) at or before $1 (`transactions_ended_by_expiry`). */
    expiredEndedTransactions: `SELECT tenant_id, id FROM ${t.transactions}
      WHERE state <> 'open' AND expires_at <= $1 ORDER BY expires_at LIMIT $2`,
  }
}

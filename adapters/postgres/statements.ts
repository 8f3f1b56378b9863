import { quoteIdent } from './keys.js'

/** The schema-qualified table names of one store. */
export type Tables = ReturnType<typeof tables>

/** The qualified names of the store's tables in `schema`. */
export function tables(schema: string) {
  const s = quoteIdent(schema)
  return {
    schema: s,
    tenants: `${s}.tenants`,
    applications: `${s}.applications`,
    apiKeys: `${s}.api_keys`,
    tokens: `${s}.tokens`,
    tokenCounts: `${s}.token_counts`,
    associations: `${s}.associations`,
    transactions: `${s}.transactions`,
    stagedWrites: `${s}.staged_writes`,
    tokenLocks: `${s}.token_locks`,
    sessions: `${s}.sessions`,
    nonces: `${s}.session_nonces`,
    formulas: `${s}.formulas`,
    reactors: `${s}.reactors`,
    formulaUses: `${s}.formula_uses`,
    idempotency: `${s}.idempotency`,
  }
}

/** The SQL of every fixed statement the store issues (reads build theirs). */
export type Statements = ReturnType<typeof statements>

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
     * $1 the writes (a JSON array of [checks, ops] pairs, as `write` takes each), $2 lock keys of them
     * all (ascending), $3 whether each is shared: several `Store.write`s in one call (see
     * `writeFunctionSql`). Answers `answers`, one per write, as `write` answers `failed` (-2: a
     * deferred guard failed).
     */
    writeMany: `SELECT ${t.schema}.tv_write_many($1::jsonb, $2::bigint[], $3::boolean[]) AS answers`,

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

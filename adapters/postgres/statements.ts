import { quoteIdent } from './keys.js'

/** The schema-qualified table names of one store. */
export type Tables = ReturnType<typeof tables>

/** The qualified names of the store's tables in `schema`. */
export function tables(schema: string) {
  const s = quoteIdent(schema)
  return {
    tenants: `${s}.tenants`,
    applications: `${s}.applications`,
    apiKeys: `${s}.api_keys`,
    tokens: `${s}.tokens`,
    associations: `${s}.associations`,
    transactions: `${s}.transactions`,
    tokenLocks: `${s}.token_locks`,
    sessions: `${s}.sessions`,
    nonces: `${s}.session_nonces`,
    formulas: `${s}.formulas`,
    reactors: `${s}.reactors`,
    formulaUses: `${s}.formula_uses`,
    idempotency: `${s}.idempotency`,
  }
}

/**
 * The key hashes an application row `alias` holds, as a set-returning SQL expression: those of its
 * `keys`, or for a record from before applications held several keys, its `key_hash`.
 */
const keyHashesOf = (alias: string) => `jsonb_array_elements_text(CASE
    WHEN ${alias}.doc ? 'keys' THEN jsonb_path_query_array(${alias}.doc, '$.keys[*].key_hash')
    ELSE jsonb_build_array(${alias}.doc -> 'key_hash') END)`

/** The SQL of every fixed statement the store issues (the op statements; reads build theirs). */
export type Statements = ReturnType<typeof statements>

/** Builds the op statements for these tables. Placeholders are documented beside each. */
export function statements(t: Tables) {
  return {
    /** $1 id, $2 doc */
    tenantPut: `INSERT INTO ${t.tenants} (id, doc) VALUES ($1, $2::jsonb)
      ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc`,
    tenantDelete: `DELETE FROM ${t.tenants} WHERE id = $1`,

    /**
     * $1 tenant, $2 id, $3 sort key, $4 doc, $5 every key hash (text[]). Drops the key hashes the
     * application no longer holds, claims the new ones.
     */
    applicationPut: `WITH old_key AS (
        DELETE FROM ${t.apiKeys} WHERE NOT (key_hash = ANY ($5::text[])) AND key_hash IN (
          SELECT ${keyHashesOf('a')} FROM ${t.applications} a WHERE a.tenant_id = $1 AND a.id = $2)
      ), app AS (
        INSERT INTO ${t.applications} (tenant_id, id, sort_key, doc) VALUES ($1, $2, $3, $4::jsonb)
        ON CONFLICT (tenant_id, id) DO UPDATE SET sort_key = EXCLUDED.sort_key, doc = EXCLUDED.doc
      )
      INSERT INTO ${t.apiKeys} (key_hash, kind, tenant_id, id)
      SELECT h, 'application', $1, $2 FROM unnest($5::text[]) AS h
      ON CONFLICT (key_hash) DO UPDATE SET kind = EXCLUDED.kind, tenant_id = EXCLUDED.tenant_id, id = EXCLUDED.id`,

    /** $1 tenant, $2 id */
    applicationDelete: `WITH app AS (
        DELETE FROM ${t.applications} a WHERE a.tenant_id = $1 AND a.id = $2 RETURNING a.doc
      )
      DELETE FROM ${t.apiKeys} WHERE key_hash IN (SELECT ${keyHashesOf('app')} FROM app)`,

    /** $1 tenant, $2 id, $3 type, $4 expires_at, $5 doc */
    tokenPut: `INSERT INTO ${t.tokens} (tenant_id, id, type, expires_at, doc) VALUES ($1, $2, $3, $4, $5::jsonb)
      ON CONFLICT (tenant_id, id) DO UPDATE
      SET type = EXCLUDED.type, expires_at = EXCLUDED.expires_at, doc = EXCLUDED.doc`,

    /** $1 tenant, $2 id (the token alone: the core deletes its links with their own ops). */
    tokenDelete: `DELETE FROM ${t.tokens} WHERE tenant_id = $1 AND id = $2`,

    /** $1 tenant, $2 parent, $3 child, $4 doc. Skipped when the link exists (it keeps its place). */
    associationPut: `INSERT INTO ${t.associations} (tenant_id, parent_id, child_id, doc)
      VALUES ($1, $2, $3, $4::jsonb)
      ON CONFLICT (tenant_id, parent_id, child_id) DO NOTHING`,

    /** $1 tenant, $2 parent, $3 child */
    associationDelete: `DELETE FROM ${t.associations} WHERE tenant_id = $1 AND parent_id = $2 AND child_id = $3`,

    /** $1 tenant, $2 id, $3 state, $4 expires_at, $5 doc */
    transactionPut: `INSERT INTO ${t.transactions} (tenant_id, id, state, expires_at, doc)
      VALUES ($1, $2, $3, $4, $5::jsonb)
      ON CONFLICT (tenant_id, id) DO UPDATE
      SET state = EXCLUDED.state, expires_at = EXCLUDED.expires_at, doc = EXCLUDED.doc`,

    /** $1 tenant, $2 id */
    transactionDelete: `DELETE FROM ${t.transactions} WHERE tenant_id = $1 AND id = $2`,

    /** $1 tenant, $2 token id, $3 transaction id, $4 expires_at: a lock record, one per token. */
    lockPut: `INSERT INTO ${t.tokenLocks} (tenant_id, token_id, transaction_id, expires_at)
      VALUES ($1, $2, $3, $4)
      ON CONFLICT (tenant_id, token_id)
      DO UPDATE SET transaction_id = EXCLUDED.transaction_id, expires_at = EXCLUDED.expires_at`,

    /** $1 tenant, $2 token id */
    lockDelete: `DELETE FROM ${t.tokenLocks} WHERE tenant_id = $1 AND token_id = $2`,

    /** $1 tenant, $2 id, $3 expires_at, $4 doc, $5 key hash, $6 nonce hash. Re-points key and nonce. */
    sessionPut: `WITH old AS (
        SELECT doc ->> 'key_hash' AS key_hash, doc ->> 'nonce_hash' AS nonce_hash
        FROM ${t.sessions} WHERE tenant_id = $1 AND id = $2
      ), old_key AS (
        DELETE FROM ${t.apiKeys} WHERE key_hash <> $5::text AND key_hash IN (SELECT key_hash FROM old)
      ), old_nonce AS (
        DELETE FROM ${t.nonces}
        WHERE tenant_id = $1 AND nonce_hash <> $6::text AND nonce_hash IN (SELECT nonce_hash FROM old)
      ), session AS (
        INSERT INTO ${t.sessions} (tenant_id, id, expires_at, doc) VALUES ($1, $2, $3, $4::jsonb)
        ON CONFLICT (tenant_id, id) DO UPDATE SET expires_at = EXCLUDED.expires_at, doc = EXCLUDED.doc
      ), new_key AS (
        INSERT INTO ${t.apiKeys} (key_hash, kind, tenant_id, id) VALUES ($5, 'session', $1, $2)
        ON CONFLICT (key_hash) DO UPDATE SET kind = EXCLUDED.kind, tenant_id = EXCLUDED.tenant_id, id = EXCLUDED.id
      )
      INSERT INTO ${t.nonces} (tenant_id, nonce_hash, session_id) VALUES ($1, $6, $2)
      ON CONFLICT (tenant_id, nonce_hash) DO UPDATE SET session_id = EXCLUDED.session_id`,

    /** $1 tenant, $2 id */
    sessionDelete: `WITH session AS (
        DELETE FROM ${t.sessions} WHERE tenant_id = $1 AND id = $2
        RETURNING doc ->> 'key_hash' AS key_hash, doc ->> 'nonce_hash' AS nonce_hash
      ), old_key AS (
        DELETE FROM ${t.apiKeys} WHERE key_hash IN (SELECT key_hash FROM session)
      )
      DELETE FROM ${t.nonces} WHERE tenant_id = $1 AND nonce_hash IN (SELECT nonce_hash FROM session)`,

    /** $1 tenant key ('' for official), $2 id, $3 tenant_id (null for official), $4 lower name, $5 sort key, $6 doc */
    formulaPut: `INSERT INTO ${t.formulas} (tenant_key, id, tenant_id, name_lower, sort_key, doc)
      VALUES ($1, $2, $3, $4, $5, $6::jsonb)
      ON CONFLICT (tenant_key, id) DO UPDATE SET tenant_id = EXCLUDED.tenant_id,
        name_lower = EXCLUDED.name_lower, sort_key = EXCLUDED.sort_key, doc = EXCLUDED.doc`,

    /** $1 tenant key, $2 id */
    formulaDelete: `DELETE FROM ${t.formulas} WHERE tenant_key = $1 AND id = $2`,

    /** $1 tenant, $2 id, $3 formula id (null for inline code), $4 sort key, $5 doc, $6 lower-cased name */
    reactorPut: `INSERT INTO ${t.reactors} (tenant_id, id, formula_id, sort_key, doc, name_lower)
      VALUES ($1, $2, $3, $4, $5::jsonb, $6)
      ON CONFLICT (tenant_id, id) DO UPDATE SET formula_id = EXCLUDED.formula_id,
        sort_key = EXCLUDED.sort_key, doc = EXCLUDED.doc, name_lower = EXCLUDED.name_lower`,

    /** $1 tenant, $2 id */
    reactorDelete: `DELETE FROM ${t.reactors} WHERE tenant_id = $1 AND id = $2`,

    /** $1 formula id, $2 tenant, $3 reactor id: a formula-use record (kept as it is when there). */
    formulaUsePut: `INSERT INTO ${t.formulaUses} (formula_id, tenant_id, reactor_id) VALUES ($1, $2, $3)
      ON CONFLICT (formula_id, tenant_id, reactor_id) DO NOTHING`,

    /** $1 formula id, $2 tenant, $3 reactor id */
    formulaUseDelete: `DELETE FROM ${t.formulaUses} WHERE formula_id = $1 AND tenant_id = $2 AND reactor_id = $3`,

    /** $1 tenant, $2 id, $3 claim, $4 expires_at, $5 doc */
    idempotencyPut: `INSERT INTO ${t.idempotency} (tenant_id, id, claim, expires_at, doc)
      VALUES ($1, $2, $3, $4, $5::jsonb)
      ON CONFLICT (tenant_id, id) DO UPDATE
      SET claim = EXCLUDED.claim, expires_at = EXCLUDED.expires_at, doc = EXCLUDED.doc`,

    /** $1 tenant, $2 id */
    idempotencyDelete: `DELETE FROM ${t.idempotency} WHERE tenant_id = $1 AND id = $2`,

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

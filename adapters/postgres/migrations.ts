import type { Pool } from 'pg'
import { lockKey, quoteIdent } from './keys.js'

/** One schema change: applied once, in version order, and recorded in `tokenvault_migrations`. */
export interface Migration {
  version: number
  name: string
  /** The DDL, given the quoted schema name. */
  sql(schema: string): string
}

/**
 * The schema. Every table keeps each record's full JSON in `doc` (returned as is, so records
 * round-trip exactly) next to the key and index columns the queries need. Text keys use the "C"
 * collation (byte order, no locale) so that `<` on timestamps compares like JavaScript strings;
 * paged lists order by `sort_key` (see `sortKey`). The tenant id leads every primary key, except
 * where the contract looks across tenants: `api_keys` (`findKey`: any tenant) and `formula_uses`
 * (formula-use records, which the core writes with reactors; `formula.unused` reads any tenant's,
 * by the leading `formula_id` of the primary key; since version 7, when they replaced
 * `reactors_by_formula`).
 *
 * Indexes: primary keys serve gets by id and every check; `associations_by_parent` lists children in
 * link order (`seq`, an identity column) and `associations_by_child` unlinks a deleted token's
 * parents; `*_by_creation` and `formulas_by_name` page lists in order; `formulas_by_lower_name`
 * (on the JavaScript-lower-cased name) serves `LIKE` name filters, by range for a prefix; the
 * expiry indexes serve `listExpired` (`applications_by_expiry` on the `expires_at` of the doc,
 * `tokens_by_cvc_expiry` on a card token's `cvc_expires_at`, since version 8).
 * A `token_locks` row is a lock record: the token, the transaction holding it and that
 * transaction's `expires_at` (since version 5), so `token.unlocked` is a field guard on one row.
 * Only the `lock.put` and `lock.delete` ops write them (the core writes those as it stages and
 * ends a transaction); `token_locks_by_transaction` is from when the store released them itself.
 * `idempotency` holds idempotency records (`claim` is what `idempotency.claimed` compares);
 * reactors keep their lower-cased name (`name_lower`) for the `name` filter of `listReactors`;
 * `tokens_by_fingerprint` serves the fingerprint filter and `token.fingerprint_absent`.
 * `token_terms` (since version 9) is the exact-term index of `findTokenIds`: one row per term a
 * token carries (see `TokenTerm`: type, fingerprint, each container, each metadata entry with its
 * value lower-cased, each search-index hash), kept by a trigger on `tokens` in the token write's
 * own transaction, so a keyset page of one term is a range scan of its primary key.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'initial schema',
    sql: (s) => `
CREATE TABLE ${s}.tenants (
  id text COLLATE "C" PRIMARY KEY,
  doc jsonb NOT NULL
);
CREATE TABLE ${s}.applications (
  tenant_id text COLLATE "C" NOT NULL,
  id text COLLATE "C" NOT NULL,
  sort_key bytea NOT NULL,
  doc jsonb NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX applications_by_creation ON ${s}.applications (tenant_id, sort_key);
CREATE TABLE ${s}.api_keys (
  key_hash text COLLATE "C" PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('application', 'session')),
  tenant_id text COLLATE "C" NOT NULL,
  id text COLLATE "C" NOT NULL
);
CREATE TABLE ${s}.tokens (
  tenant_id text COLLATE "C" NOT NULL,
  id text COLLATE "C" NOT NULL,
  type text COLLATE "C",
  expires_at text COLLATE "C",
  doc jsonb NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE TABLE ${s}.associations (
  tenant_id text COLLATE "C" NOT NULL,
  parent_id text COLLATE "C" NOT NULL,
  child_id text COLLATE "C" NOT NULL,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  doc jsonb NOT NULL,
  PRIMARY KEY (tenant_id, parent_id, child_id)
);
CREATE INDEX associations_by_parent ON ${s}.associations (tenant_id, parent_id, seq);
CREATE INDEX associations_by_child ON ${s}.associations (tenant_id, child_id);
CREATE TABLE ${s}.transactions (
  tenant_id text COLLATE "C" NOT NULL,
  id text COLLATE "C" NOT NULL,
  state text COLLATE "C",
  expires_at text COLLATE "C",
  doc jsonb NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX transactions_open_by_expiry ON ${s}.transactions (expires_at) WHERE state = 'open';
CREATE TABLE ${s}.token_locks (
  tenant_id text COLLATE "C" NOT NULL,
  token_id text COLLATE "C" NOT NULL,
  transaction_id text COLLATE "C" NOT NULL,
  PRIMARY KEY (tenant_id, token_id)
);
CREATE INDEX token_locks_by_transaction ON ${s}.token_locks (tenant_id, transaction_id);
CREATE TABLE ${s}.sessions (
  tenant_id text COLLATE "C" NOT NULL,
  id text COLLATE "C" NOT NULL,
  expires_at text COLLATE "C",
  doc jsonb NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX sessions_by_expiry ON ${s}.sessions (expires_at);
CREATE TABLE ${s}.session_nonces (
  tenant_id text COLLATE "C" NOT NULL,
  nonce_hash text COLLATE "C" NOT NULL,
  session_id text COLLATE "C" NOT NULL,
  PRIMARY KEY (tenant_id, nonce_hash)
);
CREATE TABLE ${s}.formulas (
  tenant_key text COLLATE "C" NOT NULL,
  id text COLLATE "C" NOT NULL,
  tenant_id text COLLATE "C",
  name_lower text COLLATE "C" NOT NULL,
  sort_key bytea NOT NULL,
  doc jsonb NOT NULL,
  PRIMARY KEY (tenant_key, id)
);
CREATE INDEX formulas_by_name ON ${s}.formulas (tenant_id, sort_key);
CREATE INDEX formulas_by_lower_name ON ${s}.formulas (tenant_id, name_lower);
CREATE TABLE ${s}.reactors (
  tenant_id text COLLATE "C" NOT NULL,
  id text COLLATE "C" NOT NULL,
  formula_id text COLLATE "C",
  sort_key bytea NOT NULL,
  doc jsonb NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX reactors_by_creation ON ${s}.reactors (tenant_id, sort_key);
CREATE INDEX reactors_by_formula ON ${s}.reactors (formula_id);
`,
  },
  {
    version: 2,
    name: 'expiry listing indexes',
    sql: (s) => `
CREATE INDEX tokens_by_expiry ON ${s}.tokens (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX transactions_ended_by_expiry ON ${s}.transactions (expires_at) WHERE state <> 'open';
`,
  },
  {
    version: 3,
    name: 'application expiry index',
    sql: (s) => `
CREATE INDEX applications_by_expiry ON ${s}.applications (((doc ->> 'expires_at') COLLATE "C"))
  WHERE doc ->> 'expires_at' IS NOT NULL;
`,
  },
  {
    version: 4,
    name: 'idempotency records, reactor names',
    sql: (s) => `
CREATE TABLE ${s}.idempotency (
  tenant_id text COLLATE "C" NOT NULL,
  id text COLLATE "C" NOT NULL,
  claim text COLLATE "C" NOT NULL,
  expires_at text COLLATE "C" NOT NULL,
  doc jsonb NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX idempotency_by_expiry ON ${s}.idempotency (expires_at);
ALTER TABLE ${s}.reactors ADD COLUMN name_lower text COLLATE "C";
UPDATE ${s}.reactors SET name_lower = lower(doc ->> 'name');
`,
  },
  {
    version: 5,
    name: 'token locks carry their expiry',
    sql: (s) => `
ALTER TABLE ${s}.token_locks ADD COLUMN expires_at text COLLATE "C";
UPDATE ${s}.token_locks l SET expires_at = x.expires_at FROM ${s}.transactions x
  WHERE x.tenant_id = l.tenant_id AND x.id = l.transaction_id AND x.state = 'open';
DELETE FROM ${s}.token_locks WHERE expires_at IS NULL;
ALTER TABLE ${s}.token_locks ALTER COLUMN expires_at SET NOT NULL;
`,
  },
  {
    version: 6,
    name: 'token fingerprint index',
    sql: (s) => `
CREATE INDEX tokens_by_fingerprint ON ${s}.tokens (tenant_id, ((doc ->> 'fingerprint') COLLATE "C"));
`,
  },
  {
    version: 7,
    name: 'formula-use records',
    sql: (s) => `
CREATE TABLE ${s}.formula_uses (
  formula_id text COLLATE "C" NOT NULL,
  tenant_id text COLLATE "C" NOT NULL,
  reactor_id text COLLATE "C" NOT NULL,
  PRIMARY KEY (formula_id, tenant_id, reactor_id)
);
INSERT INTO ${s}.formula_uses (formula_id, tenant_id, reactor_id)
  SELECT formula_id, tenant_id, id FROM ${s}.reactors WHERE formula_id IS NOT NULL;
DROP INDEX ${s}.reactors_by_formula;
`,
  },
  {
    version: 8,
    name: 'token cvc expiry index',
    sql: (s) => `
CREATE INDEX tokens_by_cvc_expiry ON ${s}.tokens (((doc ->> 'cvc_expires_at') COLLATE "C"))
  WHERE doc ->> 'cvc_expires_at' IS NOT NULL;
`,
  },
  {
    version: 9,
    name: 'token term index',
    sql: (s) => `
CREATE TABLE ${s}.token_terms (
  tenant_id text COLLATE "C" NOT NULL,
  kind text COLLATE "C" NOT NULL,
  name text COLLATE "C" NOT NULL,
  value text COLLATE "C" NOT NULL,
  id text COLLATE "C" NOT NULL,
  PRIMARY KEY (tenant_id, kind, name, value, id)
);
CREATE INDEX token_terms_by_token ON ${s}.token_terms (tenant_id, id);
CREATE FUNCTION ${s}.token_terms_of(doc jsonb) RETURNS TABLE (kind text, name text, value text)
LANGUAGE sql IMMUTABLE AS $$
  SELECT 'type', '', doc ->> 'type' WHERE doc ->> 'type' IS NOT NULL
  UNION SELECT 'fingerprint', '', doc ->> 'fingerprint' WHERE doc ->> 'fingerprint' IS NOT NULL
  UNION SELECT 'container', '', c FROM jsonb_array_elements_text(
    CASE WHEN jsonb_typeof(doc -> 'containers') = 'array' THEN doc -> 'containers' ELSE '[]' END) c
  UNION SELECT 'metadata', m.key, lower(m.value) FROM jsonb_each_text(
    CASE WHEN jsonb_typeof(doc -> 'metadata') = 'object' THEN doc -> 'metadata' ELSE '{}' END) m
    WHERE m.value IS NOT NULL
  UNION SELECT 'search_index', '', h FROM jsonb_array_elements_text(
    CASE WHEN jsonb_typeof(doc -> 'search_index_hashes') = 'array' THEN doc -> 'search_index_hashes'
    ELSE '[]' END) h
$$;
CREATE FUNCTION ${s}.token_terms_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.doc IS NOT DISTINCT FROM NEW.doc THEN RETURN NULL; END IF;
  IF TG_OP <> 'INSERT' THEN
    DELETE FROM ${s}.token_terms WHERE tenant_id = OLD.tenant_id AND id = OLD.id;
  END IF;
  IF TG_OP <> 'DELETE' THEN
    INSERT INTO ${s}.token_terms (tenant_id, kind, name, value, id)
    SELECT NEW.tenant_id, t.kind, t.name, t.value, NEW.id FROM ${s}.token_terms_of(NEW.doc) t
    ON CONFLICT DO NOTHING;
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER token_terms_sync AFTER INSERT OR UPDATE OR DELETE ON ${s}.tokens
  FOR EACH ROW EXECUTE FUNCTION ${s}.token_terms_sync();
INSERT INTO ${s}.token_terms (tenant_id, kind, name, value, id)
  SELECT k.tenant_id, t.kind, t.name, t.value, k.id FROM ${s}.tokens k, ${s}.token_terms_of(k.doc) t
  ON CONFLICT DO NOTHING;
`,
  },
]

/**
 * Creates `schema` if missing and applies the migrations it lacks, each in its own transaction.
 * Idempotent, and safe when several processes open the same database at once: it holds a
 * session-level advisory lock (derived from the schema name) while it reads and migrates. Refuses a
 * schema migrated by a newer version of this library.
 */
export async function migrate(pool: Pool, schema: string): Promise<void> {
  const s = quoteIdent(schema)
  const key = lockKey(`tokenvault\u0000migrate\u0000${schema}`)
  const client = await pool.connect()
  let broken: Error | undefined
  try {
    await client.query(`SELECT pg_advisory_lock(${key})`)
    try {
      const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])
      if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${s}`)
      await client.query(`CREATE TABLE IF NOT EXISTS ${s}.tokenvault_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`)
      const { rows } = await client.query<{ version: number }>(
        `SELECT version FROM ${s}.tokenvault_migrations`,
      )
      const applied = new Set(rows.map((r) => r.version))
      const latest = Math.max(0, ...MIGRATIONS.map((m) => m.version))
      const newer = rows.find((r) => r.version > latest)
      if (newer)
        throw new Error(
          `postgresStore: schema ${schema} is at version ${newer.version}, newer than ${latest}`,
        )
      for (const m of MIGRATIONS) {
        if (applied.has(m.version)) continue
        await client.query('BEGIN')
        try {
          await client.query(m.sql(s))
          await client.query(`INSERT INTO ${s}.tokenvault_migrations (version, name) VALUES ($1, $2)`, [
            m.version,
            m.name,
          ])
          await client.query('COMMIT')
        } catch (error) {
          await client.query('ROLLBACK')
          throw error
        }
      }
    } finally {
      await client.query(`SELECT pg_advisory_unlock(${key})`)
    }
  } catch (error) {
    // A client in an unknown state (and its session lock) is dropped rather than reused.
    broken = error instanceof Error ? error : new Error(String(error))
    throw error
  } finally {
    client.release(broken)
  }
}

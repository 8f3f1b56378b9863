/**
 * The tables and indexes of the store, given the quoted schema name.
 *
 * Every table keeps each record's full JSON in `doc` (returned as is, so records round-trip exactly)
 * next to the key and index columns the queries need. Text keys use the "C" collation (byte order,
 * no locale) so that `<` on timestamps compares like JavaScript strings; paged lists order by
 * `sort_key` (see `sortKey`). The tenant id leads every primary key, except where the contract looks
 * across tenants: `api_keys` (`findKey`: any tenant) and `formula_uses` (formula-use records, which
 * the core writes with reactors; `formula.unused` reads any tenant's, by the leading `formula_id` of
 * the primary key).
 *
 * Indexes: primary keys serve gets by id and every guard; `associations_by_parent` lists children in
 * link order (`seq`, an identity column) and `associations_by_child` finds a token's parents;
 * `*_by_creation` and `formulas_by_name` page lists in order; `formulas_by_lower_name` (on the
 * JavaScript-lower-cased name) serves `LIKE` name filters, by range for a prefix; reactors keep
 * their lower-cased name (`name_lower`) for the `name` filter of `listReactors`; the expiry indexes
 * serve `listExpired` (`applications_by_expiry` on the `expires_at` of the doc,
 * `tokens_by_cvc_expiry` on a card token's `cvc_expires_at`); `tokens_by_type (tenant_id, type, id)`
 * and `tokens_by_fingerprint (tenant_id, fingerprint, id)` serve the type and fingerprint filters
 * and their keyset pages in id order, and the fingerprint index `token.fingerprint_absent` by its
 * prefix. A `token_locks` row is a lock record: the
 * token, the transaction holding it and that transaction's `expires_at`, so `token.unlocked` is a
 * field guard on one row; only the `lock.put` and `lock.delete` ops write them. A `staged_writes`
 * row is a transaction's staged write over one token (`StagedWrite`): its primary key, led by
 * `(tenant_id, transaction_id)`, serves `getStaged` by key and `listStaged` as a range scan in
 * token id order. `token_counts` holds each tenant's token count, kept (as the terms below) in the
 * token write's own transaction, split over up to 16 rows per tenant (the row of the writing
 * connection, `pg_backend_pid() % 16`: a write adds to one row only, so concurrent creates of one
 * tenant rarely wait on each other and never deadlock on them); an unfiltered v1 `total_items` is
 * their sum less the tenant's expired tokens, read from `tokens_by_tenant_expiry`
 * `(tenant_id, expires_at)` as an index range; that index holds only tokens with an expiry (what
 * `expires_at <= now` reads), so a create without one writes no entry to it. `idempotency` holds
 * idempotency records (`claim` is what `idempotency.claimed` compares). `token_terms` is the
 * exact-term index of `findTokenIds` for the terms not read from an index on `tokens`: one row per
 * container, metadata entry (its value lower-cased) and search-index hash a token carries, so a
 * keyset page of one term is a range scan of its primary key. Terms and counts change in the token
 * write's own transaction: `tv_write` inserts a new token with its terms and adds one to its
 * tenant's count itself (see `insertToken` in write-function.ts: the usual token in one statement,
 * no trigger to run), as a plain create's own statement does (`create`, `createAny`,
 * `createMany`, `createManyAny` in statements.ts), and one row trigger on `tokens` (`token_sync`)
 * keeps the rest. When a doc changes, its old terms are deleted and the new ones inserted
 * (`token_terms_of` yields each once, and the old ones are gone first, so the insert needs no
 * conflict check); a deleted token's terms go and its tenant's count loses one. The old terms are
 * exactly `token_terms_of(OLD.doc)`, so each is deleted through the primary key: no second index on
 * `token_terms` to write on every create.
 */
export const tablesSql = (s: string) => `
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
CREATE INDEX applications_by_expiry ON ${s}.applications (((doc ->> 'expires_at') COLLATE "C"))
  WHERE doc ->> 'expires_at' IS NOT NULL;
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
CREATE INDEX tokens_by_expiry ON ${s}.tokens (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX tokens_by_tenant_expiry ON ${s}.tokens (tenant_id, expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX tokens_by_type ON ${s}.tokens (tenant_id, type, id);
CREATE INDEX tokens_by_fingerprint ON ${s}.tokens (tenant_id, ((doc ->> 'fingerprint') COLLATE "C"), id);
CREATE INDEX tokens_by_cvc_expiry ON ${s}.tokens (((doc ->> 'cvc_expires_at') COLLATE "C"))
  WHERE doc ->> 'cvc_expires_at' IS NOT NULL;
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
CREATE INDEX transactions_ended_by_expiry ON ${s}.transactions (expires_at) WHERE state <> 'open';
CREATE TABLE ${s}.staged_writes (
  tenant_id text COLLATE "C" NOT NULL,
  transaction_id text COLLATE "C" NOT NULL,
  token_id text COLLATE "C" NOT NULL,
  doc jsonb NOT NULL,
  PRIMARY KEY (tenant_id, transaction_id, token_id)
);
CREATE TABLE ${s}.token_locks (
  tenant_id text COLLATE "C" NOT NULL,
  token_id text COLLATE "C" NOT NULL,
  transaction_id text COLLATE "C" NOT NULL,
  expires_at text COLLATE "C" NOT NULL,
  PRIMARY KEY (tenant_id, token_id)
);
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
  name_lower text COLLATE "C",
  doc jsonb NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX reactors_by_creation ON ${s}.reactors (tenant_id, sort_key);
CREATE TABLE ${s}.formula_uses (
  formula_id text COLLATE "C" NOT NULL,
  tenant_id text COLLATE "C" NOT NULL,
  reactor_id text COLLATE "C" NOT NULL,
  PRIMARY KEY (formula_id, tenant_id, reactor_id)
);
CREATE TABLE ${s}.idempotency (
  tenant_id text COLLATE "C" NOT NULL,
  id text COLLATE "C" NOT NULL,
  claim text COLLATE "C" NOT NULL,
  expires_at text COLLATE "C" NOT NULL,
  doc jsonb NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX idempotency_by_expiry ON ${s}.idempotency (expires_at);
CREATE TABLE ${s}.token_terms (
  tenant_id text COLLATE "C" NOT NULL,
  kind text COLLATE "C" NOT NULL,
  name text COLLATE "C" NOT NULL,
  value text COLLATE "C" NOT NULL,
  id text COLLATE "C" NOT NULL,
  PRIMARY KEY (tenant_id, kind, name, value, id)
);
CREATE FUNCTION ${s}.token_terms_of(doc jsonb) RETURNS TABLE (kind text, name text, value text)
LANGUAGE sql IMMUTABLE AS $$
  SELECT 'container', '', c FROM jsonb_array_elements_text(
    CASE WHEN jsonb_typeof(doc -> 'containers') = 'array' THEN doc -> 'containers' ELSE '[]' END) c
  UNION SELECT 'metadata', m.key, lower(m.value) FROM jsonb_each_text(
    CASE WHEN jsonb_typeof(doc -> 'metadata') = 'object' THEN doc -> 'metadata' ELSE '{}' END) m
    WHERE m.value IS NOT NULL
  UNION SELECT 'search_index', '', h FROM jsonb_array_elements_text(
    CASE WHEN jsonb_typeof(doc -> 'search_index_hashes') = 'array' THEN doc -> 'search_index_hashes'
    ELSE '[]' END) h
$$;
CREATE TABLE ${s}.token_counts (
  tenant_id text COLLATE "C" NOT NULL,
  shard integer NOT NULL,
  n bigint NOT NULL,
  PRIMARY KEY (tenant_id, shard)
);
CREATE FUNCTION ${s}.token_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.doc IS NOT DISTINCT FROM NEW.doc THEN RETURN NULL; END IF;
  -- The old doc's terms are exactly the rows it was given: each found by the primary key.
  DELETE FROM ${s}.token_terms d USING ${s}.token_terms_of(OLD.doc) t
  WHERE d.tenant_id = OLD.tenant_id AND d.kind = t.kind AND d.name = t.name AND d.value = t.value
    AND d.id = OLD.id;
  IF TG_OP = 'UPDATE' THEN
    INSERT INTO ${s}.token_terms (tenant_id, kind, name, value, id)
    SELECT NEW.tenant_id, t.kind, t.name, t.value, NEW.id FROM ${s}.token_terms_of(NEW.doc) t;
  ELSE
    INSERT INTO ${s}.token_counts AS c (tenant_id, shard, n) VALUES (OLD.tenant_id, pg_backend_pid() % 16, -1)
    ON CONFLICT (tenant_id, shard) DO UPDATE SET n = c.n - 1;
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER token_sync AFTER UPDATE OR DELETE ON ${s}.tokens
  FOR EACH ROW EXECUTE FUNCTION ${s}.token_sync();
`

/**
 * `token_sync` again, each old term deleted by its primary key in a loop: the join of
 * `token_terms` with `token_terms_of(OLD.doc)` above was planned as a scan of the whole
 * `token_terms` table (the function's rows estimated at 300, the scan's at 1), so every update or
 * delete of a token read every token's terms (about 1.3 ms at 5 000 rows, growing with them);
 * each lookup now reads one index entry (0.08 ms). Schema step 14.
 */
export const tokenSyncByKeySql = (s: string) => `
CREATE OR REPLACE FUNCTION ${s}.token_sync() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE _t record;
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.doc IS NOT DISTINCT FROM NEW.doc THEN RETURN NULL; END IF;
  -- The old doc's terms are exactly the rows it was given: each deleted by the primary key.
  FOR _t IN SELECT * FROM ${s}.token_terms_of(OLD.doc) LOOP
    DELETE FROM ${s}.token_terms WHERE tenant_id = OLD.tenant_id AND kind = _t.kind AND name = _t.name
      AND value = _t.value AND id = OLD.id;
  END LOOP;
  IF TG_OP = 'UPDATE' THEN
    INSERT INTO ${s}.token_terms (tenant_id, kind, name, value, id)
    SELECT NEW.tenant_id, t.kind, t.name, t.value, NEW.id FROM ${s}.token_terms_of(NEW.doc) t;
  ELSE
    INSERT INTO ${s}.token_counts AS c (tenant_id, shard, n) VALUES (OLD.tenant_id, pg_backend_pid() % 16, -1)
    ON CONFLICT (tenant_id, shard) DO UPDATE SET n = c.n - 1;
  END IF;
  RETURN NULL;
END
$$;
`

/**
 * Counts that cost what they count (migration 15). `record_count` in plpgsql: a SQL-language
 * function is planned again at every call (about 150 µs an upsert), a plpgsql one once per
 * session. The two count tables keep nine tenths of each page free (`fillfactor`): every count
 * change is a new row version on the row's page, and PostgreSQL prunes a page's dead versions
 * when it reads a page short of that room, so a count's read and its next change walk a short chain
 * of versions instead of hundreds (a count read was ~300 µs after 15 000 changes).
 */
export const countsTunedSql = (s: string) => `
CREATE OR REPLACE FUNCTION ${s}.record_count(_tenant text, _kind text, _delta integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ${s}.record_counts (tenant_id, kind, shard, n)
  VALUES (_tenant, _kind, (pg_backend_pid() % 16)::smallint, _delta)
  ON CONFLICT (tenant_id, kind, shard) DO UPDATE SET n = ${s}.record_counts.n + EXCLUDED.n;
END
$$;
ALTER TABLE ${s}.record_counts SET (fillfactor = 10);
ALTER TABLE ${s}.token_counts SET (fillfactor = 10);
`

/**
 * A bound's guard read inside one statement (migration 17): whether the tenant's count of `_kind`
 * is at most `_max`. In plpgsql, so never inlined, and volatile: its query takes a snapshot of its
 * own when it runs, so a statement that took its locks first reads every write committed before it
 * held them (the statement's own snapshot is taken before it waits for them). See
 * `statements.createHooked`.
 */
export const countWithinSql = (s: string) => `
CREATE OR REPLACE FUNCTION ${s}.tv_count_within(_tenant text, _kind text, _max integer) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RETURN (SELECT coalesce(sum(n), 0) FROM ${s}.record_counts WHERE tenant_id = _tenant AND kind = _kind) <= _max;
END
$$;
`

/**
 * The per-tenant counts `countRecords` answers, given the quoted schema name:
 * `record_counts` holds, per tenant and kind (`idempotency`; `session.created`, sessions whose doc
 * is in state `created`), up to 16 rows whose `n` add up to the count, kept by triggers on
 * `idempotency` and `sessions` in the record write's own transaction. A write moves the row of its
 * connection's shard (its backend pid modulo 16), so concurrent writes of one tenant rarely wait on
 * one counter row, and a count is one index range of at most 16 rows, never a scan of the tenant's
 * records.
 */
export const countsSql = (s: string) => `
CREATE TABLE ${s}.record_counts (
  tenant_id text COLLATE "C" NOT NULL,
  kind text COLLATE "C" NOT NULL,
  shard smallint NOT NULL,
  n bigint NOT NULL,
  PRIMARY KEY (tenant_id, kind, shard)
);
CREATE FUNCTION ${s}.record_count(_tenant text, _kind text, _delta integer) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO ${s}.record_counts (tenant_id, kind, shard, n)
  VALUES (_tenant, _kind, (pg_backend_pid() % 16)::smallint, _delta)
  ON CONFLICT (tenant_id, kind, shard) DO UPDATE SET n = ${s}.record_counts.n + EXCLUDED.n
$$;
CREATE FUNCTION ${s}.idempotency_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN PERFORM ${s}.record_count(NEW.tenant_id, 'idempotency', 1);
  ELSE PERFORM ${s}.record_count(OLD.tenant_id, 'idempotency', -1);
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER idempotency_count AFTER INSERT OR DELETE ON ${s}.idempotency
  FOR EACH ROW EXECUTE FUNCTION ${s}.idempotency_count();
CREATE FUNCTION ${s}.session_count() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  _was boolean := TG_OP <> 'INSERT' AND OLD.doc ->> 'state' = 'created';
  _is boolean := TG_OP <> 'DELETE' AND NEW.doc ->> 'state' = 'created';
BEGIN
  IF _was AND NOT _is THEN PERFORM ${s}.record_count(OLD.tenant_id, 'session.created', -1);
  ELSIF _is AND NOT _was THEN PERFORM ${s}.record_count(NEW.tenant_id, 'session.created', 1);
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER session_count AFTER INSERT OR UPDATE OR DELETE ON ${s}.sessions
  FOR EACH ROW EXECUTE FUNCTION ${s}.session_count();
`

/**
 * The tenant's `transaction.staged` count (migration 21): the `staged_chars` of its open
 * transactions, kept in `record_counts` by a row trigger on `transactions` (a staging write puts
 * its transaction once, so one trigger call a write), moved by the difference between the old row
 * and the new (`stagedCharsHeld`'s rule), and filled from the open transactions the schema holds.
 */
export const stagedCountSql = (s: string) => `
CREATE OR REPLACE FUNCTION ${s}.staged_count() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  _was bigint := CASE WHEN TG_OP <> 'INSERT' AND OLD.state = 'open'
    THEN coalesce((OLD.doc ->> 'staged_chars')::bigint, 0) ELSE 0 END;
  _is bigint := CASE WHEN TG_OP <> 'DELETE' AND NEW.state = 'open'
    THEN coalesce((NEW.doc ->> 'staged_chars')::bigint, 0) ELSE 0 END;
BEGIN
  IF _is <> _was THEN
    PERFORM ${s}.record_count(coalesce(NEW.tenant_id, OLD.tenant_id), 'transaction.staged', (_is - _was)::integer);
  END IF;
  RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS staged_count ON ${s}.transactions;
CREATE TRIGGER staged_count AFTER INSERT OR UPDATE OR DELETE ON ${s}.transactions
  FOR EACH ROW EXECUTE FUNCTION ${s}.staged_count();
DELETE FROM ${s}.record_counts WHERE kind = 'transaction.staged';
INSERT INTO ${s}.record_counts (tenant_id, kind, shard, n)
SELECT tenant_id, 'transaction.staged', 0, sum(coalesce((doc ->> 'staged_chars')::bigint, 0))
FROM ${s}.transactions WHERE state = 'open' GROUP BY tenant_id
HAVING sum(coalesce((doc ->> 'staged_chars')::bigint, 0)) > 0;
`

import { clientKeyOpsSql } from './client-keys.js'
import { documentOpsSql } from './documents.js'
import { logOpsSql } from './logs.js'
import { webhookChecksSql, webhookOpsSql } from './outbox.js'
import { proxyOpsSql } from './proxies.js'
import { tokenIntentOpsSql } from './token-intents.js'

/**
 * The key hashes an application row `alias` holds, as a set-returning SQL expression: those of its
 * `keys`, or for a record that holds one key only, its `key_hash`.
 */
const keyHashesOf = (alias: string) => `jsonb_array_elements_text(CASE
    WHEN ${alias}.doc ? 'keys' THEN jsonb_path_query_array(${alias}.doc, '$.keys[*].key_hash')
    ELSE jsonb_build_array(${alias}.doc -> 'key_hash') END)`

/**
 * The plpgsql that inserts the token `_d`, adds one to its tenant's count and inserts its terms,
 * the rows of `token_terms_of(_d)` (the one statement of the terms' rule). The usual token — one
 * container, no other term — skips that function's set operations: one statement writes the row,
 * the count and its one term.
 */
const insertToken = (s: string) => `        IF (CASE WHEN jsonb_typeof(_d -> 'containers') = 'array'
            THEN jsonb_array_length(_d -> 'containers') = 1 ELSE false END)
            AND NOT coalesce(jsonb_typeof(_d -> 'metadata') = 'object' AND _d -> 'metadata' <> '{}', false)
            AND jsonb_typeof(_d -> 'search_index_hashes') IS DISTINCT FROM 'array' THEN
          WITH t AS (
            INSERT INTO ${s}.tokens (tenant_id, id, type, expires_at, doc)
            VALUES (_d ->> 'tenant_id', _d ->> 'id', _d ->> 'type', _d ->> 'expires_at', _d)
          ), c AS (
            INSERT INTO ${s}.token_counts AS c (tenant_id, shard, n)
            VALUES (_d ->> 'tenant_id', pg_backend_pid() % 16, 1)
            ON CONFLICT (tenant_id, shard) DO UPDATE SET n = c.n + 1
          )
          INSERT INTO ${s}.token_terms (tenant_id, kind, name, value, id)
          VALUES (_d ->> 'tenant_id', 'container', '', _d -> 'containers' ->> 0, _d ->> 'id');
        ELSE
          WITH t AS (
            INSERT INTO ${s}.tokens (tenant_id, id, type, expires_at, doc)
            VALUES (_d ->> 'tenant_id', _d ->> 'id', _d ->> 'type', _d ->> 'expires_at', _d)
          )
          INSERT INTO ${s}.token_counts AS c (tenant_id, shard, n)
          VALUES (_d ->> 'tenant_id', pg_backend_pid() % 16, 1)
          ON CONFLICT (tenant_id, shard) DO UPDATE SET n = c.n + 1;
          INSERT INTO ${s}.token_terms (tenant_id, kind, name, value, id)
          SELECT _d ->> 'tenant_id', t.kind, t.name, t.value, _d ->> 'id' FROM ${s}.token_terms_of(_d) t;
        END IF;`

/**
 * `tv_write(checks jsonb, ops jsonb, keys bigint[], shared boolean[]) RETURNS integer`: one
 * `Store.write` in one statement, so a write is one round trip (`SELECT s.tv_write($1, $2, $3, $4)`
 * in autocommit: the call runs in its own implicit transaction, which commits before the answer
 * comes back).
 *
 * 1. It takes the transaction-scoped advisory locks `keys` (sorted by the caller, one global order,
 *    so writes never deadlock on them), each shared where `shared` says so, else exclusive.
 * 2. It evaluates the guards `checks` (a JSON array) in order and answers the index of the first
 *    that fails (writing nothing), or goes on. A volatile plpgsql function takes a fresh snapshot for
 *    each statement it runs, so the guards read what was committed after the locks were granted: a
 *    write that conflicts with this one (names one of its records) committed before, or waits.
 * 3. It applies the `ops` (a JSON array) in order, each exactly as `MemoryState.apply` does, and
 *    answers -1.
 *
 * A first guard `token.absent` marked `deferred` (see `writeArguments`: the first op on its token is
 * its put) is not read in step 2: the put's plain INSERT checks it through the primary key, and a row
 * there fails the whole call with a unique violation (nothing written; the store answers that
 * guard). It is read in step 2 only when a later guard fails, and answered when it fails too, so
 * the answer is always the first guard that fails. A create thus runs one statement fewer.
 *
 * Why a function and not one data-modifying CTE: a single statement reads one snapshot, taken when
 * it starts, before any lock it takes in a CTE is granted; its guards could then miss a conflicting
 * write that committed while it waited (two creates of one id would both find it absent). In a
 * function, each guard runs after the locks. The statements inside are static SQL, planned once per
 * connection and cached, as prepared statements are. Guards are evaluated one statement each: one
 * statement holding every kind of guard as a CASE of subqueries was measured slower (its executor
 * starts every subquery on each call).
 *
 * Guards and ops arrive as the core's own `Check` and `Op` objects, each list one JSON array (one
 * `JSON.stringify` per list in the caller, parsed once here; a `jsonb[]` costs an array literal
 * with every element escaped, then parsed twice), plus what SQL can't derive the same way
 * JavaScript does (`opArgument`): sort keys (hex), lower-cased names and an application's key
 * hashes. A `token.put` marked `fresh` (its batch guards the token `token.absent`, under the
 * token's lock) is a plain INSERT: no row can be there. Any other put updates the row there and
 * inserts only when there is none (under the token's lock, nothing comes between). An insert writes
 * the token's terms and count with it (`insertToken`); the trigger `token_sync` keeps them on
 * update and delete.
 *
 * `tv_write_many(writes jsonb, keys bigint[], shared boolean[]) RETURNS integer[]` applies several
 * writes (`writes`: an array of `[checks, ops]` pairs) in one call and one transaction: it takes
 * the locks of all of them (`keys`, sorted as above, so calls never deadlock on them), then runs
 * each `tv_write` in a block of its own (a subtransaction): each answers as it would alone (-1 or
 * its failed guard's index; -2 when its put met the token's row, through `tokens_pkey` or
 * `token_terms_pkey`: its deferred guard),
 * and one that fails is undone alone. Any other error fails the whole call (nothing written).
 */
export const writeFunctionSql = (s: string) => `
CREATE OR REPLACE FUNCTION ${s}.tv_write(checks jsonb, ops jsonb, keys bigint[], shared boolean[])
RETURNS integer
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  _i integer;
  _c jsonb;
  _o jsonb;
  _d jsonb;
  _ok boolean;
BEGIN
  -- One statement: unnest yields the keys in array order, and each is locked as it comes.
  PERFORM CASE WHEN k.sh THEN pg_advisory_xact_lock_shared(k.key) ELSE pg_advisory_xact_lock(k.key) END
  FROM unnest(keys, shared) AS k(key, sh);

  FOR _i IN 0 .. jsonb_array_length(checks) - 1 LOOP
    _c := checks -> _i;
    CASE _c ->> 'check'
      WHEN 'token.absent' THEN
        -- Deferred (see writeArguments in ops.ts): the INSERT of its put is this guard.
        CONTINUE WHEN _c ? 'deferred';
        _ok := NOT EXISTS (SELECT 1 FROM ${s}.tokens WHERE tenant_id = _c ->> 'tenant_id' AND id = _c ->> 'id');
      WHEN 'token.present' THEN
        _ok := EXISTS (SELECT 1 FROM ${s}.tokens WHERE tenant_id = _c ->> 'tenant_id' AND id = _c ->> 'id');
      WHEN 'token.unlocked' THEN
        -- A field guard on the one lock row: rows exist only for open transactions, with their expiry.
        _ok := NOT EXISTS (SELECT 1 FROM ${s}.token_locks WHERE tenant_id = _c ->> 'tenant_id'
          AND token_id = _c ->> 'id' AND transaction_id IS DISTINCT FROM _c ->> 'except'
          AND expires_at > _c ->> 'now');
      WHEN 'lock.held' THEN
        _ok := EXISTS (SELECT 1 FROM ${s}.token_locks WHERE tenant_id = _c ->> 'tenant_id'
          AND token_id = _c ->> 'token_id' AND transaction_id = _c ->> 'transaction_id');
      WHEN 'links.within' THEN
        _ok := NOT EXISTS (SELECT 1 FROM ${s}.associations a WHERE a.tenant_id = _c ->> 'tenant_id'
          AND (a.parent_id = _c ->> 'token_id' OR a.child_id = _c ->> 'token_id')
          AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(_c -> 'links') l
            WHERE l ->> 'parent_id' = a.parent_id AND l ->> 'child_id' = a.child_id));
      WHEN 'token.unchanged' THEN
        _ok := EXISTS (SELECT 1 FROM ${s}.tokens WHERE tenant_id = _c ->> 'tenant_id' AND id = _c ->> 'id'
          AND doc = _c -> 'token');
      WHEN 'transaction.unchanged' THEN
        _ok := EXISTS (SELECT 1 FROM ${s}.transactions WHERE tenant_id = _c ->> 'tenant_id'
          AND id = _c ->> 'id' AND doc = _c -> 'transaction');
      WHEN 'association.absent' THEN
        _ok := NOT EXISTS (SELECT 1 FROM ${s}.associations WHERE tenant_id = _c ->> 'tenant_id'
          AND parent_id = _c ->> 'parent_id' AND child_id = _c ->> 'child_id');
      WHEN 'association.present' THEN
        _ok := EXISTS (SELECT 1 FROM ${s}.associations WHERE tenant_id = _c ->> 'tenant_id'
          AND parent_id = _c ->> 'parent_id' AND child_id = _c ->> 'child_id');
      WHEN 'session.unchanged' THEN
        _ok := EXISTS (SELECT 1 FROM ${s}.sessions WHERE tenant_id = _c ->> 'tenant_id' AND id = _c ->> 'id'
          AND doc = _c -> 'session');
      WHEN 'formula.present' THEN
        _ok := EXISTS (SELECT 1 FROM ${s}.formulas WHERE tenant_key IN (_c ->> 'tenant_id', '')
          AND id = _c ->> 'id');
      WHEN 'formula.unused' THEN
        _ok := NOT EXISTS (SELECT 1 FROM ${s}.formula_uses WHERE formula_id = _c ->> 'id');
      WHEN 'reactor.unchanged' THEN
        _ok := EXISTS (SELECT 1 FROM ${s}.reactors WHERE tenant_id = _c ->> 'tenant_id' AND id = _c ->> 'id'
          AND doc = _c -> 'reactor');
      WHEN 'application.present' THEN
        _ok := EXISTS (SELECT 1 FROM ${s}.applications WHERE tenant_id = _c ->> 'tenant_id' AND id = _c ->> 'id');
      WHEN 'reactor.present' THEN
        _ok := EXISTS (SELECT 1 FROM ${s}.reactors WHERE tenant_id = _c ->> 'tenant_id' AND id = _c ->> 'id');
      WHEN 'application.unchanged' THEN
        _ok := EXISTS (SELECT 1 FROM ${s}.applications WHERE tenant_id = _c ->> 'tenant_id'
          AND id = _c ->> 'id' AND doc = _c -> 'application');
      WHEN 'idempotency.absent' THEN
        _ok := NOT EXISTS (SELECT 1 FROM ${s}.idempotency WHERE tenant_id = _c ->> 'tenant_id' AND id = _c ->> 'id');
      WHEN 'idempotency.claimed' THEN
        _ok := EXISTS (SELECT 1 FROM ${s}.idempotency WHERE tenant_id = _c ->> 'tenant_id' AND id = _c ->> 'id'
          AND claim = _c ->> 'claim');
      WHEN 'token.fingerprint_absent' THEN
        _ok := NOT EXISTS (SELECT 1 FROM ${s}.tokens WHERE tenant_id = _c ->> 'tenant_id'
          AND (doc ->> 'fingerprint') COLLATE "C" = _c ->> 'fingerprint'
          AND (expires_at IS NULL OR expires_at > _c ->> 'now'));
      WHEN 'tenant.unchanged' THEN
        _ok := EXISTS (SELECT 1 FROM ${s}.tenants WHERE id = _c ->> 'tenant_id' AND doc = _c -> 'tenant');
      WHEN 'token_intent.present' THEN
        _ok := EXISTS (SELECT 1 FROM ${s}.token_intents WHERE tenant_id = _c ->> 'tenant_id' AND id = _c ->> 'id');
      WHEN 'proxy.unchanged' THEN
        _ok := EXISTS (SELECT 1 FROM ${s}.proxies WHERE tenant_id = _c ->> 'tenant_id' AND id = _c ->> 'id'
          AND doc = _c -> 'proxy');
${webhookChecksSql(s)}      ELSE
        RAISE EXCEPTION 'tv_write: unknown check %', _c ->> 'check';
    END CASE;
    IF NOT _ok THEN
      -- A deferred first guard is read now: when it fails too, it is the first that failed.
      IF _i > 0 AND checks -> 0 ? 'deferred' AND EXISTS (SELECT 1 FROM ${s}.tokens
          WHERE tenant_id = checks -> 0 ->> 'tenant_id' AND id = checks -> 0 ->> 'id') THEN
        RETURN 0;
      END IF;
      RETURN _i;
    END IF;
  END LOOP;

  FOR _i IN 0 .. jsonb_array_length(ops) - 1 LOOP
    _o := ops -> _i;
    CASE _o ->> 'op'
      WHEN 'token.put' THEN
        _d := _o -> 'token';
        IF NOT _o ? 'fresh' THEN
          -- The row there, if any, is replaced (token_sync moves its terms); under the token's lock,
          -- none can come between this and the insert.
          UPDATE ${s}.tokens SET type = _d ->> 'type', expires_at = _d ->> 'expires_at', doc = _d
          WHERE tenant_id = _d ->> 'tenant_id' AND id = _d ->> 'id';
        END IF;
        IF _o ? 'fresh' OR NOT FOUND THEN
${insertToken(s)}
        END IF;
      WHEN 'token.delete' THEN
        -- The token alone: the core deletes its links with their own ops.
        DELETE FROM ${s}.tokens WHERE tenant_id = _o ->> 'tenant_id' AND id = _o ->> 'id';
      WHEN 'association.put' THEN
        -- Skipped when the link exists: it keeps its place in link order.
        _d := _o -> 'association';
        INSERT INTO ${s}.associations (tenant_id, parent_id, child_id, doc)
        VALUES (_d ->> 'tenant_id', _d ->> 'parent_id', _d ->> 'child_id', _d)
        ON CONFLICT (tenant_id, parent_id, child_id) DO NOTHING;
      WHEN 'association.delete' THEN
        DELETE FROM ${s}.associations WHERE tenant_id = _o ->> 'tenant_id'
          AND parent_id = _o ->> 'parent_id' AND child_id = _o ->> 'child_id';
      WHEN 'transaction.put' THEN
        _d := _o -> 'transaction';
        INSERT INTO ${s}.transactions (tenant_id, id, state, expires_at, doc)
        VALUES (_d ->> 'tenant_id', _d ->> 'id', _d ->> 'state', _d ->> 'expires_at', _d)
        ON CONFLICT (tenant_id, id) DO UPDATE
        SET state = EXCLUDED.state, expires_at = EXCLUDED.expires_at, doc = EXCLUDED.doc;
      WHEN 'transaction.delete' THEN
        DELETE FROM ${s}.transactions WHERE tenant_id = _o ->> 'tenant_id' AND id = _o ->> 'id';
      WHEN 'staged.put' THEN
        _d := _o -> 'staged';
        INSERT INTO ${s}.staged_writes (tenant_id, transaction_id, token_id, doc)
        VALUES (_d ->> 'tenant_id', _d ->> 'transaction_id', _d ->> 'token_id', _d)
        ON CONFLICT (tenant_id, transaction_id, token_id) DO UPDATE SET doc = EXCLUDED.doc;
      WHEN 'staged.delete' THEN
        DELETE FROM ${s}.staged_writes WHERE tenant_id = _o ->> 'tenant_id'
          AND transaction_id = _o ->> 'transaction_id' AND token_id = _o ->> 'token_id';
      WHEN 'lock.put' THEN
        _d := _o -> 'lock';
        INSERT INTO ${s}.token_locks (tenant_id, token_id, transaction_id, expires_at)
        VALUES (_d ->> 'tenant_id', _d ->> 'token_id', _d ->> 'transaction_id', _d ->> 'expires_at')
        ON CONFLICT (tenant_id, token_id)
        DO UPDATE SET transaction_id = EXCLUDED.transaction_id, expires_at = EXCLUDED.expires_at;
      WHEN 'lock.delete' THEN
        DELETE FROM ${s}.token_locks WHERE tenant_id = _o ->> 'tenant_id' AND token_id = _o ->> 'token_id';
      WHEN 'session.put' THEN
        -- Re-points the session's key and nonce.
        _d := _o -> 'session';
        WITH old AS (
          SELECT doc ->> 'key_hash' AS key_hash, doc ->> 'nonce_hash' AS nonce_hash
          FROM ${s}.sessions WHERE tenant_id = _d ->> 'tenant_id' AND id = _d ->> 'id'
        ), old_key AS (
          DELETE FROM ${s}.api_keys WHERE key_hash <> _d ->> 'key_hash' AND key_hash IN (SELECT key_hash FROM old)
        ), old_nonce AS (
          DELETE FROM ${s}.session_nonces WHERE tenant_id = _d ->> 'tenant_id'
            AND nonce_hash <> _d ->> 'nonce_hash' AND nonce_hash IN (SELECT nonce_hash FROM old)
        ), session AS (
          INSERT INTO ${s}.sessions (tenant_id, id, expires_at, doc)
          VALUES (_d ->> 'tenant_id', _d ->> 'id', _d ->> 'expires_at', _d)
          ON CONFLICT (tenant_id, id) DO UPDATE SET expires_at = EXCLUDED.expires_at, doc = EXCLUDED.doc
        ), new_key AS (
          INSERT INTO ${s}.api_keys (key_hash, kind, tenant_id, id)
          VALUES (_d ->> 'key_hash', 'session', _d ->> 'tenant_id', _d ->> 'id')
          ON CONFLICT (key_hash) DO UPDATE
          SET kind = EXCLUDED.kind, tenant_id = EXCLUDED.tenant_id, id = EXCLUDED.id
        )
        INSERT INTO ${s}.session_nonces (tenant_id, nonce_hash, session_id)
        VALUES (_d ->> 'tenant_id', _d ->> 'nonce_hash', _d ->> 'id')
        ON CONFLICT (tenant_id, nonce_hash) DO UPDATE SET session_id = EXCLUDED.session_id;
      WHEN 'session.delete' THEN
        WITH session AS (
          DELETE FROM ${s}.sessions WHERE tenant_id = _o ->> 'tenant_id' AND id = _o ->> 'id'
          RETURNING doc ->> 'key_hash' AS key_hash, doc ->> 'nonce_hash' AS nonce_hash
        ), old_key AS (
          DELETE FROM ${s}.api_keys WHERE key_hash IN (SELECT key_hash FROM session)
        )
        DELETE FROM ${s}.session_nonces WHERE tenant_id = _o ->> 'tenant_id'
          AND nonce_hash IN (SELECT nonce_hash FROM session);
      WHEN 'application.put' THEN
        -- Drops the key hashes the application no longer holds, claims the new ones.
        _d := _o -> 'application';
        WITH hashes AS (
          SELECT jsonb_array_elements_text(_o -> 'hashes') AS h
        ), old_key AS (
          DELETE FROM ${s}.api_keys WHERE key_hash NOT IN (SELECT h FROM hashes) AND key_hash IN (
            SELECT ${keyHashesOf('a')} FROM ${s}.applications a
            WHERE a.tenant_id = _d ->> 'tenant_id' AND a.id = _d ->> 'id')
        ), app AS (
          INSERT INTO ${s}.applications (tenant_id, id, sort_key, doc)
          VALUES (_d ->> 'tenant_id', _d ->> 'id', decode(_o ->> 'sort_key', 'hex'), _d)
          ON CONFLICT (tenant_id, id) DO UPDATE SET sort_key = EXCLUDED.sort_key, doc = EXCLUDED.doc
        )
        INSERT INTO ${s}.api_keys (key_hash, kind, tenant_id, id)
        SELECT h, 'application', _d ->> 'tenant_id', _d ->> 'id' FROM hashes
        ON CONFLICT (key_hash) DO UPDATE SET kind = EXCLUDED.kind, tenant_id = EXCLUDED.tenant_id, id = EXCLUDED.id;
      WHEN 'application.delete' THEN
        WITH app AS (
          DELETE FROM ${s}.applications a WHERE a.tenant_id = _o ->> 'tenant_id' AND a.id = _o ->> 'id'
          RETURNING a.doc
        )
        DELETE FROM ${s}.api_keys WHERE key_hash IN (SELECT ${keyHashesOf('app')} FROM app);
      WHEN 'tenant.put' THEN
        INSERT INTO ${s}.tenants (id, doc) VALUES (_o -> 'tenant' ->> 'id', _o -> 'tenant')
        ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc;
      WHEN 'tenant.delete' THEN
        DELETE FROM ${s}.tenants WHERE id = _o ->> 'id';
      WHEN 'formula.put' THEN
        _d := _o -> 'formula';
        INSERT INTO ${s}.formulas (tenant_key, id, tenant_id, name_lower, sort_key, doc)
        VALUES (coalesce(_d ->> 'tenant_id', ''), _d ->> 'id', _d ->> 'tenant_id', _o ->> 'name_lower',
          decode(_o ->> 'sort_key', 'hex'), _d)
        ON CONFLICT (tenant_key, id) DO UPDATE SET tenant_id = EXCLUDED.tenant_id,
          name_lower = EXCLUDED.name_lower, sort_key = EXCLUDED.sort_key, doc = EXCLUDED.doc;
      WHEN 'formula.delete' THEN
        DELETE FROM ${s}.formulas WHERE tenant_key = coalesce(_o ->> 'tenant_id', '') AND id = _o ->> 'id';
      WHEN 'reactor.put' THEN
        _d := _o -> 'reactor';
        INSERT INTO ${s}.reactors (tenant_id, id, formula_id, sort_key, name_lower, doc)
        VALUES (_d ->> 'tenant_id', _d ->> 'id', _d ->> 'formula_id', decode(_o ->> 'sort_key', 'hex'),
          _o ->> 'name_lower', _d)
        ON CONFLICT (tenant_id, id) DO UPDATE SET formula_id = EXCLUDED.formula_id,
          sort_key = EXCLUDED.sort_key, name_lower = EXCLUDED.name_lower, doc = EXCLUDED.doc;
      WHEN 'reactor.delete' THEN
        DELETE FROM ${s}.reactors WHERE tenant_id = _o ->> 'tenant_id' AND id = _o ->> 'id';
      WHEN 'formula_use.put' THEN
        _d := _o -> 'use';
        INSERT INTO ${s}.formula_uses (formula_id, tenant_id, reactor_id)
        VALUES (_d ->> 'formula_id', _d ->> 'tenant_id', _d ->> 'reactor_id')
        ON CONFLICT (formula_id, tenant_id, reactor_id) DO NOTHING;
      WHEN 'formula_use.delete' THEN
        DELETE FROM ${s}.formula_uses WHERE formula_id = _o ->> 'formula_id'
          AND tenant_id = _o ->> 'tenant_id' AND reactor_id = _o ->> 'reactor_id';
      WHEN 'idempotency.put' THEN
        _d := _o -> 'record';
        INSERT INTO ${s}.idempotency (tenant_id, id, claim, expires_at, doc)
        VALUES (_d ->> 'tenant_id', _d ->> 'id', _d ->> 'claim', _d ->> 'expires_at', _d)
        ON CONFLICT (tenant_id, id) DO UPDATE
        SET claim = EXCLUDED.claim, expires_at = EXCLUDED.expires_at, doc = EXCLUDED.doc;
      WHEN 'idempotency.delete' THEN
        DELETE FROM ${s}.idempotency WHERE tenant_id = _o ->> 'tenant_id' AND id = _o ->> 'id';
${clientKeyOpsSql(s)}
${webhookOpsSql(s)}${logOpsSql(s)}${proxyOpsSql(s)}${tokenIntentOpsSql(s)}${documentOpsSql(s)}      ELSE
        RAISE EXCEPTION 'tv_write: unknown op %', _o ->> 'op';
    END CASE;
  END LOOP;
  RETURN -1;
END
$fn$;
CREATE OR REPLACE FUNCTION ${s}.tv_write_many(writes jsonb, keys bigint[], shared boolean[])
RETURNS integer[]
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  _answers integer[] := '{}';
  _i integer;
  _answer integer;
  _constraint text;
BEGIN
  PERFORM CASE WHEN k.sh THEN pg_advisory_xact_lock_shared(k.key) ELSE pg_advisory_xact_lock(k.key) END
  FROM unnest(keys, shared) AS k(key, sh);
  FOR _i IN 0 .. jsonb_array_length(writes) - 1 LOOP
    BEGIN
      _answer := ${s}.tv_write(writes -> _i -> 0, writes -> _i -> 1, '{}', '{}');
    EXCEPTION WHEN unique_violation THEN
      GET STACKED DIAGNOSTICS _constraint = CONSTRAINT_NAME;
      IF _constraint IS DISTINCT FROM 'tokens_pkey' AND _constraint IS DISTINCT FROM 'token_terms_pkey' THEN
        RAISE;
      END IF;
      _answer := -2;
    END;
    _answers := _answers || _answer;
  END LOOP;
  RETURN _answers;
END
$fn$;
`

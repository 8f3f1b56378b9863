import type { QueryConfig, QueryResult, QueryResultRow } from 'pg'
import type { StoredTokenIntent } from '../../src/kernel/index.js'
import type { Tables } from './statements.js'

/**
 * The PostgreSQL store's token intents (migration 9): `token_intents` keyed `(tenant_id, id)`, the
 * record as JSON (its data sealed by the sealed store above), `expires_at` in a column of its own
 * with an index, which `listExpired` reads.
 */
export const tokenIntentTablesSql = (s: string) => `
CREATE TABLE IF NOT EXISTS ${s}.token_intents (
  tenant_id text NOT NULL,
  id text NOT NULL,
  expires_at text NOT NULL,
  doc jsonb NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX IF NOT EXISTS token_intents_by_expiry ON ${s}.token_intents (expires_at);
`

/** `tv_write`'s op branches of this area (plpgsql `WHEN` arms over `_o`, `_d`). */
export const tokenIntentOpsSql = (s: string) => `      WHEN 'token_intent.put' THEN
        _d := _o -> 'intent';
        INSERT INTO ${s}.token_intents (tenant_id, id, expires_at, doc)
        VALUES (_d ->> 'tenant_id', _d ->> 'id', _d ->> 'expires_at', _d)
        ON CONFLICT (tenant_id, id) DO UPDATE SET expires_at = EXCLUDED.expires_at, doc = EXCLUDED.doc;
      WHEN 'token_intent.delete' THEN
        DELETE FROM ${s}.token_intents WHERE tenant_id = _o ->> 'tenant_id' AND id = _o ->> 'id';
`

/** The keys of at most `$2` intents with `expires_at <= $1`, over the expiry index. */
export const expiredTokenIntentsSql = (schema: string) =>
  `SELECT tenant_id, id FROM ${schema}.token_intents WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2`

type Query = <R extends QueryResultRow>(config: QueryConfig) => Promise<QueryResult<R>>

/** The reads of this area over `query` (the store's gated pool). */
export function tokenIntentReads(t: Tables, query: Query) {
  const table = `${t.schema}.token_intents`
  return {
    getTokenIntent: async (tenantId: string, id: string): Promise<StoredTokenIntent | null> => {
      const { rows } = await query<{ doc: string }>({
        text: `SELECT doc::text AS doc FROM ${table} WHERE tenant_id = $1 AND id = $2`,
        values: [tenantId, id],
      })
      return rows[0] ? (JSON.parse(rows[0].doc) as StoredTokenIntent) : null
    },
    listTokenIntents: async (tenantId: string, q: { after?: string; limit: number }) =>
      (
        await query<{ doc: string }>({
          text: `SELECT doc::text AS doc FROM ${table} WHERE tenant_id = $1
            AND ($2::text IS NULL OR id > $2 COLLATE "C") ORDER BY id COLLATE "C" LIMIT $3`,
          values: [tenantId, q.after ?? null, Math.max(0, Math.floor(q.limit))],
        })
      ).rows.map((r) => JSON.parse(r.doc) as StoredTokenIntent),
  }
}

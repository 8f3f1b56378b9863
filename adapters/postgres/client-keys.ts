import type { QueryConfig, QueryResult, QueryResultRow } from 'pg'
import type { StoredClientKey } from '../../src/kernel/index.js'
import type { Page, Range } from '../../src/store/index.js'
import type { Tables } from './statements.js'

/**
 * The PostgreSQL store's client encryption keys (migration 11): `client_keys` keyed
 * `(tenant_id, id)`, the record as JSON (its private key sealed by the sealed store above), a
 * tenant's few read in `created_at, id` order.
 */
export const clientKeyTablesSql = (s: string) => `
CREATE TABLE IF NOT EXISTS ${s}.client_keys (
  tenant_id text NOT NULL,
  id text NOT NULL,
  created_at text NOT NULL,
  doc jsonb NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX IF NOT EXISTS client_keys_by_time ON ${s}.client_keys (tenant_id, created_at, id);
`

/** `tv_write`'s op branches of this area (plpgsql `WHEN` arms over `_o`, `_d`). */
export const clientKeyOpsSql = (s: string) => `      WHEN 'client_key.put' THEN
        _d := _o -> 'key';
        INSERT INTO ${s}.client_keys (tenant_id, id, created_at, doc)
        VALUES (_d ->> 'tenant_id', _d ->> 'id', _d ->> 'created_at', _d)
        ON CONFLICT (tenant_id, id) DO UPDATE SET created_at = EXCLUDED.created_at, doc = EXCLUDED.doc;
      WHEN 'client_key.delete' THEN
        DELETE FROM ${s}.client_keys WHERE tenant_id = _o ->> 'tenant_id' AND id = _o ->> 'id';
`

type Query = <R extends QueryResultRow>(config: QueryConfig) => Promise<QueryResult<R>>

/** The reads of this area over `query` (the store's gated pool). */
export function clientKeyReads(t: Tables, query: Query) {
  const docs = async (text: string, values: unknown[]): Promise<StoredClientKey[]> =>
    (await query<{ doc: string }>({ text, values })).rows.map((r) => JSON.parse(r.doc) as StoredClientKey)
  const table = `${t.schema}.client_keys`
  return {
    getClientKey: async (tenantId: string, id: string) =>
      (
        await docs(`SELECT doc::text AS doc FROM ${table} WHERE tenant_id = $1 AND id = $2`, [tenantId, id])
      )[0] ?? null,
    listClientKeys: async (tenantId: string, q: Range): Promise<Page<StoredClientKey>> => {
      const all = await docs(
        `SELECT doc::text AS doc FROM ${table} WHERE tenant_id = $1 ORDER BY created_at, id`,
        [tenantId],
      )
      return { items: all.slice(q.offset, q.offset + q.limit), total: all.length }
    },
  }
}

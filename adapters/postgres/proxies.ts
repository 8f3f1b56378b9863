import type { QueryConfig, QueryResult, QueryResultRow } from 'pg'
import type { StoredProxy } from '../../src/kernel/index.js'
import type { Page, Range } from '../../src/store/index.js'
import type { Tables } from './statements.js'

/**
 * The PostgreSQL store's pre-configured proxies (migration 2): `proxies` keyed `(tenant_id, id)`,
 * the record as JSON (its configuration sealed by the sealed store above), a tenant's few read in
 * `created_at, id` order.
 */
export const proxyTablesSql = (s: string) => `
CREATE TABLE IF NOT EXISTS ${s}.proxies (
  tenant_id text NOT NULL,
  id text NOT NULL,
  created_at text NOT NULL,
  doc jsonb NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX IF NOT EXISTS proxies_by_time ON ${s}.proxies (tenant_id, created_at, id);
`

/** `tv_write`'s op branches of this area (plpgsql `WHEN` arms over `_o`, `_d`). */
export const proxyOpsSql = (s: string) => `      WHEN 'proxy.put' THEN
        _d := _o -> 'proxy';
        INSERT INTO ${s}.proxies (tenant_id, id, created_at, doc)
        VALUES (_d ->> 'tenant_id', _d ->> 'id', _d ->> 'created_at', _d)
        ON CONFLICT (tenant_id, id) DO UPDATE SET created_at = EXCLUDED.created_at, doc = EXCLUDED.doc;
      WHEN 'proxy.delete' THEN
        DELETE FROM ${s}.proxies WHERE tenant_id = _o ->> 'tenant_id' AND id = _o ->> 'id';
`

type Query = <R extends QueryResultRow>(config: QueryConfig) => Promise<QueryResult<R>>

/** The reads of this area over `query` (the store's gated pool). */
export function proxyReads(t: Tables, query: Query) {
  const docs = async (text: string, values: unknown[]): Promise<StoredProxy[]> =>
    (await query<{ doc: string }>({ text, values })).rows.map((r) => JSON.parse(r.doc) as StoredProxy)
  const p = `${t.schema}.proxies`
  return {
    getProxy: async (tenantId: string, id: string) =>
      (await docs(`SELECT doc::text AS doc FROM ${p} WHERE tenant_id = $1 AND id = $2`, [tenantId, id]))[0] ??
      null,
    listProxies: async (tenantId: string, q: Range & { ids?: string[] }): Promise<Page<StoredProxy>> => {
      const all = await docs(
        `SELECT doc::text AS doc FROM ${p} WHERE tenant_id = $1 AND ($2::text[] IS NULL OR id = ANY($2))
          ORDER BY created_at, id`,
        [tenantId, q.ids?.length ? q.ids : null],
      )
      return { items: all.slice(q.offset, q.offset + q.limit), total: all.length }
    },
  }
}

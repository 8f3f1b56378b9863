import type { QueryConfig, QueryResult, QueryResultRow } from 'pg'
import type { StoredDocument, StoredDocumentChunk } from '../../src/kernel/index.js'
import type { Tables } from './statements.js'

/**
 * The PostgreSQL store's documents (migration 10): `documents` keyed `(tenant_id, id)` holding the
 * head as JSON, and `document_chunks` keyed `(tenant_id, document_id, idx)` holding one chunk each
 * (its data sealed by the sealed store above), so a download reads one row at a time.
 */
export const documentTablesSql = (s: string) => `
CREATE TABLE IF NOT EXISTS ${s}.documents (
  tenant_id text NOT NULL,
  id text NOT NULL,
  doc jsonb NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE TABLE IF NOT EXISTS ${s}.document_chunks (
  tenant_id text NOT NULL,
  document_id text NOT NULL,
  idx integer NOT NULL,
  doc jsonb NOT NULL,
  PRIMARY KEY (tenant_id, document_id, idx)
);
`

/** `tv_write`'s op branches of this area (plpgsql `WHEN` arms over `_o`, `_d`). */
export const documentOpsSql = (s: string) => `      WHEN 'document.put' THEN
        _d := _o -> 'document';
        INSERT INTO ${s}.documents (tenant_id, id, doc)
        VALUES (_d ->> 'tenant_id', _d ->> 'id', _d)
        ON CONFLICT (tenant_id, id) DO UPDATE SET doc = EXCLUDED.doc;
      WHEN 'document_chunk.put' THEN
        _d := _o -> 'chunk';
        INSERT INTO ${s}.document_chunks (tenant_id, document_id, idx, doc)
        VALUES (_d ->> 'tenant_id', _d ->> 'document_id', (_d ->> 'index')::integer, _d)
        ON CONFLICT (tenant_id, document_id, idx) DO UPDATE SET doc = EXCLUDED.doc;
      WHEN 'document.delete' THEN
        DELETE FROM ${s}.documents WHERE tenant_id = _o ->> 'tenant_id' AND id = _o ->> 'id';
        DELETE FROM ${s}.document_chunks WHERE tenant_id = _o ->> 'tenant_id' AND document_id = _o ->> 'id';
`

type Query = <R extends QueryResultRow>(config: QueryConfig) => Promise<QueryResult<R>>

/** The reads of this area over `query` (the store's gated pool). */
export function documentReads(t: Tables, query: Query) {
  const one = async <T>(text: string, values: unknown[]): Promise<T | null> => {
    const row = (await query<{ doc: string }>({ text, values })).rows[0]
    return row ? (JSON.parse(row.doc) as T) : null
  }
  return {
    listDocuments: async (tenantId: string, q: { after?: string; limit: number }) =>
      (
        await query<{ doc: string }>({
          text: `SELECT doc::text AS doc FROM ${t.schema}.documents WHERE tenant_id = $1
            AND ($2::text IS NULL OR id > $2 COLLATE "C") ORDER BY id COLLATE "C" LIMIT $3`,
          values: [tenantId, q.after ?? null, Math.max(0, Math.floor(q.limit))],
        })
      ).rows.map((r) => JSON.parse(r.doc) as StoredDocument),
    getDocument: (tenantId: string, id: string) =>
      one<StoredDocument>(
        `SELECT doc::text AS doc FROM ${t.schema}.documents WHERE tenant_id = $1 AND id = $2`,
        [tenantId, id],
      ),
    getDocumentChunk: (tenantId: string, documentId: string, index: number) =>
      one<StoredDocumentChunk>(
        `SELECT doc::text AS doc FROM ${t.schema}.document_chunks
          WHERE tenant_id = $1 AND document_id = $2 AND idx = $3`,
        [tenantId, documentId, index],
      ),
  }
}

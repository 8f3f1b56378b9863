import type { QueryConfig, QueryResult, QueryResultRow } from 'pg'
import type { LogEntry } from '../../src/kernel/index.js'
import type { Check, LogQuery, Op } from '../../src/store/index.js'
import type { Tables } from './tables.js'

/**
 * The PostgreSQL store's audit log (migration 3): `logs` keyed `(tenant_id, id)` (chain order: id
 * order, "C" collation), with `created_at`, `entity_type` and `entity_id`
 * in columns and three indexes a page reads a range of: it costs what it answers.
 */
export const logTablesSql = (s: string) => `
CREATE TABLE IF NOT EXISTS ${s}.logs (
  tenant_id text COLLATE "C" NOT NULL,
  id text COLLATE "C" NOT NULL,
  created_at text COLLATE "C" NOT NULL,
  entity_type text COLLATE "C" NOT NULL,
  entity_id text COLLATE "C",
  doc jsonb NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX IF NOT EXISTS logs_by_time ON ${s}.logs (tenant_id, created_at, id);
CREATE INDEX IF NOT EXISTS logs_by_type ON ${s}.logs (tenant_id, entity_type, created_at, id);
CREATE INDEX IF NOT EXISTS logs_by_entity ON ${s}.logs (tenant_id, entity_type, entity_id, created_at, id)
  WHERE entity_id IS NOT NULL;
`

/**
 * The per-tenant count of entries (`countRecords('log')`, migration 8): a trigger on `logs` moves
 * the tenant's `record_counts` row in the entry's own transaction; entries already there are counted
 * once when the migration runs.
 */
export const logCountSql = (s: string) => `
CREATE FUNCTION ${s}.log_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN PERFORM ${s}.record_count(NEW.tenant_id, 'log', 1);
  ELSE PERFORM ${s}.record_count(OLD.tenant_id, 'log', -1);
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER log_count AFTER INSERT OR DELETE ON ${s}.logs
  FOR EACH ROW EXECUTE FUNCTION ${s}.log_count();
INSERT INTO ${s}.record_counts (tenant_id, kind, shard, n)
  SELECT tenant_id, 'log', 0, count(*) FROM ${s}.logs GROUP BY tenant_id
  ON CONFLICT (tenant_id, kind, shard) DO UPDATE SET n = ${s}.record_counts.n + EXCLUDED.n;
`

/**
 * The count of entries moved once a statement (migration 16), not once an entry: a group's entries
 * go in one statement (`log.put_many`), and a row trigger moved the same `record_counts` row once
 * for each (a plpgsql call and an upsert apiece, each upsert walking the versions the group's
 * earlier ones left on that row, which no one can prune before the group commits).
 */
export const logCountByStatementSql = (s: string) => `
DROP TRIGGER IF EXISTS log_count ON ${s}.logs;
CREATE OR REPLACE FUNCTION ${s}.log_count_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ${s}.record_counts AS c (tenant_id, kind, shard, n)
  SELECT tenant_id, 'log', (pg_backend_pid() % 16)::smallint,
    CASE WHEN TG_OP = 'INSERT' THEN count(*) ELSE -count(*) END
  FROM changed GROUP BY tenant_id
  ON CONFLICT (tenant_id, kind, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
  RETURN NULL;
END
$$;
CREATE TRIGGER log_count_added AFTER INSERT ON ${s}.logs REFERENCING NEW TABLE AS changed
  FOR EACH STATEMENT EXECUTE FUNCTION ${s}.log_count_changed();
CREATE TRIGGER log_count_removed AFTER DELETE ON ${s}.logs REFERENCING OLD TABLE AS changed
  FOR EACH STATEMENT EXECUTE FUNCTION ${s}.log_count_changed();
`

/**
 * The ops of a write as `tv_write` takes them, its entries in one op when it has several (and no
 * entry removed, nor one put twice): `log.put_many`, one INSERT for all of them. No guard reads
 * entries and no other op writes them, so where they go among the write's ops changes nothing.
 */
export function logPutsTogether(ops: object[]): object[] {
  const entries: LogEntry[] = []
  const ids = new Set<string>()
  for (const op of ops as { op: string; entry?: LogEntry }[]) {
    if (op.op === 'log.delete') return ops
    if (op.op !== 'log.put' || !op.entry) continue
    const key = `${op.entry.tenant_id}\u0000${op.entry.id}`
    if (ids.has(key)) return ops
    ids.add(key)
    entries.push(op.entry)
  }
  if (entries.length < 2) return ops
  const rest = ops.filter((op) => (op as { op: string }).op !== 'log.put')
  rest.push({ op: 'log.put_many', entries })
  return rest
}

/**
 * An INSERT of audit entries read from `source` (a `FROM` list naming each entry `e`, a jsonb), as
 * `tv_write`'s `log.put_many` writes them: the statements that skip the function (a plain create's
 * entries, a write of entries only) share it.
 */
export const insertEntriesSql = (
  s: string,
  source: string,
) => `INSERT INTO ${s}.logs (tenant_id, id, created_at, entity_type, entity_id, doc)
    SELECT e ->> 'tenant_id', e ->> 'id', e ->> 'created_at', e ->> 'entity_type', e ->> 'entity_id', e
    FROM ${source}
    ON CONFLICT (tenant_id, id) DO UPDATE SET created_at = EXCLUDED.created_at,
      entity_type = EXCLUDED.entity_type, entity_id = EXCLUDED.entity_id, doc = EXCLUDED.doc`

/**
 * The entries of a write of audit entries only (a group commit of reads' entries): no guard, every
 * op a `log.put`, each entry once; else null. It takes no lock (see `recordNames`) and needs no
 * `tv_write`: one INSERT (`statements.logsUnsynced`).
 */
export function entriesOnly(checks: readonly Check[], ops: readonly Op[]): LogEntry[] | null {
  if (checks.length > 0 || ops.length === 0) return null
  const entries: LogEntry[] = []
  const ids = new Set<string>()
  for (const op of ops) {
    if (op.op !== 'log.put') return null
    const key = `${op.entry.tenant_id}\u0000${op.entry.id}`
    if (ids.has(key)) return null
    ids.add(key)
    entries.push(op.entry)
  }
  return entries
}

/** `tv_write`'s op branches of this area (plpgsql `WHEN` arms over `_o`, `_d`). */
export const logOpsSql = (s: string) => `      WHEN 'log.put_many' THEN
        INSERT INTO ${s}.logs (tenant_id, id, created_at, entity_type, entity_id, doc)
        SELECT e ->> 'tenant_id', e ->> 'id', e ->> 'created_at', e ->> 'entity_type', e ->> 'entity_id', e
        FROM jsonb_array_elements(_o -> 'entries') AS e
        ON CONFLICT (tenant_id, id) DO UPDATE SET created_at = EXCLUDED.created_at,
          entity_type = EXCLUDED.entity_type, entity_id = EXCLUDED.entity_id, doc = EXCLUDED.doc;
      WHEN 'log.put' THEN
        _d := _o -> 'entry';
        INSERT INTO ${s}.logs (tenant_id, id, created_at, entity_type, entity_id, doc)
        VALUES (_d ->> 'tenant_id', _d ->> 'id', _d ->> 'created_at', _d ->> 'entity_type', _d ->> 'entity_id', _d)
        ON CONFLICT (tenant_id, id) DO UPDATE SET created_at = EXCLUDED.created_at,
          entity_type = EXCLUDED.entity_type, entity_id = EXCLUDED.entity_id, doc = EXCLUDED.doc;
      WHEN 'log.delete' THEN
        DELETE FROM ${s}.logs WHERE tenant_id = _o ->> 'tenant_id' AND id = _o ->> 'id';
`

type Query = <R extends QueryResultRow>(config: QueryConfig) => Promise<QueryResult<R>>

/** The `WHERE` and `ORDER BY` of a `listLogs` query, with its values from $1 (the tenant). */
function logSql(q: LogQuery, tenantId: string): { where: string; order: string; values: unknown[] } {
  const values: unknown[] = [tenantId]
  const p = (v: unknown) => {
    values.push(v)
    return `$${values.length}`
  }
  const where = ['tenant_id = $1']
  if (q.order === 'chain') {
    if (q.after) where.push(`id > ${p(q.after.id)}`)
    return { where: where.join(' AND '), order: 'id', values }
  }
  if (q.entity_type !== undefined) where.push(`entity_type = ${p(q.entity_type)}`)
  if (q.entity_id !== undefined) where.push(`entity_id = ${p(q.entity_id)}`)
  if (q.from !== undefined) where.push(`created_at >= ${p(q.from)}`)
  if (q.to !== undefined) where.push(`created_at <= ${p(q.to)}`)
  const newest = q.order === 'newest'
  if (q.after)
    where.push(`(created_at, id) ${newest ? '<' : '>'} (${p(q.after.created_at)}, ${p(q.after.id)})`)
  return { where: where.join(' AND '), order: newest ? 'created_at DESC, id DESC' : 'created_at, id', values }
}

/** `listLogs` over `query` (the store's gated pool). */
export function logReads(t: Tables, query: Query) {
  return {
    listLogs: async (tenantId: string, q: LogQuery): Promise<LogEntry[]> => {
      if (q.limit <= 0) return []
      const { where, order, values } = logSql(q, tenantId)
      values.push(Math.floor(q.limit))
      const text = `SELECT doc::text AS doc FROM ${t.schema}.logs WHERE ${where} ORDER BY ${order} LIMIT $${values.length}`
      const { rows } = await query<{ doc: string }>({ text, values })
      return rows.map((r) => JSON.parse(r.doc) as LogEntry)
    },
    // The indexes read the columns, the MAC covers `doc`: a row whose columns differ from its doc is
    // filed where it is not (a row removed since is not asked about).
    unindexedLog: async (tenantId: string, entries: readonly LogEntry[]): Promise<string | null> => {
      if (entries.length === 0) return null
      const text = `SELECT id FROM ${t.schema}.logs WHERE tenant_id = $1 AND id = ANY($2::text[])
        AND (tenant_id IS DISTINCT FROM doc ->> 'tenant_id' OR id IS DISTINCT FROM doc ->> 'id'
          OR created_at IS DISTINCT FROM doc ->> 'created_at' OR entity_type IS DISTINCT FROM doc ->> 'entity_type'
          OR entity_id IS DISTINCT FROM doc ->> 'entity_id')
        ORDER BY id LIMIT 1`
      const { rows } = await query<{ id: string }>({ text, values: [tenantId, entries.map((e) => e.id)] })
      return rows[0]?.id ?? null
    },
  }
}

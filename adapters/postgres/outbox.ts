import type { QueryConfig, QueryResult, QueryResultRow } from 'pg'
import type { OutboxEntry, StoredWebhook } from '../../src/kernel/index.js'
import type { DueKey, Page, Range } from '../../src/store/index.js'
import type { Tables } from './tables.js'

/**
 * The PostgreSQL store's webhooks and outbox (migration 4): `webhooks` (≤ a handful per tenant),
 * `outbox` keyed `(tenant_id, id)` with `due_at` set while an entry is pending (the partial index
 * `outbox_due` is what the dispatcher claims from) and `expires_at` once it is finished. Counts
 * (`webhook`, `outbox.pending`) are kept in `record_counts` by triggers, in the write's transaction.
 */
export const webhookTablesSql = (s: string) => `
CREATE TABLE IF NOT EXISTS ${s}.webhooks (
  tenant_id text COLLATE "C" NOT NULL,
  id text COLLATE "C" NOT NULL,
  created_at text COLLATE "C" NOT NULL,
  doc jsonb NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE TABLE IF NOT EXISTS ${s}.outbox (
  tenant_id text COLLATE "C" NOT NULL,
  id text COLLATE "C" NOT NULL,
  due_at text COLLATE "C",
  expires_at text COLLATE "C",
  doc jsonb NOT NULL,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX IF NOT EXISTS outbox_due ON ${s}.outbox (due_at, tenant_id, id) WHERE due_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS outbox_expiry ON ${s}.outbox (expires_at) WHERE expires_at IS NOT NULL;
CREATE OR REPLACE FUNCTION ${s}.webhook_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN PERFORM ${s}.record_count(NEW.tenant_id, 'webhook', 1);
  ELSE PERFORM ${s}.record_count(OLD.tenant_id, 'webhook', -1);
  END IF;
  RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS webhook_count ON ${s}.webhooks;
CREATE TRIGGER webhook_count AFTER INSERT OR DELETE ON ${s}.webhooks
  FOR EACH ROW EXECUTE FUNCTION ${s}.webhook_count();
CREATE OR REPLACE FUNCTION ${s}.outbox_count() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  _was boolean := TG_OP <> 'INSERT' AND OLD.due_at IS NOT NULL;
  _is boolean := TG_OP <> 'DELETE' AND NEW.due_at IS NOT NULL;
BEGIN
  IF _was AND NOT _is THEN PERFORM ${s}.record_count(OLD.tenant_id, 'outbox.pending', -1);
  ELSIF _is AND NOT _was THEN PERFORM ${s}.record_count(NEW.tenant_id, 'outbox.pending', 1);
  END IF;
  RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS outbox_count ON ${s}.outbox;
CREATE TRIGGER outbox_count AFTER INSERT OR UPDATE OR DELETE ON ${s}.outbox
  FOR EACH ROW EXECUTE FUNCTION ${s}.outbox_count();
`

/**
 * Pending deliveries counted once a statement (migration 18), as the audit log's entries are
 * (`logCountByStatementSql`): the row trigger `outbox_count` called `record_count` once per row, a
 * plpgsql call and a new version of the tenant's count row each, so a group of hooked creates in one
 * statement moved one count row once per create. Three statement triggers (PostgreSQL allows one
 * event per trigger with transition tables) move each tenant's count by what the statement changed:
 * rows added pending, rows removed pending, and rows whose update made them pending or not (an
 * upsert's insert and update fire the insert's and the update's).
 */
export const outboxCountByStatementSql = (s: string) => `
DROP TRIGGER IF EXISTS outbox_count ON ${s}.outbox;
CREATE OR REPLACE FUNCTION ${s}.outbox_count_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO ${s}.record_counts AS c (tenant_id, kind, shard, n)
    SELECT tenant_id, 'outbox.pending', (pg_backend_pid() % 16)::smallint, count(*)
    FROM after_rows WHERE due_at IS NOT NULL GROUP BY tenant_id
    ON CONFLICT (tenant_id, kind, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO ${s}.record_counts AS c (tenant_id, kind, shard, n)
    SELECT tenant_id, 'outbox.pending', (pg_backend_pid() % 16)::smallint, -count(*)
    FROM before_rows WHERE due_at IS NOT NULL GROUP BY tenant_id
    ON CONFLICT (tenant_id, kind, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
  ELSE
    INSERT INTO ${s}.record_counts AS c (tenant_id, kind, shard, n)
    SELECT tenant_id, 'outbox.pending', (pg_backend_pid() % 16)::smallint, sum(d)
    FROM (SELECT tenant_id, 1 AS d FROM after_rows WHERE due_at IS NOT NULL
      UNION ALL SELECT tenant_id, -1 FROM before_rows WHERE due_at IS NOT NULL) AS x
    GROUP BY tenant_id HAVING sum(d) <> 0
    ON CONFLICT (tenant_id, kind, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER outbox_count_added AFTER INSERT ON ${s}.outbox REFERENCING NEW TABLE AS after_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ${s}.outbox_count_changed();
CREATE TRIGGER outbox_count_removed AFTER DELETE ON ${s}.outbox REFERENCING OLD TABLE AS before_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ${s}.outbox_count_changed();
CREATE TRIGGER outbox_count_updated AFTER UPDATE ON ${s}.outbox
  REFERENCING OLD TABLE AS before_rows NEW TABLE AS after_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ${s}.outbox_count_changed();
`

/** `tv_write`'s guard branches of this area (plpgsql `WHEN` arms over `_c`). */
export const webhookChecksSql = (s: string) => `      WHEN 'webhook.present' THEN
        _ok := EXISTS (SELECT 1 FROM ${s}.webhooks WHERE tenant_id = _c ->> 'tenant_id' AND id = _c ->> 'id');
      WHEN 'outbox.unchanged' THEN
        _ok := EXISTS (SELECT 1 FROM ${s}.outbox WHERE tenant_id = _c ->> 'tenant_id' AND id = _c ->> 'id'
          AND doc = _c -> 'entry');
      WHEN 'count.within' THEN
        _ok := (SELECT coalesce(sum(n), 0) FROM ${s}.record_counts WHERE tenant_id = _c ->> 'tenant_id'
          AND kind = _c ->> 'kind') <= (_c ->> 'max')::integer;
`

/** `tv_write`'s op branches of this area (plpgsql `WHEN` arms over `_o`, `_d`). */
export const webhookOpsSql = (s: string) => `      WHEN 'webhook.put' THEN
        _d := _o -> 'webhook';
        INSERT INTO ${s}.webhooks (tenant_id, id, created_at, doc)
        VALUES (_d ->> 'tenant_id', _d ->> 'id', _d ->> 'created_at', _d)
        ON CONFLICT (tenant_id, id) DO UPDATE SET created_at = EXCLUDED.created_at, doc = EXCLUDED.doc;
      WHEN 'webhook.delete' THEN
        DELETE FROM ${s}.webhooks WHERE tenant_id = _o ->> 'tenant_id' AND id = _o ->> 'id';
      WHEN 'outbox.put' THEN
        _d := _o -> 'entry';
        INSERT INTO ${s}.outbox (tenant_id, id, due_at, expires_at, doc)
        VALUES (_d ->> 'tenant_id', _d ->> 'id',
          CASE WHEN _d ->> 'state' = 'pending' THEN _d ->> 'due_at' END,
          CASE WHEN _d ->> 'state' <> 'pending' THEN _d ->> 'expires_at' END, _d)
        ON CONFLICT (tenant_id, id) DO UPDATE
        SET due_at = EXCLUDED.due_at, expires_at = EXCLUDED.expires_at, doc = EXCLUDED.doc;
      WHEN 'outbox.delete' THEN
        DELETE FROM ${s}.outbox WHERE tenant_id = _o ->> 'tenant_id' AND id = _o ->> 'id';
`

/** The client-side guard expressions (`checkQuery`) of this area; null for any other check. */
export function webhookCheckExpression(
  t: Tables,
  c: { check: string; tenant_id?: string; id?: string; entry?: OutboxEntry; kind?: string; max?: number },
  p: (value: unknown) => string,
): string | null {
  if (c.check === 'count.within')
    return `(SELECT coalesce(sum(n), 0) FROM ${t.schema}.record_counts WHERE tenant_id = ${p(c.tenant_id)}
      AND kind = ${p(c.kind)}) <= ${p(c.max)}::integer`
  if (c.check === 'webhook.present')
    return `EXISTS (SELECT 1 FROM ${t.schema}.webhooks WHERE tenant_id = ${p(c.tenant_id)} AND id = ${p(c.id)})`
  if (c.check === 'outbox.unchanged')
    return `EXISTS (SELECT 1 FROM ${t.schema}.outbox WHERE tenant_id = ${p(c.tenant_id)} AND id = ${p(c.id)}
      AND doc = (${p(JSON.stringify(c.entry))})::jsonb)`
  return null
}

/** $1 before, $2 limit: keys of finished outbox entries past $1 (`outbox_expiry`). */
export const expiredOutboxSql = (t: Tables) =>
  `SELECT tenant_id, id FROM ${t.schema}.outbox WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2`

type Query = <R extends QueryResultRow>(config: QueryConfig) => Promise<QueryResult<R>>

/**
 * `read` of a tenant asked by many calls, made once for as many of them as it can serve: at most
 * one read of a tenant is under way; the asks that come meanwhile share the next, sent once it
 * returned (and the first of a quiet spell waits for the turn's check phase, `setImmediate`, so the
 * asks of that turn share it). Each write of a token reads its tenant's webhooks to derive its
 * events, so 64 creates in flight asked as many queries, a round trip each (its socket write the
 * largest part of a create's CPU here). A read is still sent after every ask it answers, so it sees
 * every write acknowledged before any of them: what a query of each would see. One read failing
 * fails the asks it answers, not the next.
 */
export function sharedReads<R>(read: (tenantId: string) => Promise<R[]>): (tenantId: string) => Promise<R[]> {
  const tenants = new Map<string, { queued: Promise<R[]> | null; sent: Promise<R[]> | null }>()
  const turn = () => new Promise<void>((resolve) => setImmediate(resolve))
  return (tenantId) => {
    let t = tenants.get(tenantId)
    if (!t) {
      t = { queued: null, sent: null }
      tenants.set(tenantId, t)
    }
    if (t.queued) return t.queued
    const state = t
    const after = state.sent ? state.sent.then(noop, noop) : turn()
    state.queued = after.then(() => {
      state.queued = null
      const sent = read(tenantId)
      state.sent = sent
      const ended = () => {
        if (state.sent !== sent) return
        state.sent = null
        if (!state.queued) tenants.delete(tenantId)
      }
      sent.then(ended, ended)
      return sent
    })
    return state.queued
  }
}

const noop = () => {}

/** The reads of this area over `query` (the store's gated pool). */
export function webhookReads(t: Tables, query: Query) {
  const docs = async <T>(text: string, values: unknown[]): Promise<T[]> =>
    (await query<{ doc: string }>({ text, values })).rows.map((r) => JSON.parse(r.doc) as T)
  const w = `${t.schema}.webhooks`
  const o = `${t.schema}.outbox`
  const hookRows = sharedReads(
    async (tenantId: string) =>
      (
        await query<{ doc: string }>({
          text: `SELECT doc::text AS doc FROM ${w} WHERE tenant_id = $1 ORDER BY created_at, id`,
          values: [tenantId],
        })
      ).rows,
  )
  return {
    getWebhook: async (tenantId: string, id: string) =>
      (
        await docs<StoredWebhook>(`SELECT doc::text AS doc FROM ${w} WHERE tenant_id = $1 AND id = $2`, [
          tenantId,
          id,
        ])
      )[0] ?? null,
    listWebhooks: async (tenantId: string, range: Range): Promise<Page<StoredWebhook>> => {
      const rows = await hookRows(tenantId)
      const items = rows.slice(range.offset, range.offset + range.limit).map((r) => JSON.parse(r.doc))
      return { items: items as StoredWebhook[], total: rows.length }
    },
    getOutbox: async (tenantId: string, id: string) =>
      (
        await docs<OutboxEntry>(`SELECT doc::text AS doc FROM ${o} WHERE tenant_id = $1 AND id = $2`, [
          tenantId,
          id,
        ])
      )[0] ?? null,
    listOutbox: async (tenantId: string, q: { after?: string; limit: number }) =>
      q.limit <= 0
        ? []
        : docs<OutboxEntry>(
            `SELECT doc::text AS doc FROM ${o} WHERE tenant_id = $1 AND ($2::text IS NULL OR id > $2) ORDER BY id LIMIT $3`,
            [tenantId, q.after ?? null, Math.floor(q.limit)],
          ),
    listDueOutbox: async (q: { before: string; limit: number; after?: DueKey }) =>
      q.limit <= 0
        ? []
        : docs<OutboxEntry>(
            `SELECT doc::text AS doc FROM ${o} WHERE due_at IS NOT NULL AND due_at <= $1
              AND ($3::text IS NULL OR (due_at, tenant_id, id) > ($3, $4, $5))
              ORDER BY due_at, tenant_id, id LIMIT $2`,
            [
              q.before,
              Math.floor(q.limit),
              q.after?.due_at ?? null,
              q.after?.tenant_id ?? null,
              q.after?.id ?? null,
            ],
          ),
    dumpAll: async () => ({
      webhooks: await docs<StoredWebhook>(`SELECT doc::text AS doc FROM ${w} ORDER BY tenant_id, id`, []),
      outbox: await docs<OutboxEntry>(`SELECT doc::text AS doc FROM ${o} ORDER BY tenant_id, id`, []),
    }),
  }
}

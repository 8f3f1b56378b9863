import type { Database } from 'lmdb'
import type { OutboxEntry, StoredWebhook } from '../../src/kernel/index.js'
import type { CountedKind, DueKey, Op, Page, Range } from '../../src/store/index.js'
import { byKey } from '../../src/store/index.js'
import type { Databases } from './env.js'
import { key, prefix, read } from './keys.js'

/**
 * The file store's webhooks and outbox entries: `webhooks` `[tenant, id]`, `outbox` `[tenant, id]`
 * (ids sort in the order the tenant's writes made them), `outboxDue` `[due_at, tenant, id]` → 1
 * for each pending entry (what the dispatcher claims from), and the finished entries' `expires_at`
 * in the shared `expiring` index under kind `outbox`. Counts (`webhook`, `outbox.pending`) are
 * kept in `meta` in the same transaction.
 */

type Count = (dbs: Databases, kind: CountedKind, tenantId: string, delta: number) => void
type Reindex = (
  dbs: Databases,
  kind: string,
  tenantId: string,
  id: string,
  old?: string,
  next?: string,
) => void

const dueOf = (e: OutboxEntry | undefined) => (e?.state === 'pending' ? e.due_at : undefined)
const expiryOf = (e: OutboxEntry | undefined) => (e && e.state !== 'pending' ? e.expires_at : undefined)

/** Applies a `webhook.*` or `outbox.*` op in the current write transaction; false for any other op. */
export function applyWebhookOp(dbs: Databases, op: Op, count: Count, reindexTime: Reindex): boolean {
  switch (op.op) {
    case 'webhook.put':
    case 'webhook.delete': {
      const tenantId = op.op === 'webhook.put' ? op.webhook.tenant_id : op.tenant_id
      const id = op.op === 'webhook.put' ? op.webhook.id : op.id
      const k = key(tenantId, id)
      const had = dbs.webhooks.get(k) !== undefined
      if (op.op === 'webhook.put') dbs.webhooks.put(k, op.webhook)
      else dbs.webhooks.remove(k)
      const has = op.op === 'webhook.put'
      if (had !== has) count(dbs, 'webhook', tenantId, has ? 1 : -1)
      return true
    }
    case 'outbox.put':
      setEntry(dbs, op.entry.tenant_id, op.entry.id, op.entry, count, reindexTime)
      return true
    case 'outbox.delete':
      setEntry(dbs, op.tenant_id, op.id, undefined, count, reindexTime)
      return true
    default:
      return false
  }
}

function setEntry(
  dbs: Databases,
  tenantId: string,
  id: string,
  next: OutboxEntry | undefined,
  count: Count,
  reindexTime: Reindex,
): void {
  const k = key(tenantId, id)
  const old = dbs.outbox.get(k) as OutboxEntry | undefined
  const [oldDue, nextDue] = [dueOf(old), dueOf(next)]
  if (oldDue !== nextDue) {
    if (oldDue !== undefined) dbs.outboxDue.remove(key(oldDue, tenantId, id))
    if (nextDue !== undefined) dbs.outboxDue.put(key(nextDue, tenantId, id), 1)
  }
  if ((oldDue === undefined) !== (nextDue === undefined))
    count(dbs, 'outbox.pending', tenantId, nextDue === undefined ? -1 : 1)
  reindexTime(dbs, 'outbox', tenantId, id, expiryOf(old), expiryOf(next))
  if (next) dbs.outbox.put(k, next)
  else dbs.outbox.remove(k)
}

/** The reads of this area, over the databases `fresh()` answers (a current snapshot). */
export function webhookReads(fresh: () => Databases) {
  return {
    getWebhook: async (t: string, id: string) => (read(fresh().webhooks, t, id) as StoredWebhook) ?? null,
    listWebhooks: async (t: string, range: Range): Promise<Page<StoredWebhook>> => {
      const all = valuesUnder<StoredWebhook>(fresh().webhooks, t).sort(
        byKey((w) => `${w.created_at}\u0000${w.id}`),
      )
      return { items: all.slice(range.offset, range.offset + range.limit), total: all.length }
    },
    getOutbox: async (t: string, id: string) => (read(fresh().outbox, t, id) as OutboxEntry) ?? null,
    listOutbox: async (t: string, { after, limit }: { after?: string; limit: number }) => {
      if (limit <= 0) return []
      const range = prefix(t)
      const start = after === undefined ? range.start : Buffer.concat([key(t, after), Buffer.from([0])])
      return [...fresh().outbox.getRange({ start, end: range.end, limit })].map((e) => e.value as OutboxEntry)
    },
    listDueOutbox: async ({ before, limit, after }: { before: string; limit: number; after?: DueKey }) => {
      const dbs = fresh()
      const out: OutboxEntry[] = []
      if (limit <= 0) return out
      // Keys `[due_at, tenant, id]` up to the end of every key whose due_at is `before`.
      const end = prefix(before).end
      const start = after && Buffer.concat([key(after.due_at, after.tenant_id, after.id), Buffer.from([0])])
      for (const { key: k } of dbs.outboxDue.getRange(start ? { start, end, limit } : { end, limit })) {
        const [, tenantId, id] = (k as Buffer).toString('utf8').split('\u0000')
        const entry = dbs.outbox.get(key(tenantId!, id!)) as OutboxEntry | undefined
        if (entry) out.push(entry)
      }
      return out
    },
  }
}

function valuesUnder<T>(db: Database, tenantId: string): T[] {
  return [...db.getRange(prefix(tenantId))].map((e) => e.value as T)
}

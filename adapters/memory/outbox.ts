import type { OutboxEntry, StoredWebhook } from '../../src/kernel/index.js'
import type { DueKey, Page, Range, RecordKey, StoreDump } from '../../src/store/index.js'
import { byKey, copy, Scoped, SortedIds } from '../../src/store/index.js'

/** A key of the due index: `due_at ‖ tenant ‖ id` (ISO times sort as text). */
const dueKey = (e: OutboxEntry) => `${e.due_at}\u0000${e.tenant_id}\u0000${e.id}`

/**
 * The webhooks and outbox entries of a memory state, with the indexes their reads need: each
 * tenant's entries in id order, the pending entries by `due_at`, and the pending count per tenant.
 * Plain data, one field of `MemoryMaps`, with the functions over it below, so the record kinds of
 * this area live in one file.
 */
export interface WebhookMaps {
  readonly webhooks: Scoped<StoredWebhook>
  readonly entries: Scoped<OutboxEntry>
  /** Each tenant's entry ids in id order (`listOutbox`). */
  readonly order: Map<string, SortedIds>
  /** Pending entries by `dueKey` (`listDueOutbox`). */
  readonly due: SortedIds
  readonly dueEntries: Map<string, OutboxEntry>
  /** tenant → its pending entries (`countRecords('outbox.pending')`). */
  readonly pending: Map<string, number>
}

/** Empty maps. */
export function emptyWebhookMaps(): WebhookMaps {
  return {
    webhooks: new Scoped(),
    entries: new Scoped(),
    order: new Map(),
    due: new SortedIds(),
    dueEntries: new Map(),
    pending: new Map(),
  }
}

export function putEntry(m: WebhookMaps, entry: OutboxEntry): void {
  deleteEntry(m, entry.tenant_id, entry.id)
  m.entries.set(entry.tenant_id, entry.id, entry)
  let ids = m.order.get(entry.tenant_id)
  if (!ids) {
    ids = new SortedIds()
    m.order.set(entry.tenant_id, ids)
  }
  ids.add(entry.id)
  if (entry.state === 'pending' && entry.due_at !== undefined) {
    const key = dueKey(entry)
    m.due.add(key)
    m.dueEntries.set(key, entry)
    m.pending.set(entry.tenant_id, (m.pending.get(entry.tenant_id) ?? 0) + 1)
  }
}

export function deleteEntry(m: WebhookMaps, tenantId: string, id: string): void {
  const old = m.entries.get(tenantId, id)
  if (!old) return
  m.entries.delete(tenantId, id)
  const ids = m.order.get(tenantId)
  ids?.delete(id)
  if (ids?.size === 0) m.order.delete(tenantId)
  if (old.state === 'pending' && old.due_at !== undefined) {
    const key = dueKey(old)
    m.due.delete(key)
    m.dueEntries.delete(key)
    const left = (m.pending.get(tenantId) ?? 1) - 1
    if (left > 0) m.pending.set(tenantId, left)
    else m.pending.delete(tenantId)
  }
}

export function pendingOf(m: WebhookMaps, tenantId: string): number {
  return m.pending.get(tenantId) ?? 0
}

export function listWebhooks(m: WebhookMaps, tenantId: string, range: Range): Page<StoredWebhook> {
  const all = [...m.webhooks.of(tenantId).values()].sort(byKey((w) => `${w.created_at}\u0000${w.id}`))
  return { items: all.slice(range.offset, range.offset + range.limit).map(copy), total: all.length }
}

export function listOutbox(
  m: WebhookMaps,
  tenantId: string,
  query: { after?: string; limit: number },
): OutboxEntry[] {
  const ids = m.order.get(tenantId)
  if (!ids || query.limit <= 0) return []
  return ids.after(query.after, query.limit).map((id) => copy(m.entries.get(tenantId, id)!))
}

export function listDue(
  m: WebhookMaps,
  query: { before: string; limit: number; after?: DueKey },
): OutboxEntry[] {
  const out: OutboxEntry[] = []
  const from = query.after
  let after: string | undefined = from && `${from.due_at}\u0000${from.tenant_id}\u0000${from.id}`
  while (out.length < query.limit) {
    const keys = m.due.after(after, query.limit - out.length)
    if (!keys.length) break
    for (const key of keys) {
      const entry = m.dueEntries.get(key)!
      if (entry.due_at! > query.before) return out
      out.push(copy(entry))
    }
    after = keys[keys.length - 1]
  }
  return out
}

/** Finished entries whose `expires_at` has come (`listExpired('outbox')`). */
export function expired(m: WebhookMaps, before: string, limit: number): RecordKey[] {
  const out: RecordKey[] = []
  for (const e of m.entries.values()) {
    if (out.length >= limit) break
    if (e.state !== 'pending' && e.expires_at !== undefined && e.expires_at <= before)
      out.push({ tenant_id: e.tenant_id, id: e.id })
  }
  return out
}

export function dump(m: WebhookMaps): Pick<StoreDump, 'webhooks' | 'outbox'> {
  const key = (r: { tenant_id: string; id: string }) => `${r.tenant_id}\u0000${r.id}`
  return {
    webhooks: [...m.webhooks.values()].sort(byKey(key)).map(copy),
    outbox: [...m.entries.values()].sort(byKey(key)).map(copy),
  }
}

import type { OutboxEntry, StoredWebhook } from '../../src/kernel/index.js'
import type { DueKey, Page, Range, RecordKey, StoreDump } from '../../src/store/index.js'
import { byKey, copy, Scoped, SortedIds } from '../../src/store/index.js'

/** A key of the due index: `due_at ‖ tenant ‖ id` (ISO times sort as text). */
const dueKey = (e: OutboxEntry) => `${e.due_at}\u0000${e.tenant_id}\u0000${e.id}`

/**
 * The webhooks and outbox entries of a memory state, with the indexes their reads need: each
 * tenant's entries in id order, the pending entries by `due_at`, and the pending count per tenant.
 * Composed into `MemoryMaps` (one field), so the record kinds of this area live in one file.
 */
export class WebhookMaps {
  readonly webhooks = new Scoped<StoredWebhook>()
  readonly entries = new Scoped<OutboxEntry>()
  /** Each tenant's entry ids in id order (`listOutbox`). */
  private readonly order = new Map<string, SortedIds>()
  /** Pending entries by `dueKey` (`listDueOutbox`). */
  private readonly due = new SortedIds()
  private readonly dueEntries = new Map<string, OutboxEntry>()
  /** tenant → its pending entries (`countRecords('outbox.pending')`). */
  private readonly pending = new Map<string, number>()

  putEntry(entry: OutboxEntry): void {
    this.deleteEntry(entry.tenant_id, entry.id)
    this.entries.set(entry.tenant_id, entry.id, entry)
    let ids = this.order.get(entry.tenant_id)
    if (!ids) {
      ids = new SortedIds()
      this.order.set(entry.tenant_id, ids)
    }
    ids.add(entry.id)
    if (entry.state === 'pending' && entry.due_at !== undefined) {
      const key = dueKey(entry)
      this.due.add(key)
      this.dueEntries.set(key, entry)
      this.pending.set(entry.tenant_id, (this.pending.get(entry.tenant_id) ?? 0) + 1)
    }
  }

  deleteEntry(tenantId: string, id: string): void {
    const old = this.entries.get(tenantId, id)
    if (!old) return
    this.entries.delete(tenantId, id)
    const ids = this.order.get(tenantId)
    ids?.delete(id)
    if (ids?.size === 0) this.order.delete(tenantId)
    if (old.state === 'pending' && old.due_at !== undefined) {
      const key = dueKey(old)
      this.due.delete(key)
      this.dueEntries.delete(key)
      const left = (this.pending.get(tenantId) ?? 1) - 1
      if (left > 0) this.pending.set(tenantId, left)
      else this.pending.delete(tenantId)
    }
  }

  pendingOf(tenantId: string): number {
    return this.pending.get(tenantId) ?? 0
  }

  listWebhooks(tenantId: string, range: Range): Page<StoredWebhook> {
    const all = [...this.webhooks.of(tenantId).values()].sort(byKey((w) => `${w.created_at}\u0000${w.id}`))
    return { items: all.slice(range.offset, range.offset + range.limit).map(copy), total: all.length }
  }

  listOutbox(tenantId: string, query: { after?: string; limit: number }): OutboxEntry[] {
    const ids = this.order.get(tenantId)
    if (!ids || query.limit <= 0) return []
    return ids.after(query.after, query.limit).map((id) => copy(this.entries.get(tenantId, id)!))
  }

  listDue(query: { before: string; limit: number; after?: DueKey }): OutboxEntry[] {
    const out: OutboxEntry[] = []
    const from = query.after
    let after: string | undefined = from && `${from.due_at}\u0000${from.tenant_id}\u0000${from.id}`
    while (out.length < query.limit) {
      const keys = this.due.after(after, query.limit - out.length)
      if (!keys.length) break
      for (const key of keys) {
        const entry = this.dueEntries.get(key)!
        if (entry.due_at! > query.before) return out
        out.push(copy(entry))
      }
      after = keys[keys.length - 1]
    }
    return out
  }

  /** Finished entries whose `expires_at` has come (`listExpired('outbox')`). */
  expired(before: string, limit: number): RecordKey[] {
    const out: RecordKey[] = []
    for (const e of this.entries.values()) {
      if (out.length >= limit) break
      if (e.state !== 'pending' && e.expires_at !== undefined && e.expires_at <= before)
        out.push({ tenant_id: e.tenant_id, id: e.id })
    }
    return out
  }

  dump(): Pick<StoreDump, 'webhooks' | 'outbox'> {
    const key = (r: { tenant_id: string; id: string }) => `${r.tenant_id}\u0000${r.id}`
    return {
      webhooks: [...this.webhooks.values()].sort(byKey(key)).map(copy),
      outbox: [...this.entries.values()].sort(byKey(key)).map(copy),
    }
  }
}

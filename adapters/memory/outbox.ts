import type { OutboxEntry, StoredWebhook } from '../../src/kernel/index.js'
import type { DueKey, Page, Range, RecordKey, StoreDump } from '../../src/store/index.js'
import { byKey, copy, Scoped, SortedIds, SortedRecords } from '../../src/store/index.js'

/** A key of the due index: `due_at ‖ tenant ‖ id` (ISO times sort as text; none of the three holds U+0000). */
const dueKey = (e: OutboxEntry) => `${e.due_at}\u0000${e.tenant_id}\u0000${e.id}`
/** A key of the expiry index: `expires_at ‖ tenant ‖ id`. */
const expiryKey = (e: OutboxEntry) => `${e.expires_at}\u0000${e.tenant_id}\u0000${e.id}`
/** Whether an entry is pending and due (in the due index). */
const isDue = (e: OutboxEntry) => e.state === 'pending' && e.due_at !== undefined
/** Whether an entry is finished and expires (in the expiry index). */
const expires = (e: OutboxEntry) => e.state !== 'pending' && e.expires_at !== undefined

/** The tenant and id a due or expiry key names. */
function namedBy(key: string): { tenantId: string; id: string } {
  const idAt = key.lastIndexOf('\u0000')
  return { tenantId: key.slice(key.indexOf('\u0000') + 1, idAt), id: key.slice(idAt + 1) }
}

/**
 * The webhooks and outbox entries of a memory state, with the indexes their reads need: each
 * tenant's entries in id order, the pending entries by `due_at`, and the pending count per tenant.
 * Plain data, one field of `MemoryMaps`, with the functions over it below, so the record kinds of
 * this area live in one file.
 */
export interface WebhookMaps {
  readonly webhooks: Scoped<StoredWebhook>
  /**
   * tenant → its entries in id order (`listOutbox`). Not a map by id: a create's entry, its id made
   * after every other of its tenant's, is a push at the end, where a put in a map of many entries
   * cost about a microsecond (a slot in a large table, a cache miss).
   */
  readonly entries: Map<string, SortedRecords<OutboxEntry>>
  /**
   * The pending entries' `dueKey`s (`listDueOutbox`), each entry found by the tenant and id its key
   * names: no map of its own beside `entries`.
   */
  readonly due: SortedIds
  /**
   * The finished entries' `expiryKey`s (`listExpired('outbox')`): a sweep step reads the ones whose
   * time has come, never every entry.
   */
  readonly expiring: SortedIds
  /** tenant → its pending entries (`countRecords('outbox.pending')`). */
  readonly pending: Map<string, number>
}

/** Empty maps. */
export function emptyWebhookMaps(): WebhookMaps {
  return {
    webhooks: new Scoped(),
    entries: new Map(),
    due: new SortedIds(),
    expiring: new SortedIds(),
    pending: new Map(),
  }
}

/** The entry `id` of `tenantId`, as stored (the caller copies what it hands out). */
export function entryOf(m: WebhookMaps, tenantId: string, id: string): OutboxEntry | undefined {
  return m.entries.get(tenantId)?.get(id)
}

/** Puts `entry`, in place of the one of its id if there is one (whose due or expiry key goes). */
export function putEntry(m: WebhookMaps, entry: OutboxEntry): void {
  let own = m.entries.get(entry.tenant_id)
  if (!own) {
    own = new SortedRecords()
    m.entries.set(entry.tenant_id, own)
  }
  const old = own.get(entry.id)
  if (old) unindex(m, old)
  own.add(entry.id, entry)
  if (isDue(entry)) {
    m.due.add(dueKey(entry))
    m.pending.set(entry.tenant_id, (m.pending.get(entry.tenant_id) ?? 0) + 1)
  } else if (expires(entry)) m.expiring.add(expiryKey(entry))
}

export function deleteEntry(m: WebhookMaps, tenantId: string, id: string): void {
  const own = m.entries.get(tenantId)
  const old = own?.get(id)
  if (!own || !old) return
  own.delete(id)
  if (own.size === 0) m.entries.delete(tenantId)
  unindex(m, old)
}

/** Takes an entry out of the due index and its tenant's pending count, or out of the expiry index. */
function unindex(m: WebhookMaps, old: OutboxEntry): void {
  if (expires(old)) m.expiring.delete(expiryKey(old))
  if (!isDue(old)) return
  m.due.delete(dueKey(old))
  const left = (m.pending.get(old.tenant_id) ?? 1) - 1
  if (left > 0) m.pending.set(old.tenant_id, left)
  else m.pending.delete(old.tenant_id)
}

export function pendingOf(m: WebhookMaps, tenantId: string): number {
  return m.pending.get(tenantId) ?? 0
}

export function listWebhooks(m: WebhookMaps, tenantId: string, range: Range): Page<StoredWebhook> {
  const all = [...m.webhooks.of(tenantId).values()].sort(byKey((w) => `${w.created_at}\u0000${w.id}`))
  return { items: all.slice(range.offset, range.offset + range.limit).map(copiedWebhook), total: all.length }
}

/**
 * A copy of a webhook: its fields are strings but for `events`, a list of strings. Read on every
 * write that makes an event (the outbox's write effect), where the generic `copy` took half a
 * microsecond.
 */
const copiedWebhook = (w: StoredWebhook): StoredWebhook => ({ ...w, events: w.events.slice() })

export function listOutbox(
  m: WebhookMaps,
  tenantId: string,
  query: { after?: string; limit: number },
): OutboxEntry[] {
  const own = m.entries.get(tenantId)
  if (!own || query.limit <= 0) return []
  return own.after(query.after, query.limit).map((id) => copy(own.get(id)!))
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
      const { tenantId, id } = namedBy(key)
      const entry = entryOf(m, tenantId, id)!
      if (entry.due_at! > query.before) return out
      out.push(copy(entry))
    }
    after = keys[keys.length - 1]
  }
  return out
}

/** Finished entries whose `expires_at` has come (`listExpired('outbox')`), soonest first: what it answers, read from the expiry index. */
export function expired(m: WebhookMaps, before: string, limit: number): RecordKey[] {
  const out: RecordKey[] = []
  if (limit <= 0) return out
  for (const key of m.expiring.from(undefined)) {
    if (key.slice(0, key.indexOf('\u0000')) > before) break
    const { tenantId, id } = namedBy(key)
    out.push({ tenant_id: tenantId, id })
    if (out.length >= limit) break
  }
  return out
}

export function dump(m: WebhookMaps): Pick<StoreDump, 'webhooks' | 'outbox'> {
  const key = (r: { tenant_id: string; id: string }) => `${r.tenant_id}\u0000${r.id}`
  return {
    webhooks: [...m.webhooks.values()].sort(byKey(key)).map(copy),
    outbox: [...allEntries(m)].sort(byKey(key)).map(copy),
  }
}

/** Every tenant's entries, tenant by tenant. */
export function* allEntries(m: WebhookMaps): Generator<OutboxEntry, void, undefined> {
  for (const own of m.entries.values()) yield* own.values()
}

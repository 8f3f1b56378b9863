import type { LogEntry } from '../../src/kernel/index.js'
import type { LogQuery } from '../../src/store/index.js'
import { copy, Scoped, SortedIds } from '../../src/store/index.js'

/** `created_at ‖ \u0001 ‖ id`: orders entries by time, then id (ISO times sort as text). */
const timeKey = (createdAt: string, id: string) => `${createdAt}\u0001${id}`

/** The index an entry is found by for `entity_type` (and `entity_id`) filters. */
const entityKey = (type: string, id: string | undefined) => (id === undefined ? type : `${type}\u0000${id}`)

/**
 * One tenant's indexes: chain order, time, and time per entity, each read either way (newest first
 * reads walk them backwards). New entries come in time order, so a put mostly appends to each.
 */
interface TenantLogs {
  chain: SortedIds
  byTime: SortedIds
  /** `entity_type` and `entity_type ‖ entity_id` → time keys. */
  byEntity: Map<string, SortedIds>
}

/**
 * The audit log entries of a memory state with the indexes `listLogs` reads: each read costs a
 * binary search and what it answers. Composed into `MemoryMaps` (one field).
 */
export class LogMaps {
  readonly entries = new Scoped<LogEntry>()
  private readonly tenants = new Map<string, TenantLogs>()

  private of(tenantId: string): TenantLogs {
    let t = this.tenants.get(tenantId)
    if (!t) {
      t = { chain: new SortedIds(), byTime: new SortedIds(), byEntity: new Map() }
      this.tenants.set(tenantId, t)
    }
    return t
  }

  /** How many entries the tenant has (`countRecords('log')`): O(1). */
  count(tenantId: string): number {
    return this.tenants.get(tenantId)?.chain.size ?? 0
  }

  put(entry: LogEntry): void {
    this.delete(entry.tenant_id, entry.id)
    this.entries.set(entry.tenant_id, entry.id, entry)
    const t = this.of(entry.tenant_id)
    const key = timeKey(entry.created_at, entry.id)
    t.chain.add(entry.id)
    t.byTime.add(key)
    for (const k of this.entityKeys(entry)) {
      let ids = t.byEntity.get(k)
      if (!ids) {
        ids = new SortedIds()
        t.byEntity.set(k, ids)
      }
      ids.add(key)
    }
  }

  delete(tenantId: string, id: string): void {
    const old = this.entries.get(tenantId, id)
    if (!old) return
    this.entries.delete(tenantId, id)
    const t = this.of(tenantId)
    const key = timeKey(old.created_at, old.id)
    t.chain.delete(id)
    t.byTime.delete(key)
    for (const k of this.entityKeys(old)) {
      const ids = t.byEntity.get(k)
      ids?.delete(key)
      if (ids?.size === 0) t.byEntity.delete(k)
    }
    if (t.chain.size === 0) this.tenants.delete(tenantId)
  }

  private entityKeys(e: LogEntry): string[] {
    return e.entity_id === undefined
      ? [entityKey(e.entity_type, undefined)]
      : [entityKey(e.entity_type, undefined), entityKey(e.entity_type, e.entity_id)]
  }

  /** See `Store.listLogs`. */
  list(tenantId: string, q: LogQuery): LogEntry[] {
    const t = this.tenants.get(tenantId)
    if (!t || q.limit <= 0) return []
    if (q.order === 'chain') {
      return t.chain.after(q.after?.id, q.limit).map((id) => copy(this.entries.get(tenantId, id)!))
    }
    const ascending = q.order === 'oldest'
    const index = this.indexFor(t, q, ascending)
    if (!index) return []
    const at = this.startOf(q, ascending)
    const out: LogEntry[] = []
    for (const key of ascending ? index.from(at) : index.before(at)) {
      const entry = this.entries.get(tenantId, key.slice(key.indexOf('\u0001') + 1))!
      if (
        ascending
          ? q.to !== undefined && entry.created_at > q.to
          : q.from !== undefined && entry.created_at < q.from
      )
        return out
      out.push(copy(entry))
      if (out.length >= q.limit) return out
    }
    return out
  }

  private indexFor(t: TenantLogs, q: LogQuery, ascending: boolean): SortedIds | undefined {
    if (q.entity_type === undefined) return t.byTime
    // Filtered reads are served newest first only (what `GET /logs` asks); oldest-first reads are unfiltered.
    if (ascending) throw new Error('listLogs: oldest-first reads take no entity filter')
    return t.byEntity.get(entityKey(q.entity_type, q.entity_id))
  }

  /**
   * The key a read starts strictly after (oldest first) or strictly before (newest first): the
   * cursor's, else the bound of `from`/`to`.
   */
  private startOf(q: LogQuery, ascending: boolean): string | undefined {
    if (q.after) return timeKey(q.after.created_at, q.after.id)
    if (ascending) return q.from === undefined ? undefined : q.from
    // Strictly before `to ‖ \u0002`: every entry with `created_at <= to`.
    return q.to === undefined ? undefined : `${q.to}\u0002`
  }
}

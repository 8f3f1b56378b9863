import type { LogEntry } from '../../src/kernel/index.js'
import type { LogQuery } from '../../src/store/index.js'
import { copy, Scoped, SortedIds } from '../../src/store/index.js'

/** `created_at ‖ \u0001 ‖ id`: orders entries by time, then id (ISO times sort as text). */
const timeKey = (createdAt: string, id: string) => `${createdAt}\u0001${id}`

/**
 * A key whose ascending order is the descending order of `key`: each code unit complemented, then
 * a terminator above every complemented unit, so a key that is a prefix of another sorts after it.
 */
const reversed = (key: string) => {
  // Built as one array of code units (keys are short): no string grown unit by unit.
  const units = new Array<number>(key.length + 1)
  for (let i = 0; i < key.length; i++) units[i] = 0xfffe - key.charCodeAt(i)
  units[key.length] = 0xffff
  return String.fromCharCode(...units)
}
const unreversed = (key: string) => {
  let out = ''
  for (let i = 0; i < key.length - 1; i++) out += String.fromCharCode(0xfffe - key.charCodeAt(i))
  return out
}

/** The index an entry is found by for `entity_type` (and `entity_id`) filters. */
const entityKey = (type: string, id: string | undefined) => (id === undefined ? type : `${type}\u0000${id}`)

/** One tenant's indexes: chain order, time ascending, time descending, and descending per entity. */
interface TenantLogs {
  chain: SortedIds
  asc: SortedIds
  desc: SortedIds
  /** `entity_type` and `entity_type ‖ entity_id` → descending time keys. */
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
      t = { chain: new SortedIds(), asc: new SortedIds(), desc: new SortedIds(), byEntity: new Map() }
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
    const back = reversed(key)
    t.chain.add(entry.id)
    t.asc.add(key)
    t.desc.add(back)
    for (const k of this.entityKeys(entry)) {
      let ids = t.byEntity.get(k)
      if (!ids) {
        ids = new SortedIds()
        t.byEntity.set(k, ids)
      }
      ids.add(back)
    }
  }

  delete(tenantId: string, id: string): void {
    const old = this.entries.get(tenantId, id)
    if (!old) return
    this.entries.delete(tenantId, id)
    const t = this.of(tenantId)
    const key = timeKey(old.created_at, old.id)
    const back = reversed(key)
    t.chain.delete(id)
    t.asc.delete(key)
    t.desc.delete(back)
    for (const k of this.entityKeys(old)) {
      const ids = t.byEntity.get(k)
      ids?.delete(back)
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
    let at = this.startOf(q, ascending)
    const out: LogEntry[] = []
    while (out.length < q.limit) {
      const keys = index.after(at, q.limit - out.length)
      for (const key of keys) {
        const plain = ascending ? key : unreversed(key)
        const entry = this.entries.get(tenantId, plain.slice(plain.indexOf('\u0001') + 1))!
        if (
          ascending
            ? q.to !== undefined && entry.created_at > q.to
            : q.from !== undefined && entry.created_at < q.from
        )
          return out
        out.push(copy(entry))
      }
      if (keys.length === 0) return out
      at = keys[keys.length - 1]
    }
    return out
  }

  private indexFor(t: TenantLogs, q: LogQuery, ascending: boolean): SortedIds | undefined {
    if (q.entity_type === undefined) return ascending ? t.asc : t.desc
    // Filtered reads are served newest first only (what `GET /logs` asks); oldest-first reads are unfiltered.
    if (ascending) throw new Error('listLogs: oldest-first reads take no entity filter')
    return t.byEntity.get(entityKey(q.entity_type, q.entity_id))
  }

  /** The key a read starts strictly after: the cursor's, else the bound of `from`/`to`. */
  private startOf(q: LogQuery, ascending: boolean): string | undefined {
    if (q.after) {
      const key = timeKey(q.after.created_at, q.after.id)
      return ascending ? key : reversed(key)
    }
    if (ascending) return q.from === undefined ? undefined : q.from
    // Strictly after reversed(`to ‖ \u0002`): every entry with `created_at <= to`.
    return q.to === undefined ? undefined : reversed(`${q.to}\u0002`)
  }
}

import type { LogEntry } from '../../src/kernel/index.js'
import type { LogQuery } from '../../src/store/index.js'
import { copy, SortedIds, SortedRecords } from '../../src/store/index.js'

/** `created_at ‖ \u0001 ‖ id`: orders entries by time, then id (ISO times sort as text). */
const timeKey = (createdAt: string, id: string) => `${createdAt}\u0001${id}`

/**
 * One entity's time keys: the key itself while it has one entry (most tokens a log names are named
 * once: no set built for each), a set from its second.
 */
type EntityKeys = string | SortedIds

/** One entity type's time keys: all its entries', and per `entity_id` those of each entity. */
interface TypeIndex {
  all: SortedIds
  byId: Map<string, EntityKeys>
}

/**
 * Chain order (the entries by id, each kept beside its id) as a set of the ids' heads (each id up to its first `:`: its writer's,
 * or in the first format its lane's) and, per head, its ids: a writer numbers its ids in order, so
 * a new entry is an append to its writer's set (in the first format, to its lane's), where one set
 * of every id would take the entries of the first format in its middle. Two ids of different heads
 * compare as their heads do (a head holds no `:` but its last character), so reading the heads in
 * order, then each head's ids, is id order.
 */
interface ChainIndex {
  heads: SortedIds
  byHead: Map<string, SortedRecords<LogEntry>>
  size: number
}

/** An id up to and including its first `:` (the whole id when it has none). */
const headOf = (id: string) => {
  const colon = id.indexOf(':')
  return colon < 0 ? id : id.slice(0, colon + 1)
}

/**
 * One tenant's indexes: chain order, time, and time per entity, each read either way (newest first
 * reads walk them backwards). New entries come in time order, so a put mostly appends to each.
 * Entities are found by type, then id (two lookups of the strings as they are, no key joined and
 * hashed for each entry).
 */
interface TenantLogs {
  chain: ChainIndex
  byTime: SortedIds
  /** `entity_type` → its time keys, and `entity_id` → its entity's. */
  byType: Map<string, TypeIndex>
}

/**
 * The audit log entries of a memory state with the indexes `listLogs` reads: each read costs a
 * binary search and what it answers. Plain data, one field of `MemoryMaps`, with the functions
 * over it below.
 */
export interface LogMaps {
  /**
   * tenant → its entries and indexes. The entries are kept in the chain index, each beside its id
   * (`SortedRecords`): a new entry, its id after every other of its writer's, is a push at the end,
   * where a map of every entry by id cost a slot in a large table, found missing first (about a
   * microsecond each, a tenth of what a read's entry costs).
   */
  readonly tenants: Map<string, TenantLogs>
}

/** Empty maps. */
export function emptyLogMaps(): LogMaps {
  return { tenants: new Map() }
}

/** Every entry, tenant by tenant, each tenant's in chain order (the state's records). */
export function* allEntries(m: LogMaps): Generator<LogEntry, void, undefined> {
  for (const t of m.tenants.values())
    for (const head of t.chain.heads.from(undefined)) yield* t.chain.byHead.get(head)!.values()
}

/** The entry `id` of a tenant's logs, if it has it. */
const entryIn = (t: TenantLogs, id: string) => t.chain.byHead.get(headOf(id))?.get(id)

function tenantLogs(m: LogMaps, tenantId: string): TenantLogs {
  let t = m.tenants.get(tenantId)
  if (!t) {
    t = {
      chain: { heads: new SortedIds(), byHead: new Map(), size: 0 },
      byTime: new SortedIds(),
      byType: new Map(),
    }
    m.tenants.set(tenantId, t)
  }
  return t
}

/** How many entries the tenant has (`countRecords('log')`): O(1). */
export function count(m: LogMaps, tenantId: string): number {
  return m.tenants.get(tenantId)?.chain.size ?? 0
}

export function put(m: LogMaps, entry: LogEntry): void {
  let t = tenantLogs(m, entry.tenant_id)
  // Put again (rare: entries are written once): its old indexes go first.
  if (entryIn(t, entry.id) !== undefined) {
    remove(m, entry.tenant_id, entry.id)
    t = tenantLogs(m, entry.tenant_id)
  }
  const key = timeKey(entry.created_at, entry.id)
  chainAdd(t.chain, entry)
  t.byTime.add(key)
  let type = t.byType.get(entry.entity_type)
  if (!type) {
    type = { all: new SortedIds(), byId: new Map() }
    t.byType.set(entry.entity_type, type)
  }
  type.all.add(key)
  if (entry.entity_id === undefined) return
  const keys = type.byId.get(entry.entity_id)
  if (keys === undefined) type.byId.set(entry.entity_id, key)
  else if (typeof keys !== 'string') keys.add(key)
  else if (keys !== key) {
    const set = new SortedIds()
    set.add(keys)
    set.add(key)
    type.byId.set(entry.entity_id, set)
  }
}

export function remove(m: LogMaps, tenantId: string, id: string): void {
  const t = m.tenants.get(tenantId)
  const old = t && entryIn(t, id)
  if (!t || !old) return
  const key = timeKey(old.created_at, old.id)
  chainDelete(t.chain, id)
  t.byTime.delete(key)
  const type = t.byType.get(old.entity_type)
  if (type) {
    type.all.delete(key)
    if (old.entity_id !== undefined) entityDelete(type.byId, old.entity_id, key)
    if (type.all.size === 0) t.byType.delete(old.entity_type)
  }
  if (t.chain.size === 0) m.tenants.delete(tenantId)
}

function entityDelete(byId: Map<string, EntityKeys>, entityId: string, key: string): void {
  const keys = byId.get(entityId)
  if (keys === undefined) return
  if (typeof keys === 'string') {
    if (keys === key) byId.delete(entityId)
  } else if (keys.delete(key) && keys.size === 0) byId.delete(entityId)
}

function chainAdd(chain: ChainIndex, entry: LogEntry): void {
  const head = headOf(entry.id)
  let ids = chain.byHead.get(head)
  if (!ids) {
    ids = new SortedRecords()
    chain.byHead.set(head, ids)
    chain.heads.add(head)
  }
  if (ids.add(entry.id, entry)) chain.size++
}

function chainDelete(chain: ChainIndex, id: string): void {
  const head = headOf(id)
  const ids = chain.byHead.get(head)
  if (!ids?.delete(id)) return
  chain.size--
  if (ids.size > 0) return
  chain.byHead.delete(head)
  chain.heads.delete(head)
}

/** At most `limit` ids in id order after `after` (from the first when undefined): see `ChainIndex`. */
function chainAfter(chain: ChainIndex, after: string | undefined, limit: number): string[] {
  const out: string[] = []
  if (limit <= 0) return out
  let heads = chain.heads.from(undefined)
  if (after !== undefined) {
    const head = headOf(after)
    for (const id of chain.byHead.get(head)?.from(after) ?? []) {
      out.push(id)
      if (out.length >= limit) return out
    }
    heads = chain.heads.from(head)
  }
  for (const head of heads) {
    for (const id of chain.byHead.get(head)!.from(undefined)) {
      out.push(id)
      if (out.length >= limit) return out
    }
  }
  return out
}

/** See `Store.listLogs`. */
export function list(m: LogMaps, tenantId: string, q: LogQuery): LogEntry[] {
  const t = m.tenants.get(tenantId)
  if (!t || q.limit <= 0) return []
  if (q.order === 'chain') {
    return chainAfter(t.chain, q.after?.id, q.limit).map((id) => copy(entryIn(t, id)!))
  }
  const ascending = q.order === 'oldest'
  const index = indexFor(t, q, ascending)
  if (!index) return []
  const at = startOf(q, ascending)
  const out: LogEntry[] = []
  for (const key of walk(index, at, ascending)) {
    const entry = entryIn(t, key.slice(key.indexOf('\u0001') + 1))!
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

/**
 * See `Store.unindexedLog`: each entry, as it is now (one removed since is passed over), in the time
 * index, its type's and its entity's, under its own time.
 */
export function unindexed(m: LogMaps, tenantId: string, entries: readonly LogEntry[]): string | null {
  const t = m.tenants.get(tenantId)
  for (const asked of entries) {
    const e = t && entryIn(t, asked.id)
    if (t === undefined || e === undefined) continue
    const key = timeKey(e.created_at, e.id)
    const type = t.byType.get(e.entity_type)
    const keys = e.entity_id === undefined ? undefined : type?.byId.get(e.entity_id)
    const inEntity =
      e.entity_id === undefined || (typeof keys === 'string' ? keys === key : keys?.has(key) === true)
    if (!t.byTime.has(key) || !type?.all.has(key) || !inEntity) return e.id
  }
  return null
}

/** The keys of `index` after `at` (oldest first) or before it (newest first), read lazily. */
function walk(index: EntityKeys, at: string | undefined, ascending: boolean): Iterable<string> {
  if (typeof index !== 'string') return ascending ? index.from(at) : index.before(at)
  const within = at === undefined || (ascending ? index > at : index < at)
  return within ? [index] : []
}

function indexFor(t: TenantLogs, q: LogQuery, ascending: boolean): EntityKeys | undefined {
  if (q.entity_type === undefined) return t.byTime
  // Filtered reads are served newest first only (what `GET /logs` asks); oldest-first reads are unfiltered.
  if (ascending) throw new Error('listLogs: oldest-first reads take no entity filter')
  const type = t.byType.get(q.entity_type)
  return q.entity_id === undefined ? type?.all : type?.byId.get(q.entity_id)
}

/**
 * The key a read starts strictly after (oldest first) or strictly before (newest first): the
 * cursor's, else the bound of `from`/`to`.
 */
function startOf(q: LogQuery, ascending: boolean): string | undefined {
  if (q.after) return timeKey(q.after.created_at, q.after.id)
  if (ascending) return q.from === undefined ? undefined : q.from
  // Strictly before `to ‖ \u0002`: every entry with `created_at <= to`.
  return q.to === undefined ? undefined : `${q.to}\u0002`
}

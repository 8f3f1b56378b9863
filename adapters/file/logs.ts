import type { LogEntry } from '../../src/kernel/index.js'
import type { LogQuery, Op } from '../../src/store/index.js'
import type { Databases } from './env.js'
import { key, prefix } from './keys.js'

/**
 * The file store's audit log: `logs` `[tenant, id]` → entry (chain order: a writer numbers its ids
 * in order, so new entries go at the end of the B-tree), and three indexes → 1, kept in the entry's
 * own write transaction: `logsByTime` `[tenant, created_at, id]`, `logsByType` `[tenant, entity_type, created_at, id]` and
 * `logsByEntity` `[tenant, entity_type, entity_id, created_at, id]`. A page reads a range of one
 * of them: it costs what it answers, however long the log.
 */

/** The index parts of `e` in each index, before `created_at, id`. */
const indexes = (dbs: Databases, e: LogEntry) => {
  const out: [db: Databases['logsByTime'], parts: string[]][] = [
    [dbs.logsByTime, [e.tenant_id]],
    [dbs.logsByType, [e.tenant_id, e.entity_type]],
  ]
  if (e.entity_id !== undefined) out.push([dbs.logsByEntity, [e.tenant_id, e.entity_type, e.entity_id]])
  return out
}

/** The key `e` has in `db` (one of `indexes`), whose parts before its time are `parts`' count. */
function filedAt(dbs: Databases, e: LogEntry, db: Databases['logsByTime'], parts: string[]): Buffer {
  const own = indexes(dbs, e).find(([d]) => d === db)?.[1] ?? []
  return own.length === parts.length ? key(...own, e.created_at, e.id) : Buffer.alloc(0)
}

/**
 * Applies a `log.*` op in the current write transaction; false for any other op. The tenant's count
 * of entries moves in `counts` (tenant → delta), which the write's last step adds to the stored
 * counts (`writeLogCounts`): one read and one put per tenant a write, not per entry.
 */
export function applyLogOp(dbs: Databases, op: Op, counts: Map<string, number>): boolean {
  if (op.op !== 'log.put' && op.op !== 'log.delete') return false
  const tenantId = op.op === 'log.put' ? op.entry.tenant_id : op.tenant_id
  const id = op.op === 'log.put' ? op.entry.id : op.id
  const k = key(tenantId, id)
  // An entry inside a group is appended without a read: an id is put again only by retention, on
  // an entry that carries a MAC (a writer's mark in a removed entry's place; in the first format,
  // the entries of a cut group sealed again), and a delete needs the old one's index keys.
  const old =
    op.op === 'log.put' && op.entry.floor !== true && op.entry.mac === ''
      ? undefined
      : (dbs.logs.get(k) as LogEntry | undefined)
  if (old) for (const [db, parts] of indexes(dbs, old)) db.remove(key(...parts, old.created_at, old.id))
  // The tenant's count of entries (`countRecords('log')`), moved in the same transaction.
  const delta = op.op === 'log.put' ? (old ? 0 : 1) : old ? -1 : 0
  if (delta) counts.set(tenantId, (counts.get(tenantId) ?? 0) + delta)
  if (op.op === 'log.put') {
    dbs.logs.put(k, op.entry)
    for (const [db, parts] of indexes(dbs, op.entry))
      db.put(key(...parts, op.entry.created_at, op.entry.id), 1)
  } else dbs.logs.remove(k)
  return true
}

/** Adds each tenant's delta of `counts` (see `applyLogOp`) to its stored count of entries. */
export function writeLogCounts(dbs: Databases, counts: ReadonlyMap<string, number>): void {
  for (const [tenantId, delta] of counts) {
    if (!delta) continue
    const at = key('count', 'log', tenantId) // as `countKey('log', tenantId)` in apply.ts
    const n = ((dbs.meta.get(at) as number | undefined) ?? 0) + delta
    if (n > 0) dbs.meta.put(at, n)
    else dbs.meta.remove(at)
  }
}

/** `listLogs` over the databases `fresh()` answers (a current snapshot). */
export function logReads(fresh: () => Databases) {
  return {
    listLogs: async (tenantId: string, q: LogQuery): Promise<LogEntry[]> => {
      const dbs = fresh()
      if (q.limit <= 0) return []
      if (q.order === 'chain') {
        const range = prefix(tenantId)
        const start = q.after ? Buffer.concat([key(tenantId, q.after.id), Buffer.from([0])]) : range.start
        return [...dbs.logs.getRange({ start, end: range.end, limit: q.limit })].map(
          (e) => e.value as LogEntry,
        )
      }
      const [db, parts] =
        q.entity_type === undefined
          ? [dbs.logsByTime, [tenantId]]
          : q.entity_id === undefined
            ? [dbs.logsByType, [tenantId, q.entity_type]]
            : [dbs.logsByEntity, [tenantId, q.entity_type, q.entity_id]]
      const all = prefix(...parts)
      const cursor = q.after && key(...parts, q.after.created_at, q.after.id)
      const out: LogEntry[] = []
      const range =
        q.order === 'oldest'
          ? {
              start: cursor
                ? Buffer.concat([cursor, Buffer.from([0])])
                : q.from
                  ? key(...parts, q.from)
                  : all.start,
              end: q.to ? prefix(...parts, q.to).end : all.end,
            }
          : {
              start: cursor ?? (q.to ? prefix(...parts, q.to).end : all.end),
              end: q.from ? key(...parts, q.from) : all.start,
              reverse: true,
            }
      for (const { key: k } of db.getRange({ ...range, limit: q.limit + 1 })) {
        if (cursor && (k as Buffer).equals(cursor)) continue
        const id = (k as Buffer).toString('utf8').split('\u0000').pop()!
        const entry = dbs.logs.get(key(tenantId, id)) as LogEntry | undefined
        // A key that files an entry under another time, type or entity (written by hand) answers nothing.
        if (entry && filedAt(dbs, entry, db, parts).equals(k as Buffer)) out.push(entry)
        if (out.length >= q.limit) break
      }
      return out
    },
    unindexedLog: async (tenantId: string, entries: readonly LogEntry[]): Promise<string | null> => {
      const dbs = fresh()
      for (const asked of entries) {
        // The entry as it is now: one removed since (retention) is passed over.
        const e = dbs.logs.get(key(tenantId, asked.id)) as LogEntry | undefined
        if (e === undefined) continue
        if (e.tenant_id !== tenantId || e.id !== asked.id) return asked.id
        for (const [db, parts] of indexes(dbs, e))
          if (db.get(key(...parts, e.created_at, e.id)) === undefined) return e.id
      }
      return null
    },
  }
}

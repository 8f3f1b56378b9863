import type { Database } from 'lmdb'
import type { StoredProxy } from '../../src/kernel/index.js'
import type { Op, Page, Range } from '../../src/store/index.js'
import { byKey } from '../../src/store/index.js'
import type { Databases } from './env.js'
import { key, prefix, read } from './keys.js'

/** Applies a `proxy.*` op in the current write transaction; false for any other op. */
export function applyProxyOp(dbs: Databases, op: Op): boolean {
  if (op.op === 'proxy.put') dbs.proxies.put(key(op.proxy.tenant_id, op.proxy.id), op.proxy)
  else if (op.op === 'proxy.delete') dbs.proxies.remove(key(op.tenant_id, op.id))
  else return false
  return true
}

/** The proxy reads, over the databases `fresh()` answers (a current snapshot). */
export function proxyReads(fresh: () => Databases) {
  return {
    getProxy: async (t: string, id: string) => (read(fresh().proxies, t, id) as StoredProxy) ?? null,
    listProxies: async (t: string, query: Range & { ids?: string[] }): Promise<Page<StoredProxy>> => {
      const ids = query.ids?.length ? new Set(query.ids) : null
      // A tenant holds a handful of proxies (the core bounds them): its range is read and sorted.
      const all = valuesUnder<StoredProxy>(fresh().proxies, t)
        .filter((p) => !ids || ids.has(p.id))
        .sort(byKey((p) => `${p.created_at}\u0000${p.id}`))
      return { items: all.slice(query.offset, query.offset + query.limit), total: all.length }
    },
  }
}

/** Every proxy, by tenant then id (the dump). */
export const allProxies = (dbs: Databases): StoredProxy[] =>
  [...dbs.proxies.getRange({})].map((e) => e.value as StoredProxy)

function valuesUnder<T>(db: Database, tenantId: string): T[] {
  return [...db.getRange(prefix(tenantId))].map((e) => e.value as T)
}

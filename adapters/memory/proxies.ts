import type { StoredProxy } from '../../src/kernel/index.js'
import type { Page, Range } from '../../src/store/index.js'
import { byKey, copy, Scoped } from '../../src/store/index.js'

/**
 * The pre-configured proxies of a memory state (a tenant holds a handful: the core bounds them, and
 * a page sorts the tenant's few). Plain data, one field of `MemoryMaps`, with the functions over it below.
 */
export interface ProxyMaps {
  readonly proxies: Scoped<StoredProxy>
}

/** Empty maps. */
export function emptyProxyMaps(): ProxyMaps {
  return { proxies: new Scoped() }
}

export function put(m: ProxyMaps, proxy: StoredProxy): void {
  m.proxies.set(proxy.tenant_id, proxy.id, proxy)
}

export function remove(m: ProxyMaps, tenantId: string, id: string): void {
  m.proxies.delete(tenantId, id)
}

export function get(m: ProxyMaps, tenantId: string, id: string): StoredProxy | null {
  const p = m.proxies.get(tenantId, id)
  return p ? copy(p) : null
}

export function list(m: ProxyMaps, tenantId: string, query: Range & { ids?: string[] }): Page<StoredProxy> {
  const ids = query.ids?.length ? new Set(query.ids) : null
  const all = [...m.proxies.of(tenantId).values()]
    .filter((p) => !ids || ids.has(p.id))
    .sort(byKey((p) => `${p.created_at}\u0000${p.id}`))
  return { items: all.slice(query.offset, query.offset + query.limit).map(copy), total: all.length }
}

export function dump(m: ProxyMaps): StoredProxy[] {
  return [...m.proxies.values()].sort(byKey((p) => `${p.tenant_id}\u0000${p.id}`)).map(copy)
}

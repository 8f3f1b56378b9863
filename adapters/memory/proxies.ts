import type { StoredProxy } from '../../src/kernel/index.js'
import type { Page, Range } from '../../src/store/index.js'
import { byKey, copy, Scoped } from '../../src/store/index.js'

/**
 * The pre-configured proxies of a memory state (a tenant holds a handful: the core bounds them, and
 * a page sorts the tenant's few). Composed into `MemoryMaps` (one field).
 */
export class ProxyMaps {
  readonly proxies = new Scoped<StoredProxy>()

  put(proxy: StoredProxy): void {
    this.proxies.set(proxy.tenant_id, proxy.id, proxy)
  }

  delete(tenantId: string, id: string): void {
    this.proxies.delete(tenantId, id)
  }

  get(tenantId: string, id: string): StoredProxy | null {
    const p = this.proxies.get(tenantId, id)
    return p ? copy(p) : null
  }

  list(tenantId: string, query: Range & { ids?: string[] }): Page<StoredProxy> {
    const ids = query.ids?.length ? new Set(query.ids) : null
    const all = [...this.proxies.of(tenantId).values()]
      .filter((p) => !ids || ids.has(p.id))
      .sort(byKey((p) => `${p.created_at}\u0000${p.id}`))
    return { items: all.slice(query.offset, query.offset + query.limit).map(copy), total: all.length }
  }

  dump(): StoredProxy[] {
    return [...this.proxies.values()].sort(byKey((p) => `${p.tenant_id}\u0000${p.id}`)).map(copy)
  }
}

import type { StoredClientKey } from '../../src/kernel/index.js'
import type { Op, Page, Range } from '../../src/store/index.js'
import { byKey, copy, Scoped } from '../../src/store/index.js'

/**
 * The client encryption keys of a memory state (a tenant holds a handful: the core bounds them,
 * and a page sorts the tenant's few). Composed into `MemoryMaps` (one field).
 */
export class ClientKeyMaps {
  readonly keys = new Scoped<StoredClientKey>()

  /** Applies a `client_key.*` op. */
  apply(op: Extract<Op, { op: 'client_key.put' | 'client_key.delete' }>): void {
    if (op.op === 'client_key.put') this.put(op.key)
    else this.delete(op.tenant_id, op.id)
  }

  put(key: StoredClientKey): void {
    this.keys.set(key.tenant_id, key.id, key)
  }

  delete(tenantId: string, id: string): void {
    this.keys.delete(tenantId, id)
  }

  get(tenantId: string, id: string): StoredClientKey | null {
    const k = this.keys.get(tenantId, id)
    return k ? copy(k) : null
  }

  list(tenantId: string, query: Range): Page<StoredClientKey> {
    const all = [...this.keys.of(tenantId).values()].sort(byKey((k) => `${k.created_at}\u0000${k.id}`))
    return { items: all.slice(query.offset, query.offset + query.limit).map(copy), total: all.length }
  }

  dump(): StoredClientKey[] {
    return [...this.keys.values()].sort(byKey((k) => `${k.tenant_id}\u0000${k.id}`)).map(copy)
  }
}

import type { StoredClientKey } from '../../src/kernel/index.js'
import type { Op, Page, Range } from '../../src/store/index.js'
import { byKey, copy, Scoped } from '../../src/store/index.js'

/**
 * The client encryption keys of a memory state (a tenant holds a handful: the core bounds them,
 * and a page sorts the tenant's few). Plain data, one field of `MemoryMaps`, with the functions over it below.
 */
export interface ClientKeyMaps {
  readonly keys: Scoped<StoredClientKey>
}

/** Empty maps. */
export function emptyClientKeyMaps(): ClientKeyMaps {
  return { keys: new Scoped() }
}

/** Applies a `client_key.*` op. */
export function apply(
  m: ClientKeyMaps,
  op: Extract<Op, { op: 'client_key.put' | 'client_key.delete' }>,
): void {
  if (op.op === 'client_key.put') put(m, op.key)
  else remove(m, op.tenant_id, op.id)
}

export function put(m: ClientKeyMaps, key: StoredClientKey): void {
  m.keys.set(key.tenant_id, key.id, key)
}

export function remove(m: ClientKeyMaps, tenantId: string, id: string): void {
  m.keys.delete(tenantId, id)
}

export function get(m: ClientKeyMaps, tenantId: string, id: string): StoredClientKey | null {
  const k = m.keys.get(tenantId, id)
  return k ? copy(k) : null
}

export function list(m: ClientKeyMaps, tenantId: string, query: Range): Page<StoredClientKey> {
  const all = [...m.keys.of(tenantId).values()].sort(byKey((k) => `${k.created_at}\u0000${k.id}`))
  return { items: all.slice(query.offset, query.offset + query.limit).map(copy), total: all.length }
}

export function dump(m: ClientKeyMaps): StoredClientKey[] {
  return [...m.keys.values()].sort(byKey((k) => `${k.tenant_id}\u0000${k.id}`)).map(copy)
}

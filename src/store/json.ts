/** Helpers for the JSON-shaped records the stores keep. */

import type { StoredToken } from '../kernel/index.js'

/**
 * A deep copy of a JSON-shaped record (plain objects, arrays, primitives): several times faster than
 * `structuredClone` for the small records a store holds. Own keys are defined, never assigned, so a
 * key named `__proto__` stays data.
 */
export function copy<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.map(copy) as T
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value)) {
    const item = copy((value as Record<string, unknown>)[key])
    if (key === '__proto__')
      Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true })
    else out[key] = item
  }
  return out as T
}
/**
 * A deep copy of a stored token: its fields named, so every copy has one shape (the generic `copy`
 * looks each key up by name: 0.28 against 0.06 µs for a sealed token), its JSON values (`data`,
 * `mask`, `metadata`, `_extras`) copied by `copy`, its lists of strings sliced.
 */
export function copiedToken(token: StoredToken): StoredToken {
  const out: StoredToken = {
    id: token.id,
    tenant_id: token.tenant_id,
    type: token.type,
    data: copy(token.data),
    containers: token.containers.slice(),
    metadata: copy(token.metadata),
    created_by: token.created_by,
    created_at: token.created_at,
  }
  if (token.mask !== undefined) out.mask = copy(token.mask)
  if (token.fingerprint !== undefined) out.fingerprint = token.fingerprint
  if (token.fingerprint_expression !== undefined) out.fingerprint_expression = token.fingerprint_expression
  if (token.expires_at !== undefined) out.expires_at = token.expires_at
  if (token.search_indexes !== undefined) out.search_indexes = token.search_indexes.slice()
  if (token.modified_by !== undefined) out.modified_by = token.modified_by
  if (token.modified_at !== undefined) out.modified_at = token.modified_at
  if (token._extras !== undefined) out._extras = copy(token._extras)
  if (token.search_index_values !== undefined) out.search_index_values = token.search_index_values.slice()
  if (token.search_index_hashes !== undefined) out.search_index_hashes = token.search_index_hashes.slice()
  if (token.cvc_expires_at !== undefined) out.cvc_expires_at = token.cvc_expires_at
  return out
}

/** A deep copy, deeply frozen: handed out many times without copying again. */
export function frozenCopy<T>(value: T): T {
  const freeze = (v: unknown): unknown => {
    if (v !== null && typeof v === 'object') {
      for (const item of Object.values(v)) freeze(item)
      Object.freeze(v)
    }
    return v
  }
  return freeze(copy(value)) as T
}

/** Whether two JSON values are equal, object key order aside. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  const ka = Object.keys(a)
  const kb = Object.keys(b)
  if (ka.length !== kb.length) return false
  const ob = b as Record<string, unknown>
  return ka.every((key) => Object.hasOwn(ob, key) && sameJson((a as Record<string, unknown>)[key], ob[key]))
}

/** Helpers for the JSON-shaped records the stores keep. */

import { type StoredToken, withTokenFields } from '../kernel/index.js'

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
 * A deep copy of a stored token, built by `withTokenFields` (one object shape, every field named
 * there once) with its JSON values (`data`, `mask`, `metadata`, `_extras`) copied by `copy` and its
 * lists of strings sliced: 0.09 µs for a sealed token, against 0.28 for the generic `copy`, which
 * looks each key up by name.
 */
export function copiedToken(token: StoredToken): StoredToken {
  const { mask, _extras } = token
  return withTokenFields(token, {
    data: copy(token.data),
    mask: mask === undefined ? undefined : copy(mask),
    containers: token.containers.slice(),
    metadata: copy(token.metadata),
    _extras: _extras === undefined ? undefined : copy(_extras),
    search_indexes: token.search_indexes?.slice(),
    search_index_values: token.search_index_values?.slice(),
    search_index_hashes: token.search_index_hashes?.slice(),
  })
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

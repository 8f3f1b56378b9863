/**
 * A deep copy of JSON data that equals `JSON.parse(JSON.stringify(value))` for what `Store.write`
 * takes (plain objects, arrays, strings, finite numbers, booleans, null), several times faster:
 * own enumerable keys only, `undefined` and function members dropped (`null` inside arrays),
 * non-finite numbers and -0 as JSON writes them, and objects with `toJSON` (dates) via JSON.
 * The caller has already `JSON.stringify`-ed the value, so it holds nothing JSON rejects.
 */
export function cloneJson<T>(value: T): T {
  return copy(value) as T
}

function copy(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) {
    if (typeof value === 'number') return Number.isFinite(value) ? (value === 0 ? 0 : value) : null
    return value
  }
  if (Array.isArray(value)) {
    const out: unknown[] = new Array(value.length)
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i]
      out[i] =
        item === undefined || typeof item === 'function' || typeof item === 'symbol' ? null : copy(item)
    }
    return out
  }
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return JSON.parse(JSON.stringify(value))
  const out: Record<string, unknown> = {}
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue
    const item = (value as Record<string, unknown>)[key]
    if (item !== undefined && typeof item !== 'function' && typeof item !== 'symbol') out[key] = copy(item)
  }
  return out
}

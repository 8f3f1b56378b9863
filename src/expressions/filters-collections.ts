import { fail } from './failure.js'
import { jsonPath } from './json-path.js'
import {
  arrayOf,
  type Filter,
  int,
  isObject,
  joined,
  jsonText,
  lengthArg,
  nullOr,
  toJson,
  toText,
} from './values.js'

/**
 * Liquid's array filters and those that take an array or a string alike (`slice`, `size`,
 * `first`, `last`, `reverse`), `default`, and Basis Theory's JSON filters `json` (a JSON Path)
 * and `stringify`.
 */

/** The collection filters, by name. */
export const COLLECTION_FILTERS: Record<string, Filter> = {
  slice: (v, a, w) => {
    const start = int(a[0], 'start')
    const len = a[1] === undefined ? 1 : lengthArg(a[1], 'length')
    if (Array.isArray(v)) {
      const from = start < 0 ? Math.max(0, v.length + start) : start
      return v.slice(from, from + len)
    }
    const s = toText(v, w)
    const from = start < 0 ? Math.max(0, s.length + start) : start
    return s.slice(from, from + len)
  },
  size: (v, _, w) =>
    Array.isArray(v) ? v.length : isObject(v) ? Object.keys(v).length : toText(v, w).length,
  default: (v, a) => (v === undefined || v === null || v === false || v === '' ? (a[0] ?? null) : v),
  first: (v) => (Array.isArray(v) ? v[0] : typeof v === 'string' ? v.charAt(0) : undefined),
  last: (v) => (Array.isArray(v) ? v[v.length - 1] : typeof v === 'string' ? v.slice(-1) : undefined),
  join: (v, a, w) =>
    joined(
      arrayOf(v).map((x) => toText(x, w)),
      a[0] === undefined ? ' ' : toText(a[0], w),
      w,
    ),
  reverse: (v, _, w) => (Array.isArray(v) ? [...v].reverse() : [...toText(v, w)].reverse().join('')),
  uniq: (v, _, w) => [...new Map(arrayOf(v).map((x) => [jsonText(x, w), x])).values()],
  compact: (v) => arrayOf(v).filter((x) => x !== null),
  sort: (v, _, w) =>
    arrayOf(v)
      .map((x) => [toText(x, w), x] as const)
      .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
      .map(([, x]) => x),
  map: (v, a, w) =>
    arrayOf(v).map((x) => (isObject(x) && Object.hasOwn(x, toText(a[0], w)) ? x[toText(a[0], w)]! : null)),
  concat: (v, a, w) => {
    const more = arrayOf(a[0])
    w.elements(more.length)
    return [...arrayOf(v), ...more]
  },
  // Basis Theory
  json: (v, a, w) => {
    if (a[0] === undefined) fail('json needs a JSON Path expression')
    const found = jsonPath(toJson(v), toText(a[0], w), w)
    if (found.length > 1) fail('json: the JSON Path matches more than one value')
    return found[0] ?? null
  },
  stringify: nullOr((v, _, w) => (typeof v === 'string' ? v : jsonText(toJson(v), w))),
}

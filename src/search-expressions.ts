import { invalid } from './errors.js'
import type { Json, StoredToken } from './types.js'

/**
 * Search index expressions, a small subset of the Liquid-based expression language: exactly one
 * `{{ data }}` or `{{ data.<path> }}` reference, then filters among `last4`, `slice: start[, length]`,
 * `replace: 'from'[, 'to']`, `remove: 'text'`, `upcase`, `downcase`.
 */

/** Most search indexes on one token. */
export const MAX_SEARCH_INDEXES = 20
/** Longest search index expression, in characters. */
export const MAX_INDEX_EXPRESSION = 500

const WHOLE = /^\s*\{\{\s*(.*?)\s*\}\}\s*$/s
const PATH = /^data(?:\.[A-Za-z0-9_$-]+)*$/
const STRING = `'((?:[^'\\\\]|\\\\.)*)'`
const FILTERS: Record<string, RegExp> = {
  last4: /^last4$/,
  upcase: /^upcase$/,
  downcase: /^downcase$/,
  slice: /^slice:\s*(-?\d{1,6})(?:\s*,\s*(\d{1,6}))?$/,
  replace: new RegExp(`^replace:\\s*${STRING}(?:\\s*,\\s*${STRING})?$`),
  remove: new RegExp(`^remove:\\s*${STRING}$`),
}

/** One evaluated search index: its value, and the data path when the expression is a bare reference. */
export interface IndexValue {
  value: string
  /** `data` or `data.<path>` when the expression is `{{ <path> }}` without filters. */
  path?: string
}

const unquote = (s: string | undefined) => (s ?? '').replace(/\\(.)/g, '$1')

/**
 * Evaluates one search index expression over the token's `data`. Throws a validation error naming
 * `search_indexes.<i>` when it is malformed or results in nothing (null, empty, an object).
 */
export function evaluateSearchIndex(expression: string, data: Json, i: number): IndexValue {
  const field = `search_indexes.${i}`
  const whole = WHOLE.exec(expression)
  if (!whole) throw invalid(field, 'must be one {{ data... }} expression')
  const [ref, ...filters] = whole[1]!.split('|').map((s) => s.trim())
  if (!ref || !PATH.test(ref)) throw invalid(field, 'must reference data or data.<path>')
  let value: Json | undefined = data
  for (const key of ref.split('.').slice(1)) {
    value =
      value !== null && typeof value === 'object' && !Array.isArray(value) && Object.hasOwn(value, key)
        ? value[key]
        : undefined
  }
  if (value === undefined || value === null || typeof value === 'object')
    throw invalid(field, 'must result in a single value, not null, empty or an object')
  let text = String(value)
  for (const filter of filters) {
    const name = /^[a-z0-9]+/.exec(filter)?.[0] ?? ''
    const m = Object.hasOwn(FILTERS, name) ? FILTERS[name]!.exec(filter) : null
    if (!m) throw invalid(field, 'uses an unknown filter or malformed filter arguments')
    if (name === 'last4') text = text.slice(-4)
    else if (name === 'upcase') text = text.toUpperCase()
    else if (name === 'downcase') text = text.toLowerCase()
    else if (name === 'slice') {
      const start = Number(m[1])
      const from = start < 0 ? Math.max(text.length + start, 0) : start
      text = text.slice(from, from + (m[2] === undefined ? 1 : Number(m[2])))
    } else if (name === 'replace') text = text.split(unquote(m[1])).join(unquote(m[2]))
    else if (name === 'remove') text = text.split(unquote(m[1])).join('')
  }
  if (!text) throw invalid(field, 'must result in a single value, not null, empty or an object')
  return filters.length ? { value: text } : { value: text, path: ref }
}

/**
 * The strings a token's search indexes are hashed from: `data\0<value>` for every index (what a
 * `data:<value>` term hashes), and `<path>\0<value>` for a bare `{{ data.<path> }}` index (what a
 * `data.<path>:<value>` term hashes). Duplicates dropped.
 */
export function searchIndexValues(expressions: readonly string[], data: Json): string[] {
  const out = new Set<string>()
  expressions.forEach((expression, i) => {
    const { value, path } = evaluateSearchIndex(expression, data, i)
    out.add(indexKey('data', value))
    if (path && path !== 'data') out.add(indexKey(path, value))
  })
  return [...out]
}

/** What a term `path:value` hashes (and what the indexes were hashed from). */
export function indexKey(path: string, value: string): string {
  return `${path}\u0000${value}`
}

/**
 * `token` (without search index fields) with `expressions` as its `search_indexes` and their
 * values evaluated over its data (`search_index_values`, hashed by the sealed store on the way in);
 * without expressions, the token has neither.
 */
export function withSearchIndexes(
  token: StoredToken,
  expressions: readonly string[] | undefined,
): StoredToken {
  const { search_indexes: _e, search_index_values: _v, search_index_hashes: _h, ...rest } = token
  if (!expressions?.length) return rest
  return {
    ...rest,
    search_indexes: [...expressions],
    search_index_values: searchIndexValues(expressions, token.data),
  }
}

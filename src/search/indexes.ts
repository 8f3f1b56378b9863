import { compileTemplate } from '../expressions/index.js'
import type { Json, StoredToken } from '../kernel/index.js'
import { type ExpressionBudget, expressionBudget, invalid, withTokenFields } from '../kernel/index.js'

/** The keyed-hash purpose of search indexes (a term's value is hashed the same way to match). */
export const SEARCH_INDEX_PURPOSE = 'search-index'

/**
 * Search indexes: expressions (`{{ data.number | last4 }}`, see src/expressions/ (parse.ts)) evaluated over
 * a token's `data` on every write; a `data:<value>` search term matches a token one of whose
 * indexes rendered exactly `<value>`.
 */

/** Most search indexes on one token. */
export const MAX_SEARCH_INDEXES = 20
/** Longest search index expression, in characters. */
export const MAX_INDEX_EXPRESSION = 500

/** An expression that is one bare reference to `data` or a path in it, without filters. */
const BARE_REFERENCE = /^\s*\{\{-?\s*(data(?:\.[A-Za-z_][A-Za-z0-9_-]*)*)\s*-?\}\}\s*$/

/** What a term `path:value` hashes (and what the indexes are hashed from). */
export function indexKey(path: string, value: string): string {
  return `${path}\u0000${value}`
}

/**
 * The strings a token's search indexes are hashed from: `data\0<value>` for every index (what a
 * `data:<value>` term hashes), and `<path>\0<value>` for a bare `{{ data.<path> }}` index (what a
 * `data.<path>:<value>` term hashes). Duplicates dropped. An expression that renders to nothing
 * (null, empty) is a validation error naming `search_indexes.<i>`.
 */
export function searchIndexValues(
  expressions: readonly string[],
  data: Json,
  budget = expressionBudget(),
  tenant = '',
): string[] {
  const out = new Set<string>()
  expressions.forEach((expression, i) => {
    const field = `search_indexes.${i}`
    const template = compileTemplate(expression, field, tenant)
    const whole = template.evaluate({ data }, budget)
    if (whole !== null && typeof whole === 'object')
      throw invalid(field, 'must result in a single value, not an object or an array')
    const value = template.render({ data }, budget)
    if (value === null || value === '') throw invalid(field, 'must result in a value, not null or empty')
    out.add(indexKey('data', value))
    const path = BARE_REFERENCE.exec(expression)?.[1]
    if (path && path !== 'data') out.add(indexKey(path, value))
  })
  return [...out]
}

/**
 * `token` (without search index fields) with `expressions` as its `search_indexes` and their
 * values evaluated over its data (`search_index_values`, hashed by the sealed store on the way in)
 * within `budget` (the call's; default one for this token); without expressions, the token has neither.
 */
export function withSearchIndexes(
  token: StoredToken,
  expressions: readonly string[] | undefined,
  budget?: ExpressionBudget,
): StoredToken {
  if (!expressions?.length) {
    return withTokenFields(token, {
      search_indexes: undefined,
      search_index_values: undefined,
      search_index_hashes: undefined,
    })
  }
  return withTokenFields(token, {
    search_indexes: [...expressions],
    search_index_values: searchIndexValues(expressions, token.data, budget, token.tenant_id),
    search_index_hashes: undefined,
  })
}

/**
 * `token` with its search indexes evaluated again over its data, leniently: an index that renders
 * nothing any more (its field was deleted, as an expired card cvc is) indexes nothing, instead of
 * refusing the write as `searchIndexValues` does for a caller's.
 */
export function reindexed(token: StoredToken): StoredToken {
  const { search_index_values: _v, search_index_hashes: _h, ...rest } = token
  if (!token.search_indexes?.length) return rest
  const values = token.search_indexes.flatMap((expression) => {
    try {
      return searchIndexValues([expression], token.data, undefined, token.tenant_id)
    } catch {
      return []
    }
  })
  return { ...rest, search_index_values: [...new Set(values)] }
}

import * as v from 'valibot'
import { applyTransform, tokenAccess } from './access.js'
import type { Ctx } from './context.js'
import { SEARCH_INDEX_PURPOSE } from './encryption/sealed-store.js'
import { forbidden, invalid } from './errors.js'
import { type CursorPage, cursorFor, idFromCursor, type Paginated, paginated, rangeOf } from './pagination.js'
import { pagination } from './schemas/common.js'
import { indexKey } from './search-expressions.js'
import { type PlanNode, planSource } from './search-plan.js'
import {
  type Field,
  globMatches,
  MAX_QUERY_LENGTH,
  parseQuery,
  type QueryNode,
  type Value,
} from './search-query.js'
import type { TokenHead, TokenTerm } from './store/contract.js'
import { readWhole, type Seen, tooBroad, type WalkEnd, walkTokens } from './token-view.js'
import { openTransaction } from './txview.js'
import type { Token } from './types.js'
import { parse } from './validate.js'

/**
 * How many candidates a search reads from the store at first; each further read doubles it, up to
 * 1024 (a first page of results comes quickly, a long scan takes few store calls).
 */
export const SEARCH_PAGE = 100

const query = v.optional(
  v.nullable(
    v.pipe(v.string(), v.maxLength(MAX_QUERY_LENGTH, `must be at most ${MAX_QUERY_LENGTH} characters`)),
  ),
)
const cursor = v.optional(v.nullable(v.pipe(v.string(), v.maxLength(400, 'must be at most 400 characters'))))
const size = v.optional(v.nullable(pagination.size))

/** Body of `POST /tokens/search` (none: every token, first page). */
export const searchInput = v.optional(
  v.strictObject({
    query,
    page: v.optional(v.nullable(pagination.page)),
    size,
  }),
  {},
)

/**
 * Body of `POST /v2/tokens/search`: `query`, and `start` (the previous page's `pagination.next`)
 * and `size`, given at the top level (as the SDKs send them) or as `page: { start, size }`.
 */
export const searchV2Input = v.optional(
  v.strictObject({
    query,
    start: cursor,
    size,
    page: v.optional(v.nullable(v.strictObject({ start: cursor, size }))),
  }),
  {},
)

/** A term with what it needs at match time: a data term's keyed hash (computed once per search). */
type Compiled =
  | { kind: 'and' | 'or'; items: Compiled[] }
  | { kind: 'not'; item: Compiled }
  | { kind: 'all' }
  | { kind: 'term'; field: Field; value: Value; hash?: string }

async function compile(ctx: Ctx, node: QueryNode): Promise<Compiled> {
  switch (node.kind) {
    case 'and':
    case 'or':
      return { kind: node.kind, items: await Promise.all(node.items.map((n) => compile(ctx, n))) }
    case 'not':
      return { kind: 'not', item: await compile(ctx, node.item) }
    case 'all':
      return node
    case 'term':
      if (node.field.kind === 'data' && node.value.kind === 'exact') {
        const hash = await ctx.hmac(SEARCH_INDEX_PURPOSE, indexKey(node.field.path, node.value.text))
        return { ...node, hash }
      }
      return node
  }
}

function textMatches(value: Value, text: string | undefined, fold: boolean): boolean {
  if (text === undefined) return false
  switch (value.kind) {
    case 'exists':
      return true
    case 'exact':
      return fold ? text.toLowerCase() === value.text.toLowerCase() : text === value.text
    case 'pattern':
      return globMatches(value.glob, text, fold)
    case 'range':
      return false
  }
}

function timeMatches(value: Value, at: string | undefined): boolean {
  if (at === undefined) return false
  if (value.kind === 'exists') return true
  if (value.kind !== 'range') return false
  const { lower, upper } = value
  if (lower && (lower.inclusive ? at < lower.at : at <= lower.at)) return false
  if (upper && (upper.inclusive ? at > upper.at : at >= upper.at)) return false
  return true
}

function termMatches(term: Extract<Compiled, { kind: 'term' }>, token: TokenHead): boolean {
  const { field, value } = term
  switch (field.kind) {
    case 'id':
      return textMatches(value, token.id, false)
    case 'type':
      return textMatches(value, token.type, false)
    case 'container':
      return token.containers.some((c) => textMatches(value, c, false))
    case 'fingerprint':
      return textMatches(value, token.fingerprint, false)
    case 'metadata':
      return textMatches(
        value,
        Object.hasOwn(token.metadata, field.key) ? token.metadata[field.key] : undefined,
        true,
      )
    case 'time':
      return timeMatches(value, token[field.name])
    case 'actor':
      return textMatches(value, token[field.name], false)
    case 'data': {
      const hashes = token.search_index_hashes ?? []
      if (value.kind === 'exists') return hashes.length > 0
      return term.hash !== undefined && hashes.includes(term.hash)
    }
  }
}

function matches(node: Compiled, token: TokenHead): boolean {
  switch (node.kind) {
    case 'all':
      return true
    case 'and':
      return node.items.every((n) => matches(n, token))
    case 'or':
      return node.items.some((n) => matches(n, token))
    case 'not':
      return !matches(node.item, token)
    case 'term':
      return termMatches(node, token)
  }
}

/** The exact index term a compiled term reads, or null when it is checked record by record. */
function indexTerm(node: Extract<Compiled, { kind: 'term' }>): TokenTerm | null {
  const { field, value } = node
  if (value.kind !== 'exact') return null
  switch (field.kind) {
    case 'id':
    case 'type':
    case 'container':
    case 'fingerprint':
      return { kind: field.kind, value: value.text }
    case 'metadata':
      return { kind: 'metadata', key: field.key, value: value.text.toLowerCase() }
    case 'data':
      return node.hash === undefined ? null : { kind: 'search_index', value: node.hash }
    case 'time':
    case 'actor':
      return null
  }
}

/** The query as the planner reads it (see `planSource`). */
function planOf(node: Compiled): PlanNode {
  switch (node.kind) {
    case 'and':
    case 'or':
      return { kind: node.kind, items: node.items.map(planOf) }
    case 'not':
      return { kind: 'not' }
    case 'all':
      return node
    case 'term':
      return { kind: 'term', term: indexTerm(node) }
  }
}

/** Throws `forbidden` unless the caller holds `token:search` (as a permission or through a rule). */
function requireSearch(ctx: Ctx): void {
  const { permissions, rules } = ctx.principal
  if (!permissions.includes('token:search') && !rules?.some((r) => r.permissions.includes('token:search')))
    throw forbidden('missing permission token:search')
}

/**
 * Walks the tokens matching `text` that the caller may see (it needs `token:search`, and
 * `token:search` and `token:read` on each token: permissions, or rules granting both), in id
 * order after `after`, as its transaction sees them: candidates from the store's indexes when the
 * query has exact terms (a scan otherwise), each matched on its head before anything is decrypted.
 * `visit` answers whether to go on.
 */
async function searchTokens(
  ctx: Ctx,
  text: string,
  after: string | undefined,
  first: number,
  visit: (seen: Seen) => boolean,
): Promise<WalkEnd & { still: (token: TokenHead) => boolean }> {
  requireSearch(ctx)
  const compiled = await compile(ctx, parseQuery(text))
  const tx = await openTransaction(ctx)
  const source = planSource(ctx.store, ctx.principal.tenantId, planOf(compiled), first)
  const end = await walkTokens(
    ctx,
    tx,
    { ...(after === undefined ? {} : { after }), source, first },
    (seen) => {
      const { head } = seen
      if (!matches(compiled, head)) return true
      if (tokenAccess(ctx.principal, 'token:search', head) === null) return true
      if (tokenAccess(ctx.principal, 'token:read', head) === null) return true
      return visit(seen)
    },
  )
  // A token changed between its head and its whole read is answered only if it still matches.
  const still = (token: TokenHead) =>
    matches(compiled, token) && tokenAccess(ctx.principal, 'token:search', token) !== null
  return { ...end, still }
}

/** The answers of `seen`, read whole (only now decrypted), each under the caller's read transform. */
async function shown(
  ctx: Ctx,
  seen: readonly Seen[],
  still: (token: TokenHead) => boolean,
): Promise<Token[]> {
  return (await readWhole(ctx, seen)).flatMap((token) => {
    if (!still(token)) return []
    const transform = tokenAccess(ctx.principal, 'token:read', token)
    return transform === null ? [] : [applyTransform(token, transform, ctx.budget)]
  })
}

/**
 * `POST /tokens/search`: the tokens matching the query (see `parseQuery`), in id order, paged by
 * `page` (1-based) and `size` (at most 100; default 20).
 */
export async function searchTokensV1(ctx: Ctx, input: unknown): Promise<Paginated<Token>> {
  const body = parse(searchInput, input ?? {})
  const page = body.page ?? 1
  const pageSize = body.size ?? 20
  const { offset } = rangeOf({ page, size: pageSize })
  const items: Seen[] = []
  let total = 0
  const end = await searchTokens(ctx, body.query ?? '', undefined, SEARCH_PAGE, (seen) => {
    if (total >= offset && items.length < pageSize) items.push(seen)
    total++
    return true
  })
  if (end.exhausted) throw tooBroad('query')
  return paginated({ items: await shown(ctx, items, end.still), total }, page, pageSize)
}

/**
 * `POST /v2/tokens/search`: the tokens matching the query, in id order, with cursor pagination
 * (`start`: the previous page's `pagination.next`; `size` at most 100, default 20).
 */
export async function searchTokensV2(ctx: Ctx, input: unknown): Promise<CursorPage<Token>> {
  const body = parse(searchV2Input, input ?? {})
  if (body.page && (body.start != null || body.size != null))
    throw invalid('page', 'give start and size either at the top level or in page, not both')
  const start = body.page ? body.page.start : body.start
  const pageSize = (body.page ? body.page.size : body.size) ?? 20
  const scope = `search\u0000${body.query ?? ''}`
  const after = start == null ? undefined : await idFromCursor(ctx, scope, start, 'start')
  const data: Seen[] = []
  let more = false
  const end = await searchTokens(ctx, body.query ?? '', after, pageSize + 1, (seen) => {
    if (data.length === pageSize) {
      more = true
      return false
    }
    data.push(seen)
    return true
  })
  const last = more ? data[data.length - 1]?.head.id : end.exhausted ? end.last : undefined
  const next = last === undefined ? undefined : await cursorFor(ctx, scope, last)
  return {
    pagination: { page_size: pageSize, ...(next ? { next } : {}) },
    data: await shown(ctx, data, end.still),
  }
}

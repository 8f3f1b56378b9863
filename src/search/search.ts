import { applyTransform, tokenAccess } from '../applications/index.js'
import type { Ctx } from '../call/index.js'
import {
  type CursorPage,
  cursorFor,
  type Paginated,
  paginated,
  positionFromCursor,
  rangeOf,
} from '../call/index.js'
import type { Token } from '../kernel/index.js'
import { forbidden, invalid, parse } from '../kernel/index.js'
import type { TokenHead, TokenTerm } from '../store/index.js'
import { openTransaction } from '../transactions/index.js'
import { indexKey, SEARCH_INDEX_PURPOSE } from './indexes.js'
import { PageBytes, pageTooLarge } from './page-bytes.js'
import { type PlanNode, planSource, successor } from './planner.js'
import { type Field, globMatches, parseQuery, type QueryNode, type Value } from './query.js'
import { reachOf } from './reach.js'
import { searchInput, searchV2Input } from './schemas.js'
import { newMeter, readWhole, type Seen, tooBroad, type WalkEnd, walkTokens } from './token-view.js'

/**
 * How many candidates a search reads from the store at first; each further read doubles it, up to
 * 1024 (a first page of results comes quickly, a long scan takes few store calls).
 */
export const SEARCH_PAGE = 100

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
      return globMatches(value.glob, text, fold, value.compiled)
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

/** Whether an index term tests what a token's data holds (its search indexes, its fingerprint). */
const testsValue = (term: TokenTerm | null) => term?.kind === 'search_index' || term?.kind === 'fingerprint'

/**
 * The query as the planner reads it (see `planSource`). `hideValues`: the key reaches only some
 * tokens (see `reachOf`), so some candidates may be unreadable to it. Then no term that tests a
 * token's data value (its search indexes, its fingerprint) picks candidates: such terms are checked
 * on the heads of the other terms' candidates, or of a scan when no other exact term narrows the
 * query. Whether a token the key can't read holds a value then changes no store read at all: the
 * same heads are read and dropped either way, at the cost of a readable miss.
 */
function planOf(node: Compiled, hideValues: boolean): PlanNode {
  switch (node.kind) {
    case 'and':
    case 'or':
      return { kind: node.kind, items: node.items.map((n) => planOf(n, hideValues)) }
    case 'not':
      return { kind: 'not' }
    case 'all':
      return node
    case 'term': {
      const term = indexTerm(node)
      return { kind: 'term', term: hideValues && testsValue(term) ? null : term }
    }
  }
}

/**
 * The units of work matching one head against the query costs (see `MAX_EXAMINED`): one, and two
 * more per wildcard pattern (a pass over the text it is matched with), and one per 16 terms.
 */
function headCost(node: Compiled): number {
  let patterns = 0
  let terms = 0
  const count = (n: Compiled): void => {
    if (n.kind === 'and' || n.kind === 'or') n.items.forEach(count)
    else if (n.kind === 'not') count(n.item)
    else if (n.kind === 'term') {
      terms++
      if (n.value.kind === 'pattern') patterns++
    }
  }
  count(node)
  return 1 + 2 * patterns + Math.floor(terms / 16)
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
 * order from `from` on, as its transaction sees them: candidates from the store's indexes when the
 * query has exact terms (a scan otherwise), each matched on its head before anything is decrypted.
 * Every candidate costs the same checks whether it matches, and whether the caller may read it;
 * for a key that reaches only some tokens, data and fingerprint terms pick no candidates (see
 * `planOf`), and a key that reaches none reads nothing. `visit` answers whether to go on.
 */
async function searchTokens(
  ctx: Ctx,
  text: string,
  from: string | undefined,
  first: number,
  visit: (seen: Seen) => boolean,
): Promise<WalkEnd & { still: (token: TokenHead) => boolean }> {
  requireSearch(ctx)
  const compiled = await compile(ctx, parseQuery(text))
  const reach = reachOf(ctx.principal, ['token:search', 'token:read'])
  // A key that may answer no token reads none: its work can't depend on what they hold.
  if (reach === 'none') return { exhausted: false, still: () => false }
  const tx = await openTransaction(ctx)
  const meter = newMeter()
  const plan = planOf(compiled, reach === 'some')
  const source = planSource(ctx.store, ctx.principal.tenantId, plan, first, meter)
  const end = await walkTokens(
    ctx,
    tx,
    { ...(from === undefined ? {} : { from }), source, first, meter, cost: headCost(compiled) },
    (seen) => {
      const { head } = seen
      // Every check runs on every candidate (no early exit): an unreadable match costs a miss.
      const searchable = tokenAccess(ctx.principal, 'token:search', head) !== null
      const readable = tokenAccess(ctx.principal, 'token:read', head) !== null
      const matched = matches(compiled, head)
      if (!(searchable && readable && matched)) return true
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
    return transform === null ? [] : [applyTransform(token, transform, ctx.budget, ctx.principal)]
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
  const bytes = new PageBytes()
  let total = 0
  const end = await searchTokens(ctx, body.query ?? '', undefined, SEARCH_PAGE, (seen) => {
    if (total >= offset && items.length < pageSize) {
      if (!bytes.take(seen)) throw pageTooLarge('size')
      items.push(seen)
    }
    total++
    return true
  })
  if (end.exhausted) throw tooBroad('query')
  return paginated({ items: await shown(ctx, items, end.still), total }, page, pageSize)
}

/**
 * `POST /v2/tokens/search`: the tokens matching the query, in id order, with cursor pagination
 * (`start`: the previous page's `pagination.next`; `size` at most 100, default 20). A page ends
 * early when its next token would pass `MAX_PAGE_BYTES`, or when the call's work is spent; `next`
 * then goes on from there.
 */
export async function searchTokensV2(ctx: Ctx, input: unknown): Promise<CursorPage<Token>> {
  const body = parse(searchV2Input, input ?? {})
  if (body.page && (body.start != null || body.size != null))
    throw invalid('page', 'give start and size either at the top level or in page, not both')
  const start = body.page ? body.page.start : body.start
  const pageSize = (body.page ? body.page.size : body.size) ?? 20
  const scope = `search\u0000${body.query ?? ''}`
  const from = start == null ? undefined : await positionFromCursor(ctx, scope, start, 'start')
  const data: Seen[] = []
  const bytes = new PageBytes()
  let more = false
  const end = await searchTokens(ctx, body.query ?? '', from, pageSize + 1, (seen) => {
    if (data.length === pageSize || !bytes.take(seen)) {
      more = true
      return false
    }
    data.push(seen)
    return true
  })
  const last = data[data.length - 1]
  const resume = more && last ? successor(last.head.id) : end.exhausted ? end.resume : undefined
  const next = resume === undefined ? undefined : await cursorFor(ctx, scope, resume)
  return {
    pagination: { page_size: pageSize, ...(next ? { next } : {}) },
    data: await shown(ctx, data, end.still),
  }
}

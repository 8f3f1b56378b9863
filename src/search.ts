import * as v from 'valibot'
import { applyTransform, tokenAccess } from './access.js'
import type { Ctx } from './context.js'
import { SEARCH_INDEX_PURPOSE } from './encryption/sealed-store.js'
import { forbidden, invalid } from './errors.js'
import {
  type CursorPage,
  cursorAfter,
  idAfterCursor,
  type Paginated,
  paginated,
  rangeOf,
} from './pagination.js'
import { pagination } from './schemas/common.js'
import { indexKey } from './search-expressions.js'
import {
  type Field,
  globMatches,
  MAX_QUERY_LENGTH,
  parseQuery,
  type QueryNode,
  type Value,
} from './search-query.js'
import { openTransaction, readToken } from './txview.js'
import type { StoredToken, Token } from './types.js'
import { parse } from './validate.js'

/**
 * How many tokens a search reads from the store at first; each further read doubles it, up to
 * `MAX_SEARCH_PAGE` (a first page of results comes quickly, a long scan takes few store calls).
 */
export const SEARCH_PAGE = 100
/** The most tokens a search holds from one store read. */
export const MAX_SEARCH_PAGE = 5000

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

function termMatches(term: Extract<Compiled, { kind: 'term' }>, token: StoredToken): boolean {
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
    case 'data': {
      const hashes = token.search_index_hashes ?? []
      if (value.kind === 'exists') return hashes.length > 0
      return term.hash !== undefined && hashes.includes(term.hash)
    }
  }
}

function matches(node: Compiled, token: StoredToken): boolean {
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

/** Plain field filters the store applies while listing (see `Store.listTokens`). */
interface StoreFilter {
  types?: string[]
  ids?: string[]
  fingerprint?: string
}

/**
 * The store filters implied by the query: exact `type` or `id` terms, alone, ORed together, or in
 * one operand of a top-level AND; one exact `fingerprint` term the same way. The store answers a superset of the matches; the query decides.
 */
function storeFilter(node: Compiled): StoreFilter {
  const exact = (n: Compiled, kind: 'type' | 'id' | 'fingerprint'): string[] | null => {
    if (n.kind === 'term') return n.field.kind === kind && n.value.kind === 'exact' ? [n.value.text] : null
    if (n.kind !== 'or') return null
    const all: string[] = []
    for (const item of n.items) {
      const some = exact(item, kind)
      if (!some) return null
      all.push(...some)
    }
    return all
  }
  const out: StoreFilter = {}
  for (const n of node.kind === 'and' ? node.items : [node]) {
    const types = out.types ? null : exact(n, 'type')
    if (types) out.types = types
    const ids = out.ids ? null : exact(n, 'id')
    if (ids) out.ids = ids
    const fingerprint = out.fingerprint !== undefined ? null : exact(n, 'fingerprint')
    if (fingerprint?.length === 1) out.fingerprint = fingerprint[0]!
  }
  return out
}

/** Throws `forbidden` unless the caller holds `token:search` (as a permission or through a rule). */
function requireSearch(ctx: Ctx): void {
  const { permissions, rules } = ctx.principal
  if (!permissions.includes('token:search') && !rules?.some((r) => r.permissions.includes('token:search')))
    throw forbidden('missing permission token:search')
}

/**
 * The tenant's unexpired tokens in id order, as the caller's transaction sees them (staged writes
 * over committed ones) when it enlisted in one, read from the store in growing pages, from the
 * first id after `after`. `filter` narrows the committed tokens the store answers (a superset of
 * the matches: every token is matched against the whole query after).
 */
async function* tokensInOrder(
  ctx: Ctx,
  after: string | undefined,
  filter: StoreFilter,
): AsyncGenerator<StoredToken> {
  const tx = await openTransaction(ctx)
  const tenant = ctx.principal.tenantId
  const now = ctx.now()
  const staged = tx
    ? [...new Set(tx.writes.flatMap((w) => (w.op === 'token.put' ? [w.token.id] : [])))]
        .filter((id) => after === undefined || id > after)
        .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    : []
  let nextStaged = 0
  let last = after
  const view = async (token: StoredToken) => (tx ? await readToken(ctx, tx, token.id) : token)
  const live = (t: StoredToken | null): t is StoredToken =>
    t !== null && (t.expires_at === undefined || t.expires_at > now)
  for (let offset = 0, limit = SEARCH_PAGE; ; offset += limit, limit = Math.min(limit * 2, MAX_SEARCH_PAGE)) {
    const page = await ctx.store.listTokens(tenant, { offset, limit, ...filter, now })
    for (const committed of page.items) {
      // Ids only move forward: a write between two pages may shift the offsets.
      if (last !== undefined && committed.id <= last) continue
      while (nextStaged < staged.length && staged[nextStaged]! <= committed.id) {
        const id = staged[nextStaged++]!
        if (id === committed.id) continue
        const token = await readToken(ctx, tx!, id)
        if (live(token)) yield token
      }
      last = committed.id
      const token = await view(committed)
      if (live(token)) yield token
    }
    if (page.items.length < limit) break
    // A long scan lets other work run between store pages (a store answering from memory never
    // leaves the microtask queue on its own).
    await new Promise<void>((resolve) => setImmediate(resolve))
  }
  while (nextStaged < staged.length) {
    const token = await readToken(ctx, tx!, staged[nextStaged++]!)
    if (live(token)) yield token
  }
}

/**
 * The tokens matching `text` that the caller may see, in id order after `after`, each under its
 * read transform: the caller needs `token:search` and `token:read` on the token (permissions, or
 * rules granting both). `visit` gets a function that shows the token (its mask evaluated then, under
 * the call's budget); the search stops when `visit` answers false.
 */
async function searchTokens(
  ctx: Ctx,
  text: string,
  after: string | undefined,
  visit: (show: () => Token) => boolean,
): Promise<void> {
  requireSearch(ctx)
  const compiled = await compile(ctx, parseQuery(text))
  for await (const token of tokensInOrder(ctx, after, storeFilter(compiled))) {
    if (!matches(compiled, token)) continue
    if (tokenAccess(ctx.principal, 'token:search', token) === null) continue
    const transform = tokenAccess(ctx.principal, 'token:read', token)
    if (transform === null) continue
    // Shown only when answered: a v1 page counts every match but evaluates masks for its page alone.
    if (!visit(() => applyTransform(token, transform, ctx.budget))) return
  }
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
  const items: Token[] = []
  let total = 0
  await searchTokens(ctx, body.query ?? '', undefined, (show) => {
    if (total >= offset && items.length < pageSize) items.push(show())
    total++
    return true
  })
  return paginated({ items, total }, page, pageSize)
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
  const after = start == null ? undefined : idAfterCursor(start, 'start')
  const data: Token[] = []
  let more = false
  await searchTokens(ctx, body.query ?? '', after, (show) => {
    if (data.length === pageSize) {
      more = true
      return false
    }
    data.push(show())
    return true
  })
  const next = more ? cursorAfter(data[data.length - 1]!.id) : undefined
  return { pagination: { page_size: pageSize, ...(next ? { next } : {}) }, data }
}

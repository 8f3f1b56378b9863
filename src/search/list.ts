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
import type { StoredTransaction, Token } from '../kernel/index.js'
import { invalid, parse, refuseBadText } from '../kernel/index.js'
import type { TokenHead } from '../store/index.js'
import { openTransaction } from '../transactions/index.js'
import { PageBytes, pageTooLarge } from './page-bytes.js'
import { type PlanNode, planSource, successor } from './planner.js'
import { reachOf } from './reach.js'
import { listV2Input } from './schemas.js'
import { newMeter, readWhole, type Seen, tooBroad, walkTokens } from './token-view.js'

function metadataFilter(json: string | undefined): Array<readonly [string, string]> {
  if (json === undefined) return []
  let parsed: unknown
  try {
    parsed = JSON.parse(json)
  } catch {
    throw invalid('metadata', 'must be a JSON object of strings')
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw invalid('metadata', 'must be a JSON object of strings')
  // The filter's strings are parsed here, past `parse`: held to its rule (no U+0000) here too.
  refuseBadText(parsed, 'metadata')
  const entries = Object.entries(parsed)
  if (entries.length > 20) throw invalid('metadata', 'must hold at most 20 entries')
  return entries.map(([k, value]) => {
    if (typeof value !== 'string') throw invalid(`metadata.${k}`, 'must be a string')
    return [k, value.toLowerCase()] as const
  })
}

/**
 * Lists the tenant's tokens the caller may read (`GET /v2/tokens`), ordered by id, each under its
 * read transform, with cursor pagination: `start` is the `pagination.next` of the previous page.
 * Filters: `type` (one or several), `container` (the token is in it or below it), `metadata` (a
 * JSON object; each entry equal but for case), `fingerprint` (tokens whose fingerprint is this one:
 * the value a token answers in `fingerprint`). With the transaction header, the transaction's view.
 * A page ends early when its next token would pass `MAX_PAGE_BYTES`, or when the call's work is
 * spent; `next` then goes on from there.
 */
export async function listTokensV2(ctx: Ctx, query: unknown): Promise<CursorPage<Token>> {
  const q = parse(listV2Input, query ?? {})
  const wanted = metadataFilter(q.metadata)
  const scope = JSON.stringify(['list', q.type, q.container ?? null, q.fingerprint ?? null, wanted])
  const from = q.start === undefined ? undefined : await positionFromCursor(ctx, scope, q.start)
  const tx = await openTransaction(ctx)
  const meter = newMeter()
  // Exact filters read the store's indexes (ANDed); the container prefix is checked on heads.
  const terms: PlanNode[] = [
    ...(q.type.length
      ? [
          {
            kind: 'or' as const,
            items: q.type.map((value) => ({ kind: 'term' as const, term: { kind: 'type' as const, value } })),
          },
        ]
      : []),
    // A fingerprint tests what a token's data holds: it picks candidates only for a key that reads
    // every token (see `reachOf`), else it is checked on heads, at the cost of a readable miss.
    ...(q.fingerprint === undefined || reachOf(ctx.principal, ['token:read']) !== 'every'
      ? []
      : [{ kind: 'term' as const, term: { kind: 'fingerprint' as const, value: q.fingerprint } }]),
    ...wanted.map(([key, value]) => ({
      kind: 'term' as const,
      term: { kind: 'metadata' as const, key, value },
    })),
  ]
  const source = planSource(
    ctx.store,
    ctx.principal.tenantId,
    { kind: 'and', items: terms },
    q.size + 1,
    meter,
  )
  const keep = (token: TokenHead) =>
    (!q.type.length || q.type.includes(token.type)) &&
    (q.fingerprint === undefined || token.fingerprint === q.fingerprint) &&
    (q.container === undefined || token.containers.some((c) => c.startsWith(q.container!))) &&
    wanted.every(
      ([k, value]) => Object.hasOwn(token.metadata, k) && token.metadata[k]!.toLowerCase() === value,
    ) &&
    tokenAccess(ctx.principal, 'token:read', token) !== null
  const page: Seen[] = []
  const bytes = new PageBytes()
  let more = false
  const end = await walkTokens(
    ctx,
    tx,
    { ...(from === undefined ? {} : { from }), source, first: q.size + 1, meter },
    (seen) => {
      if (!keep(seen.head)) return true
      if (page.length === q.size || !bytes.take(seen)) {
        more = true
        return false
      }
      page.push(seen)
      return true
    },
  )
  // A token changed between its head and its whole read is answered only if it still matches.
  const data = (await readWhole(ctx, page)).flatMap((token) => {
    if (!keep(token)) return []
    const transform = tokenAccess(ctx.principal, 'token:read', token)
    return transform === null ? [] : [applyTransform(token, transform, ctx.budget, ctx.principal)]
  })
  const last = page[page.length - 1]
  const resume = more && last ? successor(last.head.id) : end.exhausted ? end.resume : undefined
  const next = resume === undefined ? undefined : await cursorFor(ctx, scope, resume)
  return { pagination: { page_size: q.size, ...(next ? { next } : {}) }, data }
}

/**
 * The v1 token list (`tokens.list`) when access rules, a metadata filter or a transaction decide
 * per token: the view walked in id order (candidates from the `id`, `type` and `metadata` indexes),
 * each matched on its head, counted for `total_items`; only the page is read whole. A list whose
 * count would take more than `MAX_EXAMINED` units of work answers 400, and so does a page whose
 * tokens would pass `MAX_PAGE_BYTES`.
 */
export async function listTokensV1(
  ctx: Ctx,
  tx: StoredTransaction | null,
  q: {
    id: string[]
    type: string[]
    metadata?: Record<string, string> | undefined
    page: number
    size: number
  },
): Promise<Paginated<Token>> {
  const wanted = Object.entries(q.metadata ?? {}).map(([k, v]) => [k, v.toLowerCase()] as const)
  const anyOf = (kind: 'id' | 'type', values: string[]): PlanNode[] =>
    values.length
      ? [{ kind: 'or', items: values.map((value) => ({ kind: 'term', term: { kind, value } })) }]
      : []
  const terms: PlanNode[] = [
    ...anyOf('id', q.id),
    ...anyOf('type', q.type),
    ...wanted.map(([key, value]): PlanNode => ({ kind: 'term', term: { kind: 'metadata', key, value } })),
  ]
  const meter = newMeter()
  const source = planSource(ctx.store, ctx.principal.tenantId, { kind: 'and', items: terms }, 100, meter)
  const { offset } = rangeOf(q)
  const page: Seen[] = []
  const bytes = new PageBytes()
  let total = 0
  const end = await walkTokens(ctx, tx, { source, first: 100, meter }, (seen) => {
    const token = seen.head
    if (q.id.length && !q.id.includes(token.id)) return true
    if (q.type.length && !q.type.includes(token.type)) return true
    const ok = wanted.every(
      ([k, v]) => Object.hasOwn(token.metadata, k) && token.metadata[k]!.toLowerCase() === v,
    )
    if (!ok || tokenAccess(ctx.principal, 'token:read', token) === null) return true
    if (total >= offset && page.length < q.size) {
      if (!bytes.take(seen)) throw pageTooLarge('size')
      page.push(seen)
    }
    total++
    return true
  })
  if (end.exhausted) throw tooBroad('page')
  const items = (await readWhole(ctx, page)).flatMap((token) => {
    const transform = tokenAccess(ctx.principal, 'token:read', token)
    return transform === null ? [] : [applyTransform(token, transform, ctx.budget, ctx.principal)]
  })
  return paginated({ items, total }, q.page, q.size)
}

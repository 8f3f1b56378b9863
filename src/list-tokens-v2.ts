import * as v from 'valibot'
import { applyTransform, tokenAccess } from './access.js'
import type { Ctx } from './context.js'
import { invalid } from './errors.js'
import { type CursorPage, cursorAfter, idAfterCursor } from './pagination.js'
import { containerPath, pagination, stringList } from './schemas/common.js'
import { openTransaction, readToken } from './txview.js'
import type { StoredToken, Token } from './types.js'
import { parse } from './validate.js'

/** The query of `GET /v2/tokens`. */
export const listV2Input = v.strictObject({
  type: stringList(100),
  container: v.optional(containerPath),
  fingerprint: v.optional(v.pipe(v.string(), v.maxLength(200, 'must be at most 200 characters'))),
  metadata: v.optional(v.pipe(v.string(), v.maxLength(25_000, 'must be at most 25000 characters'))),
  start: v.optional(v.pipe(v.string(), v.maxLength(400, 'must be at most 400 characters'))),
  size: pagination.size,
})

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
 */
export async function listTokensV2(ctx: Ctx, query: unknown): Promise<CursorPage<Token>> {
  const q = parse(listV2Input, query ?? {})
  const after = q.start === undefined ? undefined : idAfterCursor(q.start)
  const wanted = metadataFilter(q.metadata)
  const tx = await openTransaction(ctx)
  const tenant = ctx.principal.tenantId
  const now = ctx.now()
  const committed = await ctx.store.listTokens(tenant, {
    offset: 0,
    limit: Number.MAX_SAFE_INTEGER,
    types: q.type,
    ...(q.fingerprint === undefined ? {} : { fingerprint: q.fingerprint }),
    now,
  })
  const staged = tx ? tx.writes.flatMap((w) => (w.op === 'token.put' ? [w.token.id] : [])) : []
  const ids = [...new Set([...committed.items.map((t) => t.id), ...staged])]
    .filter((id) => after === undefined || id > after)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  const byId = new Map(committed.items.map((t) => [t.id, t]))
  const data: Token[] = []
  let next: string | undefined
  for (const id of ids) {
    const token: StoredToken | null = tx ? await readToken(ctx, tx, id) : (byId.get(id) ?? null)
    if (!token || (q.type.length && !q.type.includes(token.type))) continue
    if (token.expires_at !== undefined && token.expires_at <= now) continue
    if (q.fingerprint !== undefined && token.fingerprint !== q.fingerprint) continue
    if (q.container !== undefined && !token.containers.some((c) => c.startsWith(q.container!))) continue
    const ok = wanted.every(
      ([k, value]) => Object.hasOwn(token.metadata, k) && token.metadata[k]!.toLowerCase() === value,
    )
    if (!ok) continue
    const transform = tokenAccess(ctx.principal, 'token:read', token)
    if (transform === null) continue
    if (data.length === q.size) {
      next = cursorAfter(data[data.length - 1]!.id)
      break
    }
    data.push(applyTransform(token, transform, ctx.budget))
  }
  return { pagination: { page_size: q.size, ...(next ? { next } : {}) }, data }
}

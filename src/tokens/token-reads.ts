import { applyTransform, requireTokenAccess, tokenAccess } from '../applications/index.js'
import type { Ctx } from '../call/index.js'
import { type Paginated, paginated, rangeOf } from '../call/index.js'
import type { Json, StoredToken, Token } from '../kernel/index.js'
import { forbidden, invalid, parse } from '../kernel/index.js'
import { listTokensV1, pageTooLarge } from '../search/index.js'
import { mustReadToken, openTransaction } from '../transactions/index.js'
import { detokenize } from './detokenize.js'
import type { DetokenizeInput, ListTokensQuery } from './inputs.js'
import { gatherMetadataFilter, listChildrenInput } from './schemas.js'

/** Throws `forbidden` unless the caller may read some token (the permission, or a rule granting it). */
export function requireAnyRead(ctx: Ctx): void {
  const { permissions, rules } = ctx.principal
  if (!permissions.includes('token:read') && !rules?.some((r) => r.permissions.includes('token:read'))) {
    throw forbidden('missing permission token:read')
  }
}

/** Replaces the detokenization expressions in any JSON value (see `tokenOperations().detokenize`). */
export async function detokenizeBody(ctx: Ctx, input: DetokenizeInput): Promise<Json> {
  if (input === undefined) throw invalid('body', 'is required: any JSON holding {{ <token id> }} expressions')
  // The endpoint is token:read's, whatever the body holds (each token is checked again below).
  requireAnyRead(ctx)
  const tx = await openTransaction(ctx)
  return detokenize(ctx, input as Json, { root: 'body', permission: 'token:read', tx })
}

/** Lists the tenant's tokens the caller may read (see `tokenOperations().list`). */
export async function listTokens(ctx: Ctx, query: ListTokensQuery): Promise<Paginated<Token>> {
  const q = parse(listChildrenInput, gatherMetadataFilter(query ?? {}))
  requireAnyRead(ctx)
  const tx = await openTransaction(ctx)
  const tenant = ctx.principal.tenantId
  const { offset } = rangeOf(q)
  const show = (token: StoredToken) => {
    const transform = tokenAccess(ctx.principal, 'token:read', token)
    return transform === null ? null : applyTransform(token, transform, ctx.budget, ctx.principal)
  }
  const filter = { ids: q.id, types: q.type, now: ctx.now() }
  if (!tx && !ctx.principal.rules?.length && q.metadata === undefined) {
    const page = await ctx.store.listTokens(tenant, { offset, limit: q.size, ...filter })
    // A store ends a page of large tokens early (within 4 MiB): offset pages can't go on from there.
    if (page.items.length < Math.min(q.size, page.total - offset)) throw pageTooLarge('size')
    const items = page.items.map(show).filter((t): t is Token => t !== null)
    return paginated({ items, total: page.total }, q.page, q.size)
  }
  // Rules, metadata or a transaction decide per token: walk the view (heads only), count, page.
  return listTokensV1(ctx, tx, q)
}

/** Reads a token under the caller's read transform. Expired or absent → not found. */
export async function getToken(ctx: Ctx, id: string): Promise<Token> {
  const tx = await openTransaction(ctx)
  const token = await mustReadToken(ctx, tx, id)
  return applyTransform(
    token,
    requireTokenAccess(ctx.principal, 'token:read', token),
    ctx.budget,
    ctx.principal,
  )
}

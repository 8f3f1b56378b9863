import { applyTransform, requireTokenAccess, tokenAccess } from '../applications/index.js'
import type { Ctx } from '../call/index.js'
import { type Paginated, paginated, rangeOf } from '../call/index.js'
import type { Association, StoredToken, Token } from '../kernel/index.js'
import { conflict, invalid, notFound, parse } from '../kernel/index.js'
import { PageBytes, pageTooLarge, readWhole, type Seen, tooBroad, walkChildren } from '../search/index.js'
import type { CreateTokenInput, ListChildrenQuery } from '../tokens/index.js'
import {
  createdAnswer,
  creationChecks,
  fingerprintedNew,
  gatherMetadataFilter,
  listChildrenInput,
  newToken,
  writeTokens,
} from '../tokens/index.js'
import { mustReadHeads, mustReadToken, openTransaction, writeAs } from '../transactions/index.js'

/** The four association operations of the spec, for one caller. */
export function childOperations(ctx: Ctx) {
  return {
    link: (parentId: string, childId: string) => linkChild(ctx, parentId, childId),
    unlink: (parentId: string, childId: string) => unlinkChild(ctx, parentId, childId),
    create: (parentId: string, input: CreateTokenInput) => createChild(ctx, parentId, input),
    list: (parentId: string, query: ListChildrenQuery = {}) => listChildTokens(ctx, parentId, query),
  }
}

/**
 * Links two existing tokens as parent and child (`token:read` on both). Applies at once even
 * when the caller enlisted in a transaction: only token create, update and delete enlist.
 */
async function linkChild(ctx: Ctx, parentId: string, childId: string): Promise<void> {
  const tenant = () => ctx.principal.tenantId
  if (parentId === childId) throw invalid('child_id', 'a token cannot be its own child')
  const [parent, child] = await mustReadHeads(ctx, [parentId, childId])
  requireTokenAccess(ctx.principal, 'token:read', parent!)
  requireTokenAccess(ctx.principal, 'token:read', child!)
  if (await ctx.store.hasAssociation(tenant(), parentId, childId))
    throw conflict('the association already exists')
  const association: Association = {
    tenant_id: tenant(),
    parent_id: parentId,
    child_id: childId,
    created_at: ctx.now(),
  }
  await writeAs(ctx, null, {
    checks: [
      { check: 'token.present', tenant_id: tenant(), id: parentId },
      { check: 'token.present', tenant_id: tenant(), id: childId },
      { check: 'association.absent', tenant_id: tenant(), parent_id: parentId, child_id: childId },
    ],
    ops: [{ op: 'association.put', association }],
    locks: [],
  })
}

/** Removes an association (`token:delete` on both tokens). Applies at once, like `link`. */
async function unlinkChild(ctx: Ctx, parentId: string, childId: string): Promise<void> {
  const tenant = () => ctx.principal.tenantId
  const [parent, child] = await mustReadHeads(ctx, [parentId, childId])
  requireTokenAccess(ctx.principal, 'token:delete', parent!)
  requireTokenAccess(ctx.principal, 'token:delete', child!)
  if (!(await ctx.store.hasAssociation(tenant(), parentId, childId))) throw notFound('association')
  await writeAs(ctx, null, {
    checks: [{ check: 'association.present', tenant_id: tenant(), parent_id: parentId, child_id: childId }],
    ops: [{ op: 'association.delete', tenant_id: tenant(), parent_id: parentId, child_id: childId }],
    locks: [],
  })
}

/**
 * Creates a token as a child of `parentId`, token and link in one atomic write. The answer has no
 * `data`. Applies at once, like `link`: a transaction the caller enlisted in is not used.
 */
async function createChild(ctx: Ctx, parentId: string, input: CreateTokenInput): Promise<Token> {
  const tenant = () => ctx.principal.tenantId
  const minted: string[] = []
  const requested = await fingerprintedNew(ctx, newToken(ctx, input, minted))
  const { token } = requested
  const [parent] = await mustReadHeads(ctx, [parentId])
  requireTokenAccess(ctx.principal, 'token:read', parent!)
  if (token.id === parentId) throw conflict(`a token with id ${token.id} already exists`)
  // The child, or the token that answers for it when it asked for deduplication, is linked.
  const [created] = await writeTokens(
    ctx,
    [requested],
    (_tx, written) =>
      creationChecks(
        ctx,
        null,
        written.map((t) => t.id),
      ),
    {
      enlist: false,
      minted,
      extra: ([c]) => {
        const association: Association = {
          tenant_id: tenant(),
          parent_id: parentId,
          child_id: c!.token.id,
          created_at: ctx.now(),
        }
        return {
          checks: [
            { check: 'token.present', tenant_id: tenant(), id: parentId },
            ...(c!.deduplicated
              ? [{ check: 'token.present' as const, tenant_id: tenant(), id: c!.token.id }]
              : []),
          ],
          ops: [{ op: 'association.put', association }],
        }
      },
    },
  )
  return createdAnswer(ctx, created!)
}

/**
 * Lists children in link order, filtered by `id` and `type`, each under the caller's read
 * transform. Bounded as the v1 token list: counting costs at most the work cap (400 past it), and
 * a page whose children would pass 4 MiB of stored token data answers 400.
 */
async function listChildTokens(
  ctx: Ctx,
  parentId: string,
  query: ListChildrenQuery = {},
): Promise<Paginated<Token>> {
  const tenant = () => ctx.principal.tenantId
  const q = parse(listChildrenInput, gatherMetadataFilter(query ?? {}))
  const tx = await openTransaction(ctx)
  // Only a transaction's staged view needs the parent's whole record; else its head will do.
  const parent =
    tx === null || tx.version === 0
      ? (await mustReadHeads(ctx, [parentId]))[0]!
      : await mustReadToken(ctx, tx, parentId)
  requireTokenAccess(ctx.principal, 'token:read', parent)
  const { offset } = rangeOf(q)
  const show = (token: StoredToken) => {
    const transform = tokenAccess(ctx.principal, 'token:read', token)
    return transform === null ? null : applyTransform(token, transform, ctx.budget, ctx.principal)
  }
  if (!tx && !ctx.principal.rules?.length && q.metadata === undefined) {
    const page = await ctx.store.listChildren(tenant(), parentId, {
      offset,
      limit: q.size,
      now: ctx.now(),
      ids: q.id,
      types: q.type,
    })
    // A store ends a page of large children early (within 4 MiB): offset pages can't go on from there.
    if (page.items.length < Math.min(q.size, page.total - offset)) throw pageTooLarge('size')
    return paginated({ items: page.items.map((t) => show(t)!), total: page.total }, q.page, q.size)
  }
  // Rules, metadata or a transaction decide per child: walk the links (heads only), count, page.
  const wanted = Object.entries(q.metadata ?? {}).map(([k, v]) => [k, v.toLowerCase()] as const)
  const page: Seen[] = []
  const bytes = new PageBytes()
  let total = 0
  const end = await walkChildren(ctx, tx, parentId, ({ head, staged }) => {
    if (q.id.length && !q.id.includes(head.id)) return true
    if (q.type.length && !q.type.includes(head.type)) return true
    if (!wanted.every(([k, v]) => Object.hasOwn(head.metadata, k) && head.metadata[k]!.toLowerCase() === v))
      return true
    if (tokenAccess(ctx.principal, 'token:read', head) === null) return true
    if (total >= offset && page.length < q.size) {
      const seen = staged ? { head, staged } : { head }
      if (!bytes.take(seen)) throw pageTooLarge('size')
      page.push(seen)
    }
    total++
    return true
  })
  if (end.exhausted) throw tooBroad('page')
  const items = (await readWhole(ctx, page)).flatMap((token) => {
    const shownToken = show(token)
    return shownToken ? [shownToken] : []
  })
  return paginated({ items, total }, q.page, q.size)
}

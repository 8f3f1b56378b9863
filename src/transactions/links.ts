import type { Check, Op, Store } from '../store/index.js'

/**
 * Links as the core keeps them: a token is deleted with every link it is part of, each deleted by
 * an op of its own, in a write guarded on the token having gained no other link since they were
 * read (`links.within`). A link made meanwhile makes that write fail, and the caller reads again;
 * a link made after it fails its own `token.present`. So no link outlives one of its tokens.
 */

/** The ops that delete `ids` (in that order) with their links, and the guards that hold the links read. */
export async function deletionsWithLinks(
  store: Store,
  tenantId: string,
  ids: readonly string[],
): Promise<{ checks: Check[]; ops: Op[] }> {
  const checks: Check[] = []
  const ops: Op[] = []
  for (const id of new Set(ids)) {
    const links = await store.listLinks(tenantId, id)
    checks.push({
      check: 'links.within',
      tenant_id: tenantId,
      token_id: id,
      links: links.map((l) => ({ parent_id: l.parent_id, child_id: l.child_id })),
    })
    ops.push(
      { op: 'token.delete', tenant_id: tenantId, id },
      ...links.map(
        (l): Op => ({
          op: 'association.delete',
          tenant_id: tenantId,
          parent_id: l.parent_id,
          child_id: l.child_id,
        }),
      ),
    )
  }
  return { checks, ops }
}

/**
 * `writes` (a transaction's staged writes) with each `token.delete` followed by the deletes of the
 * token's links as they are now, and the guards that hold those links (see `deletionsWithLinks`).
 */
export async function withLinkDeletes(
  store: Store,
  tenantId: string,
  writes: readonly Op[],
): Promise<{ checks: Check[]; ops: Op[] }> {
  const deleted = writes.flatMap((w) => (w.op === 'token.delete' ? [w.id] : []))
  if (!deleted.length) return { checks: [], ops: [...writes] }
  const { checks, ops: deletions } = await deletionsWithLinks(store, tenantId, deleted)
  const linksOf = new Map<string, Op[]>()
  let current: Op[] = []
  for (const op of deletions) {
    if (op.op === 'token.delete') {
      current = []
      linksOf.set(op.id, current)
    } else current.push(op)
  }
  const ops: Op[] = []
  for (const w of writes) {
    ops.push(w)
    if (w.op === 'token.delete') ops.push(...(linksOf.get(w.id) ?? []))
  }
  return { checks, ops }
}

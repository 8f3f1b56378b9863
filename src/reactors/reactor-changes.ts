import { requirePermission } from '../applications/index.js'
import type { Ctx } from '../call/index.js'
import { checkFailure, expectWritten, type Paginated, paginated, rangeOf, retryCas } from '../call/index.js'
import { forbidden, newId, parse } from '../kernel/index.js'
import type { Op } from '../store/index.js'
import type {
  CreateReactorInput,
  ListReactorsQuery,
  PatchReactorInput,
  UpdateReactorInput,
} from './inputs.js'
import {
  buildReactor,
  type Configuration,
  formulaFor,
  mustGetReactor,
  replaceReactor,
  type ShownReactor,
  showReactor,
  useDelete,
  writeReactor,
} from './reactor-records.js'
import {
  createReactorInput,
  listReactorsInput,
  patchReactorInput,
  type ReactorBody,
  updateReactorInput,
} from './reactor-schemas.js'

/** Creates a reactor (see `reactorOperations().create`). */
export async function createReactor(ctx: Ctx, input: CreateReactorInput): Promise<ShownReactor> {
  requirePermission(ctx.principal, 'reactor:create')
  const body = parse(createReactorInput, input)
  if (body.formula_id !== undefined && body.code === undefined) {
    const formula = await formulaFor(ctx, body.formula_id)
    if (formula.status === 'coming_soon') {
      throw forbidden('the reactor formula is in limited availability (coming soon)')
    }
  }
  const base = { id: newId(), created_at: ctx.now(), created_by: ctx.principal.id }
  const reactor = await buildReactor(ctx, body, base)
  expectWritten(await writeReactor(ctx, reactor, null))
  return showReactor(ctx, reactor)
}

/** Lists the tenant's reactors (see `reactorOperations().list`). */
export async function listReactors(ctx: Ctx, query: ListReactorsQuery): Promise<Paginated<ShownReactor>> {
  requirePermission(ctx.principal, 'reactor:read')
  const q = parse(listReactorsInput, query ?? {})
  const page = await ctx.store.listReactors(ctx.principal.tenantId, {
    ...rangeOf(q),
    ...(q.name === undefined ? {} : { name: q.name }),
    ...(q.id.length ? { ids: q.id } : {}),
  })
  const cache = new Map<string, Promise<unknown>>()
  const items = await Promise.all(page.items.map((r) => showReactor(ctx, r, cache)))
  return paginated({ items, total: page.total }, q.page, q.size)
}

/** The reactor `id` as callers see it. */
export async function getReactor(ctx: Ctx, id: string): Promise<ShownReactor> {
  requirePermission(ctx.principal, 'reactor:read')
  return showReactor(ctx, await mustGetReactor(ctx, id))
}

/** Replaces the reactor (see `reactorOperations().update`). */
export async function updateReactor(ctx: Ctx, id: string, input: UpdateReactorInput): Promise<ShownReactor> {
  requirePermission(ctx.principal, 'reactor:update')
  const given = parse(updateReactorInput, input)
  const next = await replaceReactor(ctx, id, async (current) => {
    const body = { ...given }
    if (body.formula_id === undefined && body.code === undefined) {
      if (current.code !== undefined) body.code = current.code
      else body.formula_id = current.formula_id
    }
    const next = await buildReactor(ctx, body, current)
    next.modified_at = ctx.now()
    next.modified_by = ctx.principal.id
    return next
  })
  return showReactor(ctx, next)
}

/** The configuration after a merge patch: `null` removes a setting, or as the whole member every setting. */
function patchedConfiguration(
  current: Configuration,
  patch: Record<string, string | number | boolean | null> | null | undefined,
): Configuration {
  if (patch === null) return {}
  const configuration: Configuration = { ...current }
  if (patch) {
    for (const [key, value] of Object.entries(patch)) {
      if (value === null) delete configuration[key]
      else configuration[key] = value
    }
  }
  return configuration
}

/** Changes the members given (see `reactorOperations().patch`). */
export async function patchReactor(ctx: Ctx, id: string, input: PatchReactorInput): Promise<ShownReactor> {
  requirePermission(ctx.principal, 'reactor:update')
  const patch = parse(patchReactorInput, input ?? {})
  const next = await replaceReactor(ctx, id, async (current) => {
    const formulaId = patch.formula_id ?? patch.formula?.id
    const body: ReactorBody = {
      name: patch.name ?? current.name,
      code: patch.code ?? (formulaId === undefined ? current.code : undefined),
      formula_id: formulaId ?? (patch.code === undefined ? current.formula_id : undefined),
      application_id:
        patch.application === null ? undefined : (patch.application?.id ?? current.application_id),
      configuration: patchedConfiguration(current.configuration, patch.configuration),
    }
    const next = await buildReactor(ctx, body, current)
    next.modified_at = ctx.now()
    next.modified_by = ctx.principal.id
    return next
  })
  return showReactor(ctx, next)
}

/** Deletes the reactor and its formula-use record. */
export async function deleteReactor(ctx: Ctx, id: string): Promise<void> {
  requirePermission(ctx.principal, 'reactor:delete')
  const tenant = ctx.principal.tenantId
  // Guarded on the reactor read, so that the formula-use record deleted is the one it has.
  await retryCas(async () => {
    const current = await mustGetReactor(ctx, id)
    const ops: Op[] = [{ op: 'reactor.delete', tenant_id: tenant, id: current.id }]
    if (current.formula_id !== undefined) ops.push(useDelete(current))
    const result = await ctx.store.write({
      checks: [{ check: 'reactor.unchanged', tenant_id: tenant, id: current.id, reactor: current }],
      ops,
    })
    if (result.ok) return { done: undefined }
    if (result.failed.check !== 'reactor.unchanged') throw checkFailure(result.failed)
    return { lost: result.failed }
  })
}

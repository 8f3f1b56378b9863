import { shownApplication } from '../applications/index.js'
import type { Ctx } from '../call/index.js'
import { checkFailure, retryCas } from '../call/index.js'
import type { Application, Reactor, ReactorFormula, StoredFormula } from '../kernel/index.js'
import { invalid, notFound, ServiceError, type ValidationIssues } from '../kernel/index.js'
import type { Check, Op, WriteResult } from '../store/index.js'
import { shownFormula } from './formulas.js'
import { castValue } from './react.js'
import type { ReactorBody } from './reactor-schemas.js'

/** A reactor's settings. */
export type Configuration = Reactor['configuration']

/**
 * A reactor as callers see it: the stored reactor with its formula (the Reactor Formula object,
 * for a formula-based reactor) and its application (when it has one that still exists).
 */
export type ShownReactor = Reactor & { formula?: ReactorFormula; application?: Application }

/**
 * The configuration cast to the formula's contract: every declared setting present and cast to its
 * declared type (`"5"` → 5, `"true"` → true, as react args are), nothing undeclared. Throws
 * `validation_failed` naming `configuration.<name>` for each missing, uncastable or undeclared one.
 */
export function castConfiguration(formula: StoredFormula, configuration: Configuration): Configuration {
  const issues: ValidationIssues = {}
  const out: Configuration = {}
  const declared = new Map(formula.configuration.map((e) => [e.name, e.type]))
  for (const [name, type] of declared) {
    if (!Object.hasOwn(configuration, name)) {
      issues[`configuration.${name}`] = ['is required']
      continue
    }
    const cast = castValue(type, configuration[name]!)
    if (cast.ok) out[name] = cast.value as string | number | boolean
    else issues[`configuration.${name}`] = [cast.message]
  }
  for (const name of Object.keys(configuration)) {
    if (!declared.has(name)) issues[`configuration.${name}`] = ['is not declared by the reactor formula']
  }
  if (Object.keys(issues).length) {
    const fields = Object.keys(issues).join(', ')
    throw new ServiceError('validation_failed', `Invalid configuration: ${fields}`, { issues })
  }
  return out
}

/** The op that deletes the formula-use record of `reactor` (which runs a formula). */
export const useDelete = (reactor: Reactor): Op => ({
  op: 'formula_use.delete',
  formula_id: reactor.formula_id!,
  tenant_id: reactor.tenant_id,
  reactor_id: reactor.id,
})

/** The caller's reactor `id`, or `not_found`. */
export async function mustGetReactor(ctx: Ctx, id: unknown): Promise<Reactor> {
  const reactor = typeof id === 'string' ? await ctx.store.getReactor(ctx.principal.tenantId, id) : null
  if (!reactor) throw notFound('reactor')
  return reactor
}

/** The reactor formula `id` visible to the caller's tenant, or `not_found`. */
export async function formulaFor(ctx: Ctx, id: string): Promise<StoredFormula> {
  const formula = await ctx.store.getFormula(ctx.principal.tenantId, id)
  if (!formula) throw notFound('reactor formula')
  return formula
}

/** The application a reactor may act for: one of the tenant's public or private applications. */
async function applicationFor(ctx: Ctx, id: string): Promise<Application> {
  const application = await ctx.store.getApplication(ctx.principal.tenantId, id)
  if (!application) throw notFound('application')
  if (application.type === 'management') {
    throw invalid('application.id', 'must be a public or private application')
  }
  return application
}

/** `code`, once the runner (when there is one) has found that it compiles. */
async function compiled(ctx: Ctx, code: string): Promise<string> {
  const error = ctx.runner ? await ctx.runner.check(code) : null
  if (error !== null) throw invalid('code', `does not compile: ${error}`)
  return code
}

/**
 * Puts `reactor` (over `previous`, guarded on it being unchanged) with its formula-use record,
 * and deletes the record of the formula `previous` ran when that changes. A formula-based
 * reactor's write carries a `formula.present` check, so a formula deleted concurrently can't leave
 * a reactor pointing at nothing; a reactor naming an application carries `application.present`.
 */
export function writeReactor(ctx: Ctx, reactor: Reactor, previous: Reactor | null): Promise<WriteResult> {
  const tenant = ctx.principal.tenantId
  const checks: Check[] = []
  if (previous)
    checks.push({ check: 'reactor.unchanged', tenant_id: tenant, id: reactor.id, reactor: previous })
  if (reactor.formula_id !== undefined) {
    checks.push({ check: 'formula.present', tenant_id: tenant, id: reactor.formula_id })
  }
  if (reactor.application_id !== undefined) {
    checks.push({ check: 'application.present', tenant_id: tenant, id: reactor.application_id })
  }
  const ops: Op[] = [{ op: 'reactor.put', reactor }]
  if (previous?.formula_id !== undefined && previous.formula_id !== reactor.formula_id)
    ops.push(useDelete(previous))
  if (reactor.formula_id !== undefined) {
    ops.push({
      op: 'formula_use.put',
      use: { formula_id: reactor.formula_id, tenant_id: reactor.tenant_id, reactor_id: reactor.id },
    })
  }
  return ctx.store.write({ checks, ops })
}

/**
 * Reads the reactor, makes its next version from it and writes that guarded on the read; reads
 * and makes it again when a concurrent write changed the reactor meanwhile.
 */
export function replaceReactor(
  ctx: Ctx,
  id: string,
  make: (current: Reactor) => Promise<Reactor>,
): Promise<Reactor> {
  return retryCas(async () => {
    const current = await mustGetReactor(ctx, id)
    const next = await make(current)
    const result = await writeReactor(ctx, next, current)
    if (result.ok) return { done: next }
    if (result.failed.check !== 'reactor.unchanged') throw checkFailure(result.failed)
    return { lost: result.failed }
  })
}

/** The reactor with its formula and application, each read once per call (`cache`). */
export async function showReactor(
  ctx: Ctx,
  reactor: Reactor,
  cache = new Map<string, Promise<unknown>>(),
): Promise<ShownReactor> {
  const tenant = ctx.principal.tenantId
  const once = <T>(key: string, load: () => Promise<T>): Promise<T> => {
    let found = cache.get(key) as Promise<T> | undefined
    if (!found) {
      found = load()
      cache.set(key, found)
    }
    return found
  }
  const shown: ShownReactor = { ...reactor }
  if (reactor.formula_id !== undefined) {
    const id = reactor.formula_id
    const formula = await once(`f:${id}`, () => ctx.store.getFormula(tenant, id))
    if (formula) shown.formula = shownFormula(formula)
  }
  if (reactor.application_id !== undefined) {
    const id = reactor.application_id
    const application = await once(`a:${id}`, () => ctx.store.getApplication(tenant, id))
    if (application) shown.application = shownApplication(application)
  }
  return shown
}

/** The reactor `body` describes, checked: its formula's configuration contract, or its code compiled. */
export async function buildReactor(
  ctx: Ctx,
  body: ReactorBody,
  base: Pick<Reactor, 'id' | 'created_at' | 'created_by'>,
): Promise<Reactor> {
  const reactor: Reactor = {
    id: base.id,
    tenant_id: ctx.principal.tenantId,
    name: body.name,
    configuration: {},
    created_at: base.created_at,
    created_by: base.created_by,
  }
  if (body.code !== undefined) {
    reactor.code = await compiled(ctx, body.code)
    reactor.configuration = body.configuration
  } else if (body.formula_id !== undefined) {
    const formula = await formulaFor(ctx, body.formula_id)
    reactor.formula_id = formula.id
    reactor.configuration = castConfiguration(formula, body.configuration)
  }
  if (body.application_id !== undefined) {
    reactor.application_id = (await applicationFor(ctx, body.application_id)).id
  }
  // Fields in a fixed order, so equal reactors are equal as JSON.
  return ordered(reactor)
}

/** `reactor` with its fields in one order (optional ones only when set). */
function ordered(r: Reactor): Reactor {
  return {
    id: r.id,
    tenant_id: r.tenant_id,
    name: r.name,
    ...(r.formula_id === undefined ? {} : { formula_id: r.formula_id }),
    ...(r.code === undefined ? {} : { code: r.code }),
    ...(r.application_id === undefined ? {} : { application_id: r.application_id }),
    configuration: r.configuration,
    created_at: r.created_at,
    created_by: r.created_by,
    ...(r.modified_at === undefined ? {} : { modified_at: r.modified_at }),
    ...(r.modified_by === undefined ? {} : { modified_by: r.modified_by }),
  }
}

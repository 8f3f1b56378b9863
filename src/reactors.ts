import { requirePermission } from './access.js'
import { expectWritten } from './checks.js'
import type { Ctx } from './context.js'
import { newId } from './crypto.js'
import { detokenizeArgs } from './detokenize.js'
import { forbidden, notFound, ServiceError, type ValidationIssues } from './errors.js'
import { type Paginated, paginated, rangeOf } from './pagination.js'
import { castArgs, type JsonObject, type ReactResult, reactResult, runFailure } from './react.js'
import { createReactorInput, listReactorsInput, reactInput, updateReactorInput } from './schemas/reactor.js'
import type { Reactor, StoredFormula } from './types.js'
import { parse } from './validate.js'

type Configuration = Reactor['configuration']

/**
 * Throws `validation_failed` unless `configuration` satisfies the formula's contract: every declared
 * setting present with its declared type, and nothing undeclared. Issues name `configuration.<name>`.
 */
export function requireConfiguration(formula: StoredFormula, configuration: Configuration): void {
  const issues: ValidationIssues = {}
  const declared = new Map(formula.configuration.map((e) => [e.name, e.type]))
  for (const [name, type] of declared) {
    if (!Object.hasOwn(configuration, name)) issues[`configuration.${name}`] = ['is required']
    else if (typeof configuration[name] !== type) issues[`configuration.${name}`] = [`must be a ${type}`]
  }
  for (const name of Object.keys(configuration)) {
    if (!declared.has(name)) issues[`configuration.${name}`] = ['is not declared by the reactor formula']
  }
  if (Object.keys(issues).length) {
    const fields = Object.keys(issues).join(', ')
    throw new ServiceError('validation_failed', `Invalid configuration: ${fields}`, { issues })
  }
}

/** Whether the principal may invoke reactors: `token:use` as a permission or in any of its access rules. */
function requireUse(ctx: Ctx): void {
  const { permissions, rules } = ctx.principal
  if (permissions.includes('token:use') || rules?.some((r) => r.permissions.includes('token:use'))) return
  throw forbidden('missing permission token:use')
}

/**
 * Reactor create, list, get, update, delete (`reactor:*`) and react (`token:use`) for one caller.
 * A reactor's writes carry a `formula.present` check, so a formula deleted concurrently can't leave
 * a reactor pointing at nothing (and a used formula can't be deleted).
 */
export function reactorOperations(ctx: Ctx) {
  const tenant = () => ctx.principal.tenantId
  const mustGet = async (id: unknown) => {
    const reactor = typeof id === 'string' ? await ctx.store.getReactor(tenant(), id) : null
    if (!reactor) throw notFound('reactor')
    return reactor
  }
  const formulaFor = async (id: string) => {
    const formula = await ctx.store.getFormula(tenant(), id)
    if (!formula) throw notFound('reactor formula')
    return formula
  }
  const write = async (reactor: Reactor, exists: boolean) =>
    expectWritten(
      await ctx.store.write({
        checks: [
          ...(exists ? [{ check: 'reactor.present' as const, tenant_id: tenant(), id: reactor.id }] : []),
          { check: 'formula.present', tenant_id: tenant(), id: reactor.formula_id },
        ],
        ops: [{ op: 'reactor.put', reactor }],
      }),
    )

  return {
    /** Creates a reactor from a formula visible to the tenant; its configuration must satisfy the formula's. */
    async create(input: unknown): Promise<Reactor> {
      requirePermission(ctx.principal, 'reactor:create')
      const body = parse(createReactorInput, input)
      const formula = await formulaFor(body.formula_id)
      if (formula.status === 'coming_soon') {
        throw forbidden('the reactor formula is in limited availability (coming soon)')
      }
      requireConfiguration(formula, body.configuration)
      const reactor: Reactor = {
        id: newId(),
        tenant_id: tenant(),
        name: body.name,
        formula_id: formula.id,
        configuration: body.configuration,
        created_at: ctx.now(),
        created_by: ctx.principal.id,
      }
      await write(reactor, false)
      return reactor
    },

    /** Lists the tenant's reactors in creation order. */
    async list(query: unknown = {}): Promise<Paginated<Reactor>> {
      requirePermission(ctx.principal, 'reactor:read')
      const q = parse(listReactorsInput, query ?? {})
      const page = await ctx.store.listReactors(tenant(), rangeOf(q))
      return paginated(page, q.page, q.size)
    },

    async get(id: string): Promise<Reactor> {
      requirePermission(ctx.principal, 'reactor:read')
      return mustGet(id)
    },

    /** Replaces name and configuration (PUT); `formula_id`, when given, moves the reactor to that formula. */
    async update(id: string, input: unknown): Promise<Reactor> {
      requirePermission(ctx.principal, 'reactor:update')
      const body = parse(updateReactorInput, input)
      const current = await mustGet(id)
      const formula = await formulaFor(body.formula_id ?? current.formula_id)
      requireConfiguration(formula, body.configuration)
      const { modified_at: _at, modified_by: _by, ...kept } = current
      const next: Reactor = {
        ...kept,
        name: body.name,
        formula_id: formula.id,
        configuration: body.configuration,
        modified_at: ctx.now(),
        modified_by: ctx.principal.id,
      }
      await write(next, true)
      return next
    },

    async delete(id: string): Promise<void> {
      requirePermission(ctx.principal, 'reactor:delete')
      const current = await mustGet(id)
      expectWritten(
        await ctx.store.write({
          checks: [{ check: 'reactor.present', tenant_id: tenant(), id: current.id }],
          ops: [{ op: 'reactor.delete', tenant_id: tenant(), id: current.id }],
        }),
      )
    },

    /**
     * Invokes the reactor: replaces `{{ <token id> }}` expressions in `args` by token data (under
     * `token:use` on each token; see `detokenizeArgs`), checks and casts `args` against the formula's request parameters, runs
     * the formula's code with `{ args, configuration }` through the service's runner (isolated,
     * time-limited), and creates the tokens its `tokenize` output asks for in one atomic write.
     * Needs `token:use` (as a permission or in an access rule) and, per created token, `token:create`.
     * Does not enlist in the caller's transaction.
     */
    async react(id: string, input: unknown = {}): Promise<ReactResult> {
      requireUse(ctx)
      const body = parse(reactInput, input) ?? {}
      const reactor = await mustGet(id)
      const formula = await formulaFor(reactor.formula_id)
      const args = castArgs(
        formula.request_parameters,
        await detokenizeArgs(ctx, (body.args ?? {}) as JsonObject),
      )
      if (!ctx.runner) throw new ServiceError('formula_invalid', 'no formula runner is configured')
      const timeoutMs = ctx.options.reactorTimeoutMs
      const outcome = await ctx.runner.run(
        formula.code,
        { args, configuration: reactor.configuration },
        { timeoutMs, isolationKey: tenant() },
      )
      if (!outcome.ok) throw runFailure(outcome, timeoutMs)
      return reactResult(ctx, outcome.value)
    },
  }
}

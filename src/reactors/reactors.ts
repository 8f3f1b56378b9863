import { requirePermission, shownApplication } from '../applications/index.js'
import type {
  Application,
  Check,
  Ctx,
  Op,
  Reactor,
  ReactorFormula,
  ReactResult,
  StoredFormula,
} from '../kernel/index.js'
import {
  checkFailure,
  expectWritten,
  forbidden,
  invalid,
  newId,
  notFound,
  type Paginated,
  paginated,
  parse,
  rangeOf,
  retryCas,
  ServiceError,
  type ValidationIssues,
} from '../kernel/index.js'
import type { WriteResult } from '../store/index.js'
import { detokenizeArgs } from '../tokens/index.js'
import { type CallbackBody, callbackError } from './callback.js'
import { allowedUrl } from './egress.js'
import { shownFormula } from './formulas.js'
import type {
  CreateReactorInput,
  ListReactorsQuery,
  PatchReactorInput,
  ReactInput,
  UpdateReactorInput,
} from './inputs.js'
import { castArgs, castValue, type JsonObject, reactResult, runFailure } from './react.js'
import {
  createReactorInput,
  listReactorsInput,
  patchReactorInput,
  type ReactorBody,
  reactInput,
  updateReactorInput,
} from './reactor-schemas.js'

type Configuration = Reactor['configuration']

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

/** Whether the principal may invoke reactors: `token:use` as a permission or in any of its access rules. */
function requireUse(ctx: Ctx): void {
  const { permissions, rules } = ctx.principal
  if (permissions.includes('token:use') || rules?.some((r) => r.permissions.includes('token:use'))) return
  throw forbidden('missing permission token:use')
}

/**
 * Reactor create, list, get, update, patch, delete (`reactor:*`) and react (`token:use`) for one
 * caller. A reactor runs a formula's code (formula-based) or its own inline `code`. A formula-based
 * reactor's writes carry a `formula.present` check and put the reactor's formula-use record, so a
 * formula deleted concurrently can't leave a reactor pointing at nothing, and a used formula can't
 * be deleted (`formula.unused`); updates and deletes are guarded on the reactor read
 * (`reactor.unchanged`), so the use record they delete is the reactor's; a reactor naming an
 * application carries `application.present`.
 */

/** The op that deletes the formula-use record of `reactor` (which runs a formula). */
const useDelete = (reactor: Reactor): Op => ({
  op: 'formula_use.delete',
  formula_id: reactor.formula_id!,
  tenant_id: reactor.tenant_id,
  reactor_id: reactor.id,
})

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
  /** The application a reactor may act for: one of the tenant's public or private applications. */
  const applicationFor = async (id: string) => {
    const application = await ctx.store.getApplication(tenant(), id)
    if (!application) throw notFound('application')
    if (application.type === 'management') {
      throw invalid('application.id', 'must be a public or private application')
    }
    return application
  }
  const compiled = async (code: string) => {
    const error = ctx.runner ? await ctx.runner.check(code) : null
    if (error !== null) throw invalid('code', `does not compile: ${error}`)
    return code
  }
  /**
   * Puts `reactor` (over `previous`, guarded on it being unchanged) with its formula-use record,
   * and deletes the record of the formula `previous` ran when that changes.
   */
  const write = async (reactor: Reactor, previous: Reactor | null): Promise<WriteResult> => {
    const checks: Check[] = []
    if (previous)
      checks.push({ check: 'reactor.unchanged', tenant_id: tenant(), id: reactor.id, reactor: previous })
    if (reactor.formula_id !== undefined) {
      checks.push({ check: 'formula.present', tenant_id: tenant(), id: reactor.formula_id })
    }
    if (reactor.application_id !== undefined) {
      checks.push({ check: 'application.present', tenant_id: tenant(), id: reactor.application_id })
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
  const replace = async (id: string, make: (current: Reactor) => Promise<Reactor>): Promise<Reactor> => {
    return retryCas(async () => {
      const current = await mustGet(id)
      const next = await make(current)
      const result = await write(next, current)
      if (result.ok) return { done: next }
      if (result.failed.check !== 'reactor.unchanged') throw checkFailure(result.failed)
      return { lost: result.failed }
    })
  }
  /** The reactor with its formula and application, each read once per call (`cache`). */
  const show = async (reactor: Reactor, cache = new Map<string, Promise<unknown>>()) => {
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
      const formula = await once(`f:${id}`, () => ctx.store.getFormula(tenant(), id))
      if (formula) shown.formula = shownFormula(formula)
    }
    if (reactor.application_id !== undefined) {
      const id = reactor.application_id
      const application = await once(`a:${id}`, () => ctx.store.getApplication(tenant(), id))
      if (application) shown.application = shownApplication(application)
    }
    return shown
  }
  /** The reactor `body` describes, checked: its formula's configuration contract, or its code compiled. */
  const build = async (body: ReactorBody, base: Pick<Reactor, 'id' | 'created_at' | 'created_by'>) => {
    const reactor: Reactor = {
      id: base.id,
      tenant_id: tenant(),
      name: body.name,
      configuration: {},
      created_at: base.created_at,
      created_by: base.created_by,
    }
    if (body.code !== undefined) {
      reactor.code = await compiled(body.code)
      reactor.configuration = body.configuration
    } else if (body.formula_id !== undefined) {
      const formula = await formulaFor(body.formula_id)
      reactor.formula_id = formula.id
      reactor.configuration = castConfiguration(formula, body.configuration)
    }
    if (body.application_id !== undefined) {
      reactor.application_id = (await applicationFor(body.application_id)).id
    }
    // Fields in a fixed order, so equal reactors are equal as JSON.
    return ordered(reactor)
  }

  return {
    /**
     * Creates a reactor: from a formula visible to the tenant (`formula: { id }`; its configuration
     * must satisfy the formula's), or with its own `code` (compile-checked). `application: { id }`
     * names a public or private application of the tenant.
     */
    async create(input: CreateReactorInput): Promise<ShownReactor> {
      requirePermission(ctx.principal, 'reactor:create')
      const body = parse(createReactorInput, input)
      if (body.formula_id !== undefined && body.code === undefined) {
        const formula = await formulaFor(body.formula_id)
        if (formula.status === 'coming_soon') {
          throw forbidden('the reactor formula is in limited availability (coming soon)')
        }
      }
      const reactor = await build(body, { id: newId(), created_at: ctx.now(), created_by: ctx.principal.id })
      expectWritten(await write(reactor, null))
      return show(reactor)
    },

    /** Lists the tenant's reactors in creation order; `name` filters as for formulas, `id` by id. */
    async list(query: ListReactorsQuery = {}): Promise<Paginated<ShownReactor>> {
      requirePermission(ctx.principal, 'reactor:read')
      const q = parse(listReactorsInput, query ?? {})
      const page = await ctx.store.listReactors(tenant(), {
        ...rangeOf(q),
        ...(q.name === undefined ? {} : { name: q.name }),
        ...(q.id.length ? { ids: q.id } : {}),
      })
      const cache = new Map<string, Promise<unknown>>()
      const items = await Promise.all(page.items.map((r) => show(r, cache)))
      return paginated({ items, total: page.total }, q.page, q.size)
    },

    async get(id: string): Promise<ShownReactor> {
      requirePermission(ctx.principal, 'reactor:read')
      return show(await mustGet(id))
    },

    /**
     * Replaces the reactor (PUT): name, configuration and application; `formula` or `code` when
     * given (a reactor may move from one to the other), else it keeps the formula or code it has.
     */
    async update(id: string, input: UpdateReactorInput): Promise<ShownReactor> {
      requirePermission(ctx.principal, 'reactor:update')
      const body_in = parse(updateReactorInput, input)
      const next = await replace(id, async (current) => {
        const body = { ...body_in }
        if (body.formula_id === undefined && body.code === undefined) {
          if (current.code !== undefined) body.code = current.code
          else body.formula_id = current.formula_id
        }
        const next = await build(body, current)
        next.modified_at = ctx.now()
        next.modified_by = ctx.principal.id
        return next
      })
      return show(next)
    },

    /**
     * Changes the members given (JSON merge patch): `name`, `code` or `formula`, `application`
     * (`null` removes it), `configuration` (merged setting by setting; `null` removes a setting,
     * or, for the whole member, every setting).
     */
    async patch(id: string, input: PatchReactorInput): Promise<ShownReactor> {
      requirePermission(ctx.principal, 'reactor:update')
      const patch = parse(patchReactorInput, input ?? {})
      const next = await replace(id, async (current) => {
        let configuration: Configuration = { ...current.configuration }
        if (patch.configuration === null) configuration = {}
        else if (patch.configuration) {
          for (const [key, value] of Object.entries(patch.configuration)) {
            if (value === null) delete configuration[key]
            else configuration[key] = value
          }
        }
        const formulaId = patch.formula_id ?? patch.formula?.id
        const body: ReactorBody = {
          name: patch.name ?? current.name,
          code: patch.code ?? (formulaId === undefined ? current.code : undefined),
          formula_id: formulaId ?? (patch.code === undefined ? current.formula_id : undefined),
          application_id:
            patch.application === null ? undefined : (patch.application?.id ?? current.application_id),
          configuration,
        }
        const next = await build(body, current)
        next.modified_at = ctx.now()
        next.modified_by = ctx.principal.id
        return next
      })
      return show(next)
    },

    async delete(id: string): Promise<void> {
      requirePermission(ctx.principal, 'reactor:delete')
      // Guarded on the reactor read, so that the formula-use record deleted is the one it has.
      await retryCas(async () => {
        const current = await mustGet(id)
        const ops: Op[] = [{ op: 'reactor.delete', tenant_id: tenant(), id: current.id }]
        if (current.formula_id !== undefined) ops.push(useDelete(current))
        const result = await ctx.store.write({
          checks: [{ check: 'reactor.unchanged', tenant_id: tenant(), id: current.id, reactor: current }],
          ops,
        })
        if (result.ok) return { done: undefined }
        if (result.failed.check !== 'reactor.unchanged') throw checkFailure(result.failed)
        return { lost: result.failed }
      })
    },

    /**
     * Invokes the reactor: replaces `{{ <token id> }}` expressions in `args` by token data (under
     * `token:use` on each token; see `detokenizeArgs`); for a formula-based reactor, checks and
     * casts `args` against the formula's request parameters (inline code gets them as sent); runs
     * the code with `{ args, configuration }` through the service's runner (isolated, time-limited),
     * and creates the tokens its `tokenize` output asks for in one atomic write. Needs `token:use`
     * (as a permission or in an access rule) and, per created token, `token:create`. Does not enlist
     * in the caller's transaction. A `callback_url` belongs to `reactAsync` (HTTP: the same route
     * answers 202); `timeout_ms` applies to asynchronous reacts only.
     */
    async react(id: string, input: ReactInput = {}): Promise<ReactResult> {
      requireUse(ctx)
      const body = parse(reactInput, input) ?? {}
      if ((body.callback_url ?? body.callbackUrl ?? null) !== null) {
        throw invalid('callback_url', 'makes the react asynchronous: use reactors.reactAsync')
      }
      const run = await prepareRun(id, body.args)
      const timeoutMs = ctx.options.reactorTimeoutMs
      const outcome = await run.start(timeoutMs)
      if (!outcome.ok) throw runFailure(outcome, timeoutMs)
      return reactResult(ctx, outcome.value)
    },

    /**
     * Invokes the reactor asynchronously (the documented `callback_url`): checks everything a react
     * checks up front — the key, the reactor, `args` with their detokenization and casts, and that
     * `callback_url`'s origin is on the service's egress allow-list (`reactorEgress`; none listed:
     * every callback is refused) — then resolves at once and runs the code within `timeout_ms`
     * (10000–210000, default 10000; the runner may cap it). When done, the result (as `react`
     * answers it) or the error response (`{ status, detail, errors? }`; a timeout is a Reactor
     * Runtime Error, 500) is POSTed to `callback_url` by the host, under the egress checks.
     * A delivery the receiver does not take (no 2xx) is retried up to 10 times with exponential
     * backoff on the service's clock, from `service.admin.sweep()`; a failed delivery or run never
     * throws anywhere. A react holds a place until its callback is delivered or given up: past
     * `maxAsyncReactsPerTenant` of the tenant's or `maxAsyncReacts` in all, it is refused (429).
     */
    async reactAsync(id: string, input: ReactInput): Promise<void> {
      requireUse(ctx)
      const body = parse(reactInput, input) ?? {}
      const url = body.callback_url ?? body.callbackUrl
      if (url === undefined || url === null) throw invalid('callback_url', 'is required')
      const origins = ctx.options.reactorEgress
      if (!allowedUrl(origins, url)) {
        throw invalid(
          'callback_url',
          origins.length
            ? 'must be a URL on an origin of the egress allow-list (reactorEgress)'
            : 'is refused: no egress allow-list (reactorEgress) is configured, so nothing may be called back',
        )
      }
      const run = await prepareRun(id, body.args)
      // A place among the outstanding asynchronous reacts: 429 past the tenant's or the service's bound.
      const outstanding = ctx.callbacks.reserve(tenant())
      const timeoutMs = body.timeout_ms ?? body.timeoutMs ?? ASYNC_TIMEOUT_MS
      void (async () => {
        let result: CallbackBody
        try {
          const outcome = await run.start(timeoutMs)
          if (!outcome.ok && outcome.kind === 'timeout') {
            result = {
              status: 500,
              detail: 'Reactor Runtime Error',
              errors: { error: [`the reactor formula ran longer than ${timeoutMs} ms`] },
            }
          } else if (!outcome.ok) result = callbackError(runFailure(outcome, timeoutMs))
          else result = await reactResult(ctx, outcome.value)
        } catch (error) {
          result = callbackError(error)
        }
        await outstanding.send(origins, url, result)
      })().catch(() => {})
    },
  }

  /** Everything a react checks before running: the reactor, `args` detokenized and cast, the code. */
  async function prepareRun(id: string, rawArgs: unknown) {
    const reactor = await mustGet(id)
    let code: string
    let args = await detokenizeArgs(ctx, (rawArgs ?? {}) as JsonObject)
    if (reactor.code !== undefined) code = reactor.code
    else {
      const formula = await formulaFor(reactor.formula_id ?? '')
      args = castArgs(formula.request_parameters, args)
      code = formula.code
    }
    const runner = ctx.runner
    if (!runner) throw new ServiceError('formula_invalid', 'no formula runner is configured')
    return {
      start: (timeoutMs: number) =>
        runner.run(
          code,
          { args, configuration: reactor.configuration },
          { timeoutMs, isolationKey: tenant(), egress: ctx.options.reactorEgress },
        ),
    }
  }
}

/** The documented default limit of an asynchronous react. */
const ASYNC_TIMEOUT_MS = 10_000

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

import * as v from 'valibot'
import { requirePermission } from '../applications/index.js'
import type { Ctx } from '../call/index.js'
import { expectWritten, type Paginated, paginated, rangeOf } from '../call/index.js'
import type {
  ConfigurationElement,
  FormulaRunner,
  FormulaStatus,
  FormulaType,
  ReactorFormula,
  RequestParameterElement,
  StoredFormula,
} from '../kernel/index.js'
import { forbidden, invalid, newId, notFound, parse } from '../kernel/index.js'
import type { Store } from '../store/index.js'
import {
  type FormulaInput,
  formulaInput,
  listFormulasInput,
  requireDistinctNames,
} from './formula-schemas.js'
import type { ListReactorFormulasQuery, OfficialFormulaInput, ReactorFormulaInput } from './inputs.js'

/**
 * The tenant id a `formula.present` check carries for an official formula: no tenant has it, and
 * the check also accepts official formulas, so it holds exactly when the official formula exists.
 */
const NO_TENANT = ''

/** The public shape of a stored formula: without `tenant_id`. */
export function shownFormula(formula: StoredFormula): ReactorFormula {
  const { tenant_id: _tenant, ...shown } = formula
  return shown
}

/**
 * Parses a create or update body, requires `type` to be `type`, unique element names, and code that
 * compiles (when a runner can check it; the code is compiled, never run). Throws `validation_failed`.
 */
export async function validFormula(
  runner: FormulaRunner | undefined,
  input: unknown,
  type: FormulaType,
): Promise<FormulaInput> {
  const body = parse(formulaInput, input)
  requireDistinctNames(body)
  if (body.type !== type) {
    throw invalid(
      'type',
      type === 'private'
        ? 'must be private: official formulas are published by the service operator'
        : 'must be official',
    )
  }
  const error = runner ? await runner.check(body.code) : null
  if (error !== null) throw invalid('code', `does not compile: ${error}`)
  return body
}

/** The record fields a body sets, with absent optional fields left out (an update clears them). */
function fromBody(body: FormulaInput) {
  const configuration = body.configuration.map(
    ({ name, description, type }): ConfigurationElement =>
      description === undefined ? { name, type } : { name, description, type },
  )
  const request_parameters = body.request_parameters.map(
    ({ name, description, type, optional }): RequestParameterElement =>
      description === undefined ? { name, type, optional } : { name, description, type, optional },
  )
  return {
    name: body.name,
    ...(body.description === undefined ? {} : { description: body.description }),
    type: body.type,
    ...(body.icon === undefined ? {} : { icon: body.icon }),
    code: body.code,
    configuration,
    request_parameters,
  }
}

/** `fromBody` over `current`: id, owner, status and creation fields kept; modification stamped. */
function replaced(current: StoredFormula, body: FormulaInput, now: string, by?: string): StoredFormula {
  return {
    id: current.id,
    ...fromBody(body),
    status: current.status,
    ...(current.created_at === undefined ? {} : { created_at: current.created_at }),
    ...(current.created_by === undefined ? {} : { created_by: current.created_by }),
    modified_at: now,
    ...(by === undefined ? {} : { modified_by: by }),
    tenant_id: current.tenant_id,
  }
}

/**
 * Reactor formula create, list, get, update and delete for one caller (`reactor:*` permissions).
 * A tenant sees official formulas and its own private ones; another tenant's private formula is
 * not found. Tenants create private formulas only and can't change or delete official ones.
 */
export function formulaOperations(ctx: Ctx) {
  const tenant = () => ctx.principal.tenantId
  const mustGet = async (id: unknown) => {
    const formula = typeof id === 'string' ? await ctx.store.getFormula(tenant(), id) : null
    if (!formula) throw notFound('reactor formula')
    return formula
  }
  const mustOwn = async (id: unknown, action: string) => {
    const formula = await mustGet(id)
    if (formula.tenant_id === null) throw forbidden(`official reactor formulas can't be ${action}`)
    return formula
  }

  return {
    /** Creates a private formula (status `verified`). Code that doesn't compile is a validation error. */
    async create(input: ReactorFormulaInput): Promise<ReactorFormula> {
      requirePermission(ctx.principal, 'reactor:create')
      const body = await validFormula(ctx.runner, input, 'private')
      const formula: StoredFormula = {
        id: newId(),
        ...fromBody(body),
        status: 'verified',
        created_at: ctx.now(),
        created_by: ctx.principal.id,
        tenant_id: tenant(),
      }
      expectWritten(await ctx.store.write({ ops: [{ op: 'formula.put', formula }] }))
      return shownFormula(formula)
    },

    /** Lists official and own formulas by name; `name` filters (case-insensitive, `*` wildcard, else "contains"). */
    async list(query: ListReactorFormulasQuery = {}): Promise<Paginated<ReactorFormula>> {
      requirePermission(ctx.principal, 'reactor:read')
      const q = parse(listFormulasInput, query ?? {})
      const page = await ctx.store.listFormulas(tenant(), {
        ...rangeOf(q),
        ...(q.name === undefined ? {} : { name: q.name }),
      })
      return paginated({ items: page.items.map(shownFormula), total: page.total }, q.page, q.size)
    },

    /** An official formula or one of the tenant's own. */
    async get(id: string): Promise<ReactorFormula> {
      requirePermission(ctx.principal, 'reactor:read')
      return shownFormula(await mustGet(id))
    },

    /** Replaces a private formula (PUT): omitted optional fields are cleared. Official ones → forbidden. */
    async update(id: string, input: ReactorFormulaInput): Promise<ReactorFormula> {
      requirePermission(ctx.principal, 'reactor:update')
      const current = await mustOwn(id, 'updated')
      const body = await validFormula(ctx.runner, input, 'private')
      const next = replaced(current, body, ctx.now(), ctx.principal.id)
      expectWritten(
        await ctx.store.write({
          checks: [{ check: 'formula.present', tenant_id: tenant(), id: current.id }],
          ops: [{ op: 'formula.put', formula: next }],
        }),
      )
      return shownFormula(next)
    },

    /** Deletes a private formula; one that a reactor uses → conflict (checked atomically with the delete). */
    async delete(id: string): Promise<void> {
      requirePermission(ctx.principal, 'reactor:delete')
      const current = await mustOwn(id, 'deleted')
      expectWritten(
        await ctx.store.write({
          checks: [
            { check: 'formula.present', tenant_id: tenant(), id: current.id },
            { check: 'formula.unused', id: current.id },
          ],
          ops: [{ op: 'formula.delete', tenant_id: current.tenant_id, id: current.id }],
        }),
      )
    },
  }
}

/** Options of the operator's official formula writes. */
export interface OfficialFormulaOptions {
  /** `verified` (the default) or `coming_soon`. */
  status?: FormulaStatus
}

/** The operator's management of official formulas (part of `service.admin`). */
export interface OfficialFormulaAdmin {
  /** Publishes an official formula to every tenant; the body is that of `POST /reactor-formulas` with type `official`. */
  createOfficialFormula(
    input: OfficialFormulaInput,
    options?: OfficialFormulaOptions,
  ): Promise<ReactorFormula>
  /** Replaces an official formula (PUT semantics); its status stays unless `options.status` is given. */
  updateOfficialFormula(
    id: string,
    input: OfficialFormulaInput,
    options?: OfficialFormulaOptions,
  ): Promise<ReactorFormula>
  /** Deletes an official formula; one that any tenant's reactor uses → conflict. */
  deleteOfficialFormula(id: string): Promise<void>
}

const statusOption = v.optional(
  v.strictObject({
    status: v.optional(v.picklist(['verified', 'coming_soon'], 'must be verified or coming_soon')),
  }),
  {},
)

/** The official formula admin over `store`; code is compile-checked by `runner` when given. */
export function officialFormulaAdmin(deps: {
  store: Store
  runner: FormulaRunner | undefined
  now(): string
}): OfficialFormulaAdmin {
  const { store } = deps
  const mustGet = async (id: unknown) => {
    const formula = typeof id === 'string' ? await store.getFormula(null, id) : null
    if (!formula || formula.tenant_id !== null) throw notFound('reactor formula')
    return formula
  }
  return {
    async createOfficialFormula(input, options) {
      const { status } = parse(statusOption, options)
      const body = await validFormula(deps.runner, input, 'official')
      const formula: StoredFormula = {
        id: newId(),
        ...fromBody(body),
        status: status ?? 'verified',
        created_at: deps.now(),
        tenant_id: null,
      }
      expectWritten(await store.write({ ops: [{ op: 'formula.put', formula }] }))
      return shownFormula(formula)
    },
    async updateOfficialFormula(id, input, options) {
      const { status } = parse(statusOption, options)
      const current = await mustGet(id)
      const body = await validFormula(deps.runner, input, 'official')
      const next = replaced(current, body, deps.now())
      if (status !== undefined) next.status = status
      expectWritten(
        await store.write({
          checks: [{ check: 'formula.present', tenant_id: NO_TENANT, id: current.id }],
          ops: [{ op: 'formula.put', formula: next }],
        }),
      )
      return shownFormula(next)
    },
    async deleteOfficialFormula(id) {
      const current = await mustGet(id)
      expectWritten(
        await store.write({
          checks: [
            { check: 'formula.present', tenant_id: NO_TENANT, id: current.id },
            { check: 'formula.unused', id: current.id },
          ],
          ops: [{ op: 'formula.delete', tenant_id: null, id: current.id }],
        }),
      )
    },
  }
}

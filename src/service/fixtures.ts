import * as v from 'valibot'
import type { childOperations } from '../associations/index.js'
import type { Tenant } from '../kernel/index.js'
import { parse, ServiceError } from '../kernel/index.js'
import type { formulaOperations, reactorOperations } from '../reactors/index.js'
import type { tokenOperations } from '../tokens/index.js'
import type {
  CreateApplicationInput,
  CreateReactorInput,
  CreateTenantInput,
  CreateTokenInput,
  ReactorFormulaInput,
} from './inputs.js'
import type { Unchecked } from './unchecked.js'

const entries = v.optional(v.array(v.looseObject({})))

/**
 * A fixture: tenants and what they hold, loaded through the same operations (and validation) as
 * API calls. Applications may carry fixed keys (`key`), tokens fixed ids, so tests can hard-code
 * them. A formula entry's `id` is a name within the fixture: a reactor entry's `formula_id` (or
 * `formula.id`) that equals it refers to the formula the entry made.
 *
 * ```json
 * { "tenants": [{ "id": "t-acme", "name": "Acme",
 *     "applications": [{ "name": "backend", "type": "private", "key": "key_backend_0123456789abcdefghij",
 *                        "permissions": ["token:create", "token:read"],
 *                        "rules": [{ "description": "all", "priority": 1, "container": "/", "transform": "reveal",
 *                                    "permissions": ["token:read"] }] }],
 *     "tokens": [{ "id": "card-1", "type": "token", "data": { "number": "4242424242424242" } }],
 *     "associations": [{ "parent_id": "card-1", "child_id": "card-2" }] }] }
 * ```
 */
export interface Fixture {
  tenants: FixtureTenant[]
}

/** One tenant of a fixture. Each list's entries take the body of the matching create call. */
export interface FixtureTenant {
  /** A fixed tenant id (default: a new one). */
  id?: string
  name: string
  /** `admin.createApplication` inputs (without `tenantId`), `key` included when fixed. */
  applications?: (CreateApplicationInput & { key?: string })[]
  /** Token create bodies (`id` fixes the token id). */
  tokens?: CreateTokenInput[]
  /** Links made in order: `{ parent_id, child_id }`. */
  associations?: { parent_id: string; child_id: string }[]
  /** Reactor formula create bodies, each with an optional `id` that reactor entries may name. */
  formulas?: (ReactorFormulaInput & { id?: string })[]
  /** Reactor create bodies. */
  reactors?: CreateReactorInput[]
}

const fixtureSchema = v.strictObject({
  tenants: v.array(
    v.strictObject({
      id: v.optional(
        v.pipe(v.string(), v.regex(/^[A-Za-z0-9_.:~-]{1,200}$/, 'letters, digits, _ . : ~ - (1–200)')),
      ),
      name: v.pipe(v.string(), v.minLength(1)),
      applications: entries,
      tokens: entries,
      associations: v.optional(v.array(v.strictObject({ parent_id: v.string(), child_id: v.string() }))),
      formulas: entries,
      reactors: entries,
    }),
  ),
})

/** What loading needs from the service: tenant and application creation, and operations in a tenant. */
export interface FixtureDeps {
  createTenant(input: CreateTenantInput, id?: string): Promise<Tenant>
  /** `admin.createApplication`, taking an entry unchecked (it validates it). */
  createApplication(input: unknown): Promise<unknown>
  /**
   * Operations acting in `tenantId` with every permission of a private application, taking the
   * entries unchecked (each operation validates its input).
   */
  operate(tenantId: string): Unchecked<{
    tokens: ReturnType<typeof tokenOperations>
    children: ReturnType<typeof childOperations>
    formulas: ReturnType<typeof formulaOperations>
    reactors: ReturnType<typeof reactorOperations>
  }>
  /** Deletes the tenants `ids` with everything they hold (undoes a load that failed part way). */
  deleteTenants(ids: string[]): Promise<void>
}

/** `error` with every field path under `path`, so a bad entry is named in full (`tenants.0.tokens.2.data`). */
function at(path: string, error: unknown): unknown {
  if (!(error instanceof ServiceError)) return error
  const issues: Record<string, string[]> = {}
  for (const [field, messages] of Object.entries(error.issues ?? {})) issues[`${path}.${field}`] = messages
  if (!error.issues) issues[path] = [error.message]
  const options = error.code === 'validation_failed' || !error.issues ? { issues } : {}
  return new ServiceError(
    error.code === 'validation_failed' ? error.code : 'validation_failed',
    `${path}: ${error.message}`,
    options,
  )
}

/** Runs `fn`, naming `path` in any error it throws. */
async function entry<T>(path: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (error) {
    throw at(path, error)
  }
}

/**
 * Loads `fixture` through `deps`, in order: tenants, then per tenant its applications, formulas,
 * reactors, tokens and associations. The fixture's shape is checked first (nothing is written when
 * it is wrong); an entry a create call refuses fails the load with a validation error naming its
 * path, and the tenants the load made are deleted again, so a failed load changes nothing.
 * Answers the tenants made.
 */
export async function loadFixture(deps: FixtureDeps, value: unknown): Promise<Tenant[]> {
  const fixture = parse(fixtureSchema, value)
  const made: Tenant[] = []
  try {
    await loadTenants(deps, fixture, made)
  } catch (error) {
    await deps.deleteTenants(made.map((t) => t.id))
    throw error
  }
  return made
}

/** Loads every tenant of `fixture`, pushing each onto `made` as soon as it exists. */
async function loadTenants(deps: FixtureDeps, fixture: v.InferOutput<typeof fixtureSchema>, made: Tenant[]) {
  for (const [i, t] of fixture.tenants.entries()) {
    const path = `tenants.${i}`
    const tenant = await entry(path, () => deps.createTenant({ name: t.name }, t.id))
    made.push(tenant)
    const ops = deps.operate(tenant.id)
    for (const [j, a] of (t.applications ?? []).entries()) {
      await entry(`${path}.applications.${j}`, () => deps.createApplication({ ...a, tenantId: tenant.id }))
    }
    const formulaIds = new Map<string, string>()
    for (const [j, { id, ...f }] of (t.formulas ?? []).entries()) {
      const created = await entry(`${path}.formulas.${j}`, () => ops.formulas.create(f))
      if (typeof id === 'string') formulaIds.set(id, created.id)
    }
    for (const [j, r] of (t.reactors ?? []).entries()) {
      const named = r as { formula_id?: unknown; formula?: { id?: unknown } }
      const body: Record<string, unknown> = { ...r }
      if (typeof named.formula_id === 'string')
        body['formula_id'] = formulaIds.get(named.formula_id) ?? named.formula_id
      if (typeof named.formula?.id === 'string') {
        body['formula'] = { ...named.formula, id: formulaIds.get(named.formula.id) ?? named.formula.id }
      }
      await entry(`${path}.reactors.${j}`, () => ops.reactors.create(body))
    }
    for (const [j, token] of (t.tokens ?? []).entries()) {
      await entry(`${path}.tokens.${j}`, () => ops.tokens.create(token))
    }
    for (const [j, link] of (t.associations ?? []).entries()) {
      await entry(`${path}.associations.${j}`, () => ops.children.link(link.parent_id, link.child_id))
    }
  }
}

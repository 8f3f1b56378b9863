import type { Ctx } from '../call/index.js'
import { checkFailure, type Paginated, paginated, rangeOf, retryCas } from '../call/index.js'
import type {
  AccessRule,
  Application,
  ApplicationType,
  Permission,
  StoredApplication,
  StoredApplicationKey,
} from '../kernel/index.js'
import { invalid, newApiKey, newId, notFound, parse, ServiceError, sha256 } from '../kernel/index.js'
import { requirePermission } from './access.js'
import type { CreateApplicationInput, ListApplicationsQuery, UpdateApplicationInput } from './inputs.js'
import { PERMISSIONS_BY_TYPE } from './permissions.js'
import { createApplicationInput, listInput, updateApplicationInput } from './schemas.js'

/** An application with its plaintext key: the answer of create, the only time the key is shown. */
export type ApplicationWithKey = Application & { key: string }

/** Throws `validation_failed` naming each permission (plain or in a rule) the type may not hold. */
export function requirePermissionsFitType(
  type: ApplicationType,
  permissions: Permission[],
  rules: AccessRule[] = [],
) {
  const allowed = PERMISSIONS_BY_TYPE[type]
  const issues: Record<string, string[]> = {}
  const refuse = (path: string, p: Permission) => {
    if (!allowed.includes(p)) issues[path] = [`${p} is not allowed for ${type} applications`]
  }
  for (const [i, p] of permissions.entries()) refuse(`permissions.${i}`, p)
  for (const [r, rule] of rules.entries()) {
    for (const [i, p] of rule.permissions.entries()) refuse(`rules.${r}.permissions.${i}`, p)
  }
  if (Object.keys(issues).length) {
    throw new ServiceError(
      'validation_failed',
      `Invalid input: permissions not allowed for ${type} applications`,
      { issues },
    )
  }
}

/** The public shape of a stored application: never its keys' hashes. */
export function shownApplication(a: StoredApplication): Application {
  const { key_hash: _hash, keys: _keys, ...rest } = a
  return rest
}

/** Builds a new application record and its key from a validated create body. */
export function newApplication(
  tenantId: string,
  input: unknown,
  now: string,
  createdBy?: string,
  givenKey?: string,
): { application: StoredApplication; key: string } {
  const body = parse(createApplicationInput, input)
  requirePermissionsFitType(body.type, body.permissions, body.rules)
  if (body.expires_at !== undefined && body.expires_at <= now)
    throw invalid('expires_at', 'must be in the future')
  const key = givenKey ?? newApiKey()
  const firstKey: StoredApplicationKey = {
    id: newId(),
    key_hash: sha256(key),
    created_at: now,
    ...(createdBy ? { created_by: createdBy } : {}),
  }
  const application: StoredApplication = {
    id: newId(),
    tenant_id: tenantId,
    name: body.name,
    type: body.type,
    permissions: body.permissions,
    ...(body.rules ? { rules: body.rules } : {}),
    created_at: now,
    ...(createdBy ? { created_by: createdBy } : {}),
    ...(body.expires_at !== undefined ? { expires_at: body.expires_at } : {}),
    keys: [firstKey],
  }
  return { application, key }
}

/** The caller's tenant's application `id`, or `not_found`. */
async function mustGetApplication(ctx: Ctx, id: string): Promise<StoredApplication> {
  const a = await ctx.store.getApplication(ctx.principal.tenantId, id)
  if (!a) throw notFound('application')
  return a
}

/** Writes `change(current)` guarded on the record read (`application.unchanged`), retrying on a race. */
function changeApplication(
  ctx: Ctx,
  id: string,
  change: (current: StoredApplication) => StoredApplication,
): Promise<StoredApplication> {
  return retryCas(async () => {
    const current = await mustGetApplication(ctx, id)
    const next = change(current)
    const result = await ctx.store.write({
      checks: [
        { check: 'application.unchanged', tenant_id: ctx.principal.tenantId, id, application: current },
      ],
      ops: [{ op: 'application.put', application: next }],
    })
    return result.ok ? { done: next } : { lost: result.failed }
  })
}

/** Replaces name, permissions and rules (see `applicationOperations().update`). */
async function updateApplication(ctx: Ctx, id: string, input: UpdateApplicationInput): Promise<Application> {
  requirePermission(ctx.principal, 'application:update')
  const body = parse(updateApplicationInput, input)
  const now = ctx.now()
  const next = await changeApplication(ctx, id, (current) => {
    requirePermissionsFitType(current.type, body.permissions, body.rules)
    const { rules: _rules, ...kept } = current
    return {
      ...kept,
      name: body.name,
      permissions: body.permissions,
      ...(body.rules ? { rules: body.rules } : {}),
      modified_at: now,
      modified_by: ctx.principal.id,
    }
  })
  return shownApplication(next)
}

/** Regenerates the application's API key (see `applicationOperations().regenerateKey`). */
async function regenerateKey(ctx: Ctx, id: string): Promise<ApplicationWithKey> {
  requirePermission(ctx.principal, 'application:update')
  const key = newApiKey()
  const now = ctx.now()
  const next = await changeApplication(ctx, id, (current) => {
    const { key_hash: _legacy, keys: _keys, ...kept } = current
    const fresh: StoredApplicationKey = {
      id: newId(),
      key_hash: sha256(key),
      created_at: now,
      created_by: ctx.principal.id,
    }
    return { ...kept, keys: [fresh], modified_at: now, modified_by: ctx.principal.id }
  })
  return { ...shownApplication(next), key }
}

/** Application management for one caller (`application:*` permissions, management keys). */
export function applicationOperations(ctx: Ctx) {
  const tenant = () => ctx.principal.tenantId
  const mustGet = (id: string) => mustGetApplication(ctx, id)
  return {
    /** Creates an application; the answer carries its plaintext key, which is never shown again. */
    async create(input: CreateApplicationInput): Promise<ApplicationWithKey> {
      requirePermission(ctx.principal, 'application:create')
      const { application, key } = newApplication(tenant(), input, ctx.now(), ctx.principal.id)
      await ctx.store.write({ ops: [{ op: 'application.put', application }] })
      return { ...shownApplication(application), key }
    },

    /** Lists the tenant's applications in creation order, only those of `id` when given. */
    async list(query: ListApplicationsQuery = {}): Promise<Paginated<Application>> {
      requirePermission(ctx.principal, 'application:read')
      const q = parse(listInput, query ?? {})
      const page = await ctx.store.listApplications(tenant(), { ...rangeOf(q), ids: q.id })
      return paginated({ items: page.items.map(shownApplication), total: page.total }, q.page, q.size)
    },

    async get(id: string): Promise<Application> {
      requirePermission(ctx.principal, 'application:read')
      return shownApplication(await mustGet(id))
    },

    /**
     * The caller's own application (`GET /applications/key`: the application of the API key the
     * request carries). Needs `application:read`, as the reference documents; a session key has no
     * application of its own (404).
     */
    async getByKey(): Promise<Application> {
      requirePermission(ctx.principal, 'application:read')
      if (ctx.principal.kind !== 'application') throw notFound('application')
      return shownApplication(await mustGet(ctx.principal.id))
    },

    /**
     * Replaces name, permissions and rules; the type, keys and `expires_at` stay. A compare-and-set
     * on the application record, retried on a concurrent change, so a key added or deleted meanwhile
     * is never undone.
     */
    update: (id: string, input: UpdateApplicationInput): Promise<Application> =>
      updateApplication(ctx, id, input),

    /**
     * Regenerates the application's API key (`POST /applications/{id}/regenerate`,
     * `application:update`): every key it held stops working at once and one new key takes their
     * place; the answer carries it, never shown again.
     */
    regenerateKey: (id: string): Promise<ApplicationWithKey> => regenerateKey(ctx, id),

    /** Deletes an application; its key stops working at once. */
    async delete(id: string): Promise<void> {
      requirePermission(ctx.principal, 'application:delete')
      const result = await ctx.store.write({
        checks: [{ check: 'application.present', tenant_id: tenant(), id }],
        ops: [{ op: 'application.delete', tenant_id: tenant(), id }],
      })
      if (!result.ok) throw checkFailure(result.failed)
    },
  }
}

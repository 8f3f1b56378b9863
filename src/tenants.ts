import * as v from 'valibot'
import type { Ctx } from './context.js'
import { publicTenant } from './encryption/sealed-store.js'
import { forbidden, notFound } from './errors.js'
import { PERMISSIONS, PERMISSIONS_BY_TYPE } from './schemas/access.js'
import type { ApplicationType, Tenant } from './types.js'
import { parse } from './validate.js'

/** A permission of the catalogue (`GET /permissions`), as the reference's Permission object. */
export interface PermissionInfo {
  type: string
  description: string
  application_types: ApplicationType[]
}

/** What each permission allows, in the catalogue's words; a permission missing here is described from its name. */
const DESCRIPTIONS: Record<string, string> = {
  'token:create': 'Create tokens',
  'token:read': 'Read tokens',
  'token:update': 'Update tokens',
  'token:delete': 'Delete tokens',
  'token:use': 'Use tokens in reactors (detokenize into formula code)',
  'token:search': 'Search tokens',
  'reactor:create': 'Create reactors and reactor formulas',
  'reactor:read': 'Read reactors and reactor formulas',
  'reactor:update': 'Update reactors and reactor formulas',
  'reactor:delete': 'Delete reactors and reactor formulas',
  'application:create': 'Create applications and application keys',
  'application:read': 'Read applications and application keys',
  'application:update': 'Update applications',
  'application:delete': 'Delete applications and application keys',
  'tenant:read': 'Read the tenant',
}

const TYPES = ['private', 'public', 'management'] as const satisfies readonly ApplicationType[]

/** Query of the permission catalogue: `application_type` filters by the type that may hold them. */
const listPermissionsInput = v.strictObject({
  application_type: v.optional(v.picklist(TYPES, 'must be private, public or management')),
})

/** The permission catalogue: every permission, the application types that may hold it, what it allows. */
export function permissionCatalogue(): PermissionInfo[] {
  return PERMISSIONS.map((type) => ({
    type,
    description: DESCRIPTIONS[type] ?? `${type.split(':').slice(1).join(' ')} ${type.split(':')[0]}`,
    application_types: TYPES.filter((t) => (PERMISSIONS_BY_TYPE[t] as readonly string[]).includes(type)),
  }))
}

/** `GET /tenants/self` (the caller's tenant, `tenant:read`) and `GET /permissions` (any key). */
export function tenantOperations(ctx: Ctx) {
  return {
    /** The tenant of the caller's key, without its wrapped data key. Needs `tenant:read`. */
    async self(): Promise<Tenant> {
      const { permissions } = ctx.principal
      if (!(permissions as readonly string[]).includes('tenant:read')) {
        throw forbidden('missing permission tenant:read')
      }
      const tenant = await ctx.store.getTenant(ctx.principal.tenantId)
      if (!tenant) throw notFound('tenant')
      return publicTenant(tenant)
    },
  }
}

/** The permission catalogue for any authenticated caller, filtered by `application_type`. */
export function permissionOperations(_ctx: Ctx) {
  return {
    async list(query: unknown = {}): Promise<PermissionInfo[]> {
      const q = parse(listPermissionsInput, query ?? {})
      const all = permissionCatalogue()
      return q.application_type === undefined
        ? all
        : all.filter((p) => p.application_types.includes(q.application_type!))
    },
  }
}

import {
  APPLICATION_TYPES,
  listPermissionsInput,
  PERMISSIONS,
  PERMISSIONS_BY_TYPE,
  requirePermission,
} from '../applications/index.js'
import type { Ctx } from '../call/index.js'
import { publicTenant } from '../encryption/index.js'
import type { ApplicationType, Tenant } from '../kernel/index.js'
import { notFound, parse } from '../kernel/index.js'
import type { ListPermissionsQuery } from './inputs.js'

/** A permission of the catalogue (`GET /permissions`), as the reference's Permission object. */
export interface PermissionInfo {
  type: string
  description: string
  application_types: ApplicationType[]
}

/** What each permission allows, in the catalogue's words. */
const DESCRIPTIONS: Record<(typeof PERMISSIONS)[number], string> = {
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
  'tenant:update': 'Update the tenant',
  'tenant:delete': 'Delete the tenant',
  'log:read': 'Read audit logs',
  'proxy:create': 'Create proxies',
  'proxy:read': 'Read proxies',
  'proxy:update': 'Update proxies',
  'proxy:delete': 'Delete proxies',
  'tenant:member:read': 'Read tenant members',
  'tenant:member:update': 'Update tenant members',
  'tenant:member:delete': 'Remove tenant members',
  'tenant:invitation:create': 'Invite tenant members',
  'tenant:invitation:read': 'Read tenant invitations',
  'tenant:invitation:update': 'Resend tenant invitations',
  'tenant:invitation:delete': 'Delete tenant invitations',
  'report:read': 'Read tenant usage reports',
  'webhook:create': 'Create webhooks',
  'webhook:read': 'Read webhooks and the event types',
  'webhook:update': 'Update webhooks',
  'webhook:delete': 'Delete webhooks',
  'keys:create': 'Create client encryption keys',
  'keys:read': 'Read client encryption keys (never their private keys)',
  'keys:delete': 'Delete client encryption keys',
  'token-intent:create': 'Create token intents',
  'token-intent:read': 'Read token intents (never their data)',
  'token-intent:delete': 'Delete token intents',
  'documents:create': 'Upload documents',
  'documents:read': 'Read documents (their metadata, not their bytes)',
  'documents:reveal': 'Download documents (their bytes)',
  'documents:delete': 'Delete documents',
}

/** The permission catalogue: every permission, the application types that may hold it, what it allows. */
export function permissionCatalogue(): PermissionInfo[] {
  return PERMISSIONS.map((type) => ({
    type,
    description: DESCRIPTIONS[type],
    application_types: APPLICATION_TYPES.filter((t) =>
      (PERMISSIONS_BY_TYPE[t] as readonly string[]).includes(type),
    ),
  }))
}

/** `GET /tenants/self` (the caller's tenant, `tenant:read`) and `GET /permissions` (any key). */
export function tenantOperations(ctx: Ctx) {
  return {
    /** The tenant of the caller's key, without its wrapped data key. Needs `tenant:read`. */
    async self(): Promise<Tenant> {
      requirePermission(ctx.principal, 'tenant:read')
      const tenant = await ctx.store.getTenant(ctx.principal.tenantId)
      if (!tenant) throw notFound('tenant')
      return publicTenant(tenant)
    },
  }
}

/** The permission catalogue for any authenticated caller, filtered by `application_type`. */
export function permissionOperations(_ctx: Ctx) {
  return {
    async list(query: ListPermissionsQuery = {}): Promise<PermissionInfo[]> {
      const q = parse(listPermissionsInput, query ?? {})
      const all = permissionCatalogue()
      return q.application_type === undefined
        ? all
        : all.filter((p) => p.application_types.includes(q.application_type!))
    },
  }
}

import { requirePermission } from '../applications/index.js'
import type { Ctx } from '../call/index.js'
import { forbidden, notFound } from '../kernel/index.js'

/**
 * Why a tenant can't be renamed or deleted through the API: the host application made it
 * (`service.admin.createTenant`) and owns its lifecycle.
 */
const HOST_MANAGES_TENANTS =
  'the host application manages this tenant (service.admin): it is not renamed or deleted through the API'

/** The reference's usage report, as far as this vault can answer it exactly. */
export interface TenantUsageReport {
  /** The tenant's tokens that have not expired, committed (a transaction's staged tokens are not counted). */
  total_tokens: number
  token_report: { total_tokens: number }
}

/**
 * What a tenant owned by the host application answers of the reference's tenant writes and reports
 * (`PUT /tenants/self`, `DELETE /tenants/self`, `GET /tenants/self/reports/usage`).
 */
export function hostedTenantOperations(ctx: Ctx) {
  return {
    /** `PUT /tenants/self`: needs `tenant:update`, then always 403 (the host manages tenants); nothing changes. */
    async update(_body: unknown): Promise<never> {
      requirePermission(ctx.principal, 'tenant:update')
      throw forbidden(HOST_MANAGES_TENANTS)
    },
    /** `DELETE /tenants/self`: needs `tenant:delete`, then always 403 (the host manages tenants); nothing changes. */
    async delete(): Promise<never> {
      requirePermission(ctx.principal, 'tenant:delete')
      throw forbidden(HOST_MANAGES_TENANTS)
    },
    /**
     * `GET /tenants/self/reports/usage` (`report:read`): the count of the tenant's tokens, read as the
     * v1 token list counts them (never decrypting one). The reference's monthly active tokens and
     * plan allowance are not answered: this vault keeps no activity count and has no plan.
     */
    async usageReport(): Promise<TenantUsageReport> {
      requirePermission(ctx.principal, 'report:read')
      const page = await ctx.store.listTokens(ctx.principal.tenantId, { offset: 0, limit: 1, now: ctx.now() })
      return { total_tokens: page.total, token_report: { total_tokens: page.total } }
    },
  }
}

/**
 * The reference's application templates (`GET /application-templates`, `application:read`). Its
 * catalogue is Basis Theory's own data, served by its API and not published as a fixed list, so this
 * vault offers none: the list is empty and every id answers 404.
 */
export function applicationTemplateOperations(ctx: Ctx) {
  return {
    async list(): Promise<never[]> {
      requirePermission(ctx.principal, 'application:read')
      return []
    },
    async get(_id: string): Promise<never> {
      requirePermission(ctx.principal, 'application:read')
      throw notFound('application template')
    },
  }
}

/**
 * The reference's roles (`GET /roles`): the roles of tenant members, the people of Basis Theory's
 * portal. A tenant owned by the host application has no members, so the list is empty; reading it
 * needs `tenant:member:read`, as the members it describes do.
 */
export function roleOperations(ctx: Ctx) {
  return {
    async list(): Promise<never[]> {
      requirePermission(ctx.principal, 'tenant:member:read')
      return []
    },
  }
}

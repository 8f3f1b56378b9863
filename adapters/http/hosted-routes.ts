import { schemaRef } from './response-schemas.js'
import type { Route, RouteDoc } from './route-types.js'

/**
 * The reference's routes that a tenant owned by the host application answers from a fixed list or
 * refuses (see `src/service/hosted.ts`): tenant update and delete (403: the host manages tenants),
 * the usage report, application templates and roles (none here). `ROUTES` spreads them in.
 */
export const HOSTED_ROUTES: ReadonlyArray<readonly [string, string, Route]> = [
  ['PUT', '/tenants/self', { status: 200, query: false, run: (c, _p, _q, b) => c.tenants.update(b) }],
  ['DELETE', '/tenants/self', { status: 204, query: false, run: (c) => c.tenants.delete() }],
  ['GET', '/tenants/self/reports/usage', { status: 200, query: false, run: (c) => c.tenants.usageReport() }],
  ['GET', '/application-templates', { status: 200, query: false, run: (c) => c.applicationTemplates.list() }],
  [
    'GET',
    '/application-templates/:id',
    { status: 200, query: false, run: (c, [id]) => c.applicationTemplates.get(id!) },
  ],
  ['GET', '/roles', { status: 200, query: false, run: (c) => c.roles.list() }],
]

/** What the OpenAPI document says of `HOSTED_ROUTES`; `ROUTE_DOCS` spreads it in. */
export const HOSTED_ROUTE_DOCS: Record<string, RouteDoc> = {
  'PUT /tenants/self': {
    operationId: 'updateSelfTenant',
    tag: 'Tenants',
    summary: 'Refused (403): the host application manages the tenant; needs tenant:update',
    body: null,
    response: schemaRef('Tenant'),
  },
  'DELETE /tenants/self': {
    operationId: 'deleteSelfTenant',
    tag: 'Tenants',
    summary: 'Refused (403): the host application manages the tenant; needs tenant:delete',
  },
  'GET /tenants/self/reports/usage': {
    operationId: 'getSelfTenantUsageReport',
    tag: 'Tenants',
    summary: "The tenant's token count (`total_tokens`); needs report:read",
    response: {
      type: 'object',
      properties: {
        total_tokens: { type: 'integer' },
        token_report: { type: 'object', properties: { total_tokens: { type: 'integer' } } },
      },
    },
  },
  'GET /application-templates': {
    tag: 'Applications',
    summary: 'Application templates: none here (an empty list); needs application:read',
    response: { type: 'array', maxItems: 0 },
  },
  'GET /application-templates/:id': {
    tag: 'Applications',
    summary: 'An application template: none here (404); needs application:read',
  },
  'GET /roles': {
    tag: 'Tenants',
    summary: 'Tenant-member roles: none here (an empty list)',
    response: { type: 'array', maxItems: 0 },
  },
}

import { listLogsQuery } from '../../src/audit/index.js'
import { ServiceError } from '../../src/kernel/index.js'
import type { TestService } from '../../src/service/index.js'
import { logViewQuery } from './console-query.js'
import type { JsonSchema } from './response-schemas.js'
import type { Route, RouteDoc } from './route-types.js'

/**
 * The audit log API, as the legacy SDK's `bt.logs.list` and node-sdk 5's `client.logs.list` /
 * `getEntityTypes` call it: `GET /logs` (filters `entity_type`, `entity_id`, `start_date`,
 * `end_date`; paging `page`, `size`, `start`) and `GET /logs/entity-types`. Each is a mapping onto
 * `client.logs`; the rules are in src/audit/log-reads.ts.
 */
export const LOG_ROUTES: ReadonlyArray<readonly [string, string, Route]> = [
  ['GET', '/logs', { status: 200, query: true, run: (c, _p, q) => c.logs.list(q) }],
  ['GET', '/logs/entity-types', { status: 200, query: false, run: (c) => c.logs.entityTypes() }],
]

const log: JsonSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    tenant_id: { type: 'string' },
    actor_id: { type: 'string' },
    actor_type: { type: 'string' },
    entity_type: { type: 'string' },
    entity_id: { type: 'string' },
    operation: { type: 'string' },
    message: { type: 'string' },
    outcome: { type: 'string' },
    request_id: { type: 'string' },
    created_at: { type: 'string', format: 'date-time' },
  },
  required: ['id', 'tenant_id', 'actor_type', 'entity_type', 'operation', 'message', 'outcome', 'created_at'],
}

/** The OpenAPI entries of `LOG_ROUTES` (spread into `ROUTE_DOCS`). */
export const LOG_ROUTE_DOCS: Record<string, RouteDoc> = {
  'GET /logs': {
    tag: 'Logs',
    summary:
      "The tenant's audit log, newest first (`log:read`): filter by `entity_type`, `entity_id`, `start_date`, `end_date`; page by `start` (the `pagination.next` cursor) or `page` (at most 10 000 entries deep)",
    query: listLogsQuery,
    response: {
      type: 'object',
      properties: {
        pagination: {
          type: 'object',
          properties: {
            page_number: { type: 'integer' },
            page_size: { type: 'integer' },
            next: { type: 'string' },
          },
        },
        data: { type: 'array', items: log },
      },
    },
  },
  'GET /logs/entity-types': {
    operationId: 'listLogEntityTypes',
    tag: 'Logs',
    summary: 'The entity types log entries name (`log:read`)',
    response: {
      type: 'array',
      items: {
        type: 'object',
        properties: { display_name: { type: 'string' }, value: { type: 'string' } },
      },
    },
  },
}

/**
 * The audit log part of the test control plane (`/_test/logs…`), or null for any other path:
 * - `GET /_test/logs?tenant=ID&entity_type=&entity_id=&size=&start=` → `{ data, next? }`: the
 *   tenant's entries, newest first (`service.admin.view.logs`; no `log:read` key needed);
 * - `GET /_test/logs/verify?tenant=ID` → `{ ok, entries, lanes, broken? }` (`service.admin.verifyLogs`).
 */
export async function logControl(
  service: TestService,
  method: string,
  path: string,
  q: URLSearchParams,
): Promise<{ status: number; body: unknown } | null> {
  if (method !== 'GET' || (path !== '/_test/logs' && path !== '/_test/logs/verify')) return null
  const tenant = q.get('tenant')
  if (tenant === null || tenant === '')
    throw new ServiceError('validation_failed', 'tenant: the tenant id', {
      issues: { tenant: ['the tenant id'] },
    })
  if (path === '/_test/logs')
    return { status: 200, body: await service.admin.view.logs(tenant, logViewQuery(q)) }
  return { status: 200, body: await verifiedLog(service, tenant) }
}

/** `tenant`'s audit log verified (`service.admin.verifyLogs`), or 404 for a tenant the store does not hold. */
export async function verifiedLog(service: TestService, tenant: string) {
  await service.admin.view.logs(tenant, { size: 1 })
  return service.admin.verifyLogs({ tenantId: tenant })
}

import { ServiceError } from '../../src/kernel/index.js'
import type { TestService } from '../../src/service/index.js'
import { createWebhookInput, listWebhooksQuery, updateWebhookInput } from '../../src/webhooks/index.js'
import type { JsonSchema } from './response-schemas.js'
import type { Route, RouteDoc } from './route-types.js'
import { decodedSegment } from './router.js'

/**
 * The webhooks API, as node-sdk 5's `client.webhooks` calls it: `/webhooks` create, list, get,
 * update (PUT), delete, `/webhooks/event-types` (`client.webhooks.events.list()`) and `/ping`
 * (`client.webhooks.ping()`). Each is a mapping onto `client.webhooks`; the rules are in
 * src/webhooks/webhooks.ts.
 */

type Run = Route['run']
const op = (status: Route['status'], run: Run): Route => ({ status, query: false, run })

export const WEBHOOK_ROUTES: ReadonlyArray<readonly [string, string, Route]> = [
  ['POST', '/webhooks', op(201, (c, _p, _q, b) => c.webhooks.create(b))],
  ['GET', '/webhooks', { status: 200, query: true, run: (c, _p, q) => c.webhooks.list(q) }],
  // Literal segments win over parameters: `/webhooks/event-types` is the list, never a webhook id.
  ['GET', '/webhooks/event-types', op(200, (c) => c.webhooks.eventTypes())],
  ['GET', '/webhooks/:id', op(200, (c, [id]) => c.webhooks.get(id!))],
  ['PUT', '/webhooks/:id', op(200, (c, [id], _q, b) => c.webhooks.update(id!, b))],
  ['DELETE', '/webhooks/:id', op(204, (c, [id]) => c.webhooks.delete(id!))],
  ['GET', '/ping', op(200, (c) => c.webhooks.ping())],
]

const webhook: JsonSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    tenant_id: { type: 'string' },
    status: { enum: ['enabled', 'disabled'] },
    name: { type: 'string' },
    url: { type: 'string' },
    notify_email: { type: 'string' },
    events: { type: 'array', items: { type: 'string' } },
    created_by: { type: 'string' },
    created_at: { type: 'string', format: 'date-time' },
    modified_by: { type: 'string' },
    modified_at: { type: 'string', format: 'date-time' },
  },
  required: ['id', 'tenant_id', 'status', 'name', 'url', 'events', 'created_by', 'created_at'],
}

/** The OpenAPI entries of `WEBHOOK_ROUTES` (spread into `ROUTE_DOCS`). */
export const WEBHOOK_ROUTE_DOCS: Record<string, RouteDoc> = {
  'POST /webhooks': {
    tag: 'Webhooks',
    summary:
      'Create a webhook (`webhook:create`): its url must be on the egress allow-list; events are the types of `GET /webhooks/event-types`; at most 5 per tenant',
    body: createWebhookInput,
    response: webhook,
  },
  'GET /webhooks': {
    tag: 'Webhooks',
    summary: "List the tenant's webhooks (`webhook:read`)",
    query: listWebhooksQuery,
    response: {
      type: 'object',
      properties: { pagination: { type: 'object' }, data: { type: 'array', items: webhook } },
    },
  },
  'GET /webhooks/event-types': {
    operationId: 'listWebhookEventTypes',
    tag: 'Webhooks',
    summary: 'The event types a webhook may subscribe to (`webhook:read`)',
    response: { type: 'array', items: { type: 'string' } },
  },
  'GET /webhooks/:id': { tag: 'Webhooks', summary: 'Get a webhook (`webhook:read`)', response: webhook },
  'PUT /webhooks/:id': {
    tag: 'Webhooks',
    summary:
      'Replace a webhook (`webhook:update`): name, url, events, notify_email; `status` enables or disables it',
    body: updateWebhookInput,
    response: webhook,
  },
  'DELETE /webhooks/:id': { tag: 'Webhooks', summary: 'Delete a webhook (`webhook:delete`)' },
  'GET /ping': {
    operationId: 'ping',
    tag: 'Webhooks',
    summary: 'Ping: the key authenticates and the vault answers',
  },
}

/** A control-plane answer: status and JSON body. */
type ControlAnswer = { status: number; body: unknown }

const needTenant = (tenant: unknown): string => {
  if (typeof tenant === 'string' && tenant !== '') return tenant
  throw new ServiceError('validation_failed', 'tenant: the tenant id', {
    issues: { tenant: ['the tenant id'] },
  })
}

/**
 * The webhook part of the test control plane (`/_test/webhooks…`), or null for any other path:
 * - `GET /_test/webhooks?tenant=ID` → `{ data }`: the tenant's deliveries and callbacks, oldest
 *   first, what was sent and each attempt's outcome (`limit`, `after` page it);
 * - `GET /_test/webhooks/signing-key` → `{ public_key }`: what receivers verify `BT-SIGNATURE` with;
 * - `POST /_test/webhooks/deliver` `{ tenant }` → `{ attempted }`: deliver now, past the back-off;
 * - `POST /_test/webhooks/{id}/redeliver` `{ tenant }` → the delivery, sent once more.
 */
export async function webhookControl(
  service: TestService,
  method: string,
  path: string,
  request: Request,
  body: () => Promise<unknown>,
): Promise<ControlAnswer | null> {
  if (path !== '/_test/webhooks' && !path.startsWith('/_test/webhooks/')) return null
  const hooks = service.admin.webhooks
  const q = new URL(request.url).searchParams
  if (path === '/_test/webhooks' && method === 'GET') {
    const limit = q.get('limit')
    if (limit !== null && !/^\d{1,4}$/.test(limit))
      throw new ServiceError('validation_failed', 'limit: a whole number', {
        issues: { limit: ['a whole number'] },
      })
    const after = q.get('after')
    const data = await hooks.deliveries(needTenant(q.get('tenant')), {
      ...(after === null ? {} : { after }),
      ...(limit === null ? {} : { limit: Number(limit) }),
    })
    return { status: 200, body: { data } }
  }
  if (path === '/_test/webhooks/signing-key' && method === 'GET')
    return { status: 200, body: { public_key: hooks.publicKey } }
  const given = method === 'POST' ? ((await body()) as { tenant?: unknown } | null) : null
  if (path === '/_test/webhooks/deliver' && method === 'POST')
    return { status: 200, body: { attempted: await hooks.deliverNow(needTenant(given?.tenant)) } }
  const again = /^\/_test\/webhooks\/([^/]+)\/redeliver$/.exec(path)
  if (again && method === 'POST') {
    const id = decodedSegment(again[1]!)
    if (id === null)
      throw new ServiceError('validation_failed', 'id: is not valid percent-encoded UTF-8', {
        issues: { id: ['is not valid percent-encoded UTF-8'] },
      })
    return { status: 200, body: await hooks.deliverAgain(needTenant(given?.tenant), id) }
  }
  return null
}

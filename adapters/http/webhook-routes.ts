import { createWebhookInput, listWebhooksQuery, updateWebhookInput } from '../../src/webhooks/schemas.js'
import type { JsonSchema } from './response-schemas.js'
import type { RouteDoc } from './route-docs.js'
import type { Route } from './routes.js'

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

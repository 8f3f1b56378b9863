import { requirePermission } from '../applications/index.js'
import type { Ctx, Paginated } from '../call/index.js'
import { expectWritten, paginated, rangeOf } from '../call/index.js'
import type { StoredWebhook } from '../kernel/index.js'
import { invalid, newId, notFound, parse } from '../kernel/index.js'
import { allowedUrl } from '../reactors/index.js'
import { EVENT_TYPES } from './events.js'
import { MAX_WEBHOOKS_PER_TENANT } from './outbox.js'
import {
  type CreateWebhookInput,
  createWebhookInput,
  type ListWebhooksQuery,
  listWebhooksQuery,
  type UpdateWebhookInput,
  updateWebhookInput,
} from './schemas.js'

/** A webhook as answered: the stored record (nothing in it is secret). */
export type Webhook = StoredWebhook

/**
 * The webhook's url, refused (400) unless its origin is on the service's one egress allow-list
 * (`egress`, CLI `--egress ORIGIN`): the check formula `fetch` and react callbacks pass. Loopback and
 * private addresses are refused at delivery unless listed by address (the node egress client).
 */
function checkedUrl(ctx: Ctx, url: string): string {
  const origins = ctx.options.reactorEgress
  if (!allowedUrl(origins, url)) {
    throw invalid(
      'url',
      origins.length
        ? 'must be a URL on an origin of the egress allow-list (egress)'
        : 'is refused: no egress allow-list (egress) is configured, so nothing may be sent out',
    )
  }
  return url
}

async function readWebhook(ctx: Ctx, id: string): Promise<StoredWebhook> {
  const found = await ctx.store.getWebhook(ctx.principal.tenantId, id)
  if (!found) throw notFound('webhook')
  return found
}

async function createWebhook(ctx: Ctx, input: CreateWebhookInput): Promise<Webhook> {
  requirePermission(ctx.principal, 'webhook:create')
  const body = parse(createWebhookInput, input)
  const tenantId = ctx.principal.tenantId
  const webhook: StoredWebhook = {
    id: newId(),
    tenant_id: tenantId,
    status: 'enabled',
    name: body.name,
    url: checkedUrl(ctx, body.url),
    events: body.events,
    created_by: ctx.principal.id,
    created_at: ctx.now(),
  }
  if (body.notify_email) webhook.notify_email = body.notify_email
  // The bound is a guard of the write itself: concurrent creates can't pass it by the number in flight.
  const bound = {
    check: 'count.within' as const,
    tenant_id: tenantId,
    kind: 'webhook' as const,
    max: MAX_WEBHOOKS_PER_TENANT - 1,
  }
  expectWritten(await ctx.store.write({ checks: [bound], ops: [{ op: 'webhook.put', webhook }] }))
  return webhook
}

async function updateWebhook(ctx: Ctx, id: string, input: UpdateWebhookInput): Promise<Webhook> {
  requirePermission(ctx.principal, 'webhook:update')
  const body = parse(updateWebhookInput, input)
  const old = await readWebhook(ctx, id)
  const webhook: StoredWebhook = {
    id: old.id,
    tenant_id: old.tenant_id,
    status: body.status ?? old.status,
    name: body.name,
    url: checkedUrl(ctx, body.url),
    events: body.events,
    created_by: old.created_by,
    created_at: old.created_at,
    modified_by: ctx.principal.id,
    modified_at: ctx.now(),
  }
  if (body.notify_email) webhook.notify_email = body.notify_email
  const check = { check: 'webhook.present' as const, tenant_id: old.tenant_id, id }
  expectWritten(await ctx.store.write({ checks: [check], ops: [{ op: 'webhook.put', webhook }] }))
  return webhook
}

/**
 * The webhooks API of one caller, as node-sdk 5's `client.webhooks` speaks it: create, list, get,
 * update (PUT: the whole webhook), delete (`webhook:create|read|update|delete`), the event types
 * (`webhook:read`) and ping (any key). A webhook's `url` must be on the egress allow-list. A tenant
 * has at most 5 webhooks (the reference's bound; the 6th create answers 429).
 */
export function webhookOperations(ctx: Ctx) {
  return {
    create: (input: CreateWebhookInput): Promise<Webhook> => createWebhook(ctx, input),

    /** The tenant's webhooks in creation order, in the list envelope. */
    list: async (query: ListWebhooksQuery = {}): Promise<Paginated<Webhook>> => {
      requirePermission(ctx.principal, 'webhook:read')
      const q = parse(listWebhooksQuery, query ?? {})
      return paginated(await ctx.store.listWebhooks(ctx.principal.tenantId, rangeOf(q)), q.page, q.size)
    },

    get: async (id: string): Promise<Webhook> => {
      requirePermission(ctx.principal, 'webhook:read')
      return readWebhook(ctx, id)
    },

    update: (id: string, input: UpdateWebhookInput): Promise<Webhook> => updateWebhook(ctx, id, input),

    /** Deletes the webhook; its deliveries still pending go on (they were owed when it was deleted). */
    delete: async (id: string): Promise<void> => {
      requirePermission(ctx.principal, 'webhook:delete')
      const check = { check: 'webhook.present' as const, tenant_id: ctx.principal.tenantId, id }
      const op = { op: 'webhook.delete' as const, tenant_id: ctx.principal.tenantId, id }
      expectWritten(await ctx.store.write({ checks: [check], ops: [op] }))
    },

    /** Every event type a webhook may subscribe to (the reference's catalogue). */
    eventTypes: async (): Promise<string[]> => {
      requirePermission(ctx.principal, 'webhook:read')
      return [...EVENT_TYPES]
    },

    /** Answers nothing: the key authenticated, so the vault runs (`GET /ping`). */
    ping: async (): Promise<void> => {},
  }
}

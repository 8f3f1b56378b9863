import * as v from 'valibot'
import { hasControlCharacter, pagination } from '../kernel/index.js'
import { EVENT_TYPES } from './events.js'

const KNOWN = new Set<string>(EVENT_TYPES)

/**
 * An event type of the reference's catalogue. The reference's SDK examples spell them with a colon
 * (`token:created`), its API with a dot (`token.created`): both are taken, the dot kept.
 */
const eventType = v.pipe(
  v.string('must be a string'),
  v.transform((s) => s.replaceAll(':', '.')),
  v.check((s) => KNOWN.has(s), 'must be an event type of GET /webhooks/event-types'),
)

const name = v.pipe(
  v.string('must be a string'),
  v.trim(),
  v.minLength(1, 'must not be empty'),
  v.maxLength(200, 'must be at most 200 characters'),
)

/**
 * An absolute http(s) URL as it is sent, with no space or control character (a CR LF was stored,
 * and the URL parser dropped it at delivery); whether it may be reached is the egress policy's to
 * say (see `webhooks.ts`).
 */
const url = v.pipe(
  v.string('must be a string'),
  v.maxLength(2000, 'must be at most 2000 characters'),
  v.check((s) => !hasControlCharacter(s) && !s.includes(' '), 'must not hold spaces or control characters'),
  v.url('must be an absolute URL'),
  v.check((s) => /^https?:\/\//i.test(s), 'must be an http or https URL'),
)

const members = {
  name,
  url,
  notify_email: v.optional(
    v.nullable(
      v.pipe(
        v.string('must be a string'),
        v.maxLength(320, 'must be at most 320 characters'),
        v.email('must be an email address'),
      ),
    ),
  ),
  events: v.pipe(
    v.array(eventType, 'must be a list of event types'),
    v.minLength(1, 'must name at least one event type'),
    v.maxLength(EVENT_TYPES.length, `must list at most ${EVENT_TYPES.length} event types`),
    v.transform((list) => [...new Set(list)]),
  ),
}

/** `POST /webhooks`: name, url, events, notify_email (as node-sdk 5's `CreateWebhookRequest`). */
export const createWebhookInput = v.object(members)

/** `PUT /webhooks/{id}`: the whole webhook again; `status` (`enabled`/`disabled`) kept when absent. */
export const updateWebhookInput = v.object({
  ...members,
  status: v.optional(v.picklist(['enabled', 'disabled'], 'must be enabled or disabled')),
})

/** `GET /webhooks` query: page and size, as the other lists. */
export const listWebhooksQuery = v.object({ ...pagination })

export type CreateWebhookInput = v.InferInput<typeof createWebhookInput>
export type UpdateWebhookInput = v.InferInput<typeof updateWebhookInput>
export type ListWebhooksQuery = v.InferInput<typeof listWebhooksQuery>

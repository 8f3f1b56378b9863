import { randomUUID } from 'node:crypto'
import type { JsonObject, OutboxEntry, StoredWebhook } from '../kernel/index.js'
import { newOrderedId, tooMany } from '../kernel/index.js'
import type {
  Check,
  DerivedWrite,
  Op,
  Store,
  WriteBatch,
  WriteEffectContext,
  WriteEffectHook,
} from '../store/index.js'
import { type DerivedEvent, eventsOf } from './events.js'
import { stableJson } from './signing.js'

/**
 * The durable outbox's writing side: the write effect that turns a write's events into outbox
 * entries in the same store write (no change without its deliveries, no delivery without its
 * change), one entry per event and subscribed webhook.
 */

/** Pending deliveries one tenant may have (webhook events and callbacks together). */
export const DEFAULT_PENDING_DELIVERIES_PER_TENANT = 10_000
/** Webhooks one tenant may have, as the reference allows ("up to five webhook URLs"). */
export const MAX_WEBHOOKS_PER_TENANT = 5

/**
 * The reference's event object (`event` of a delivery; `delivered_at` is added as it is sent), its
 * keys in sorted order, as its stable serialization has them.
 */
export function eventEnvelope(context: WriteEffectContext, event: DerivedEvent, id: string): JsonObject {
  const actor: JsonObject =
    context.actorId === null ? { type: context.actorType } : { id: context.actorId, type: context.actorType }
  return {
    // `actor` sorts before every key of `data` (`application`, `token`, …). `Object.assign`, not
    // `{ ...data, actor }`: see `pendingEntry`.
    data: Object.assign({ actor }, event.data),
    id,
    tenant_id: event.tenantId,
    timestamp: context.now,
    trace_id: context.requestId ?? id,
    type: event.type,
  }
}

/** How the stored body of every event written now starts: its stable serialization, `data` first. */
export const STABLE_EVENT_START = '{"data":'

/**
 * The stored body of an event: its stable serialization (`stableStringify`, object keys sorted),
 * so that a delivery puts it in its signed body as it is, without parsing and writing it again
 * (14 µs an event). The events' objects are built with their keys in order, so this is
 * JSON.stringify's text, checked (`stableJson`).
 */
export function eventBody(context: WriteEffectContext, event: DerivedEvent, id: string): string {
  return flat(stableJson(eventEnvelope(context, event, id)))
}

/**
 * `text` as one flat string. JSON.stringify's text is a tree of its builder's parts in V8 until
 * something reads a character of it, when it is copied flat once; the memory store, which keeps the
 * body, would keep the tree: 725 bytes against 534 for a 493-character event (measured with
 * `--expose-gc`, 100 000 kept).
 */
function flat(text: string): string {
  text.charCodeAt(0)
  return text
}

/**
 * A pending entry due now: what a write puts for one delivery. Built by `Object.assign`, not a
 * spread followed by more keys: Node 20's V8 adds each key after a spread on a slow path (about
 * 2 µs a key, 9 µs for this entry, against 0.5 µs).
 */
export function pendingEntry(
  fields: Pick<OutboxEntry, 'tenant_id' | 'kind' | 'url' | 'body'> & Partial<OutboxEntry>,
  now: string,
): OutboxEntry {
  const pending = {
    id: newOrderedId(now, fields.tenant_id),
    created_at: now,
    state: 'pending' as const,
    due_at: now,
    attempts: [],
  }
  return Object.assign({}, fields, pending)
}

/**
 * The pending entry of `event`'s delivery to `hook`, due now: `pendingEntry`'s fields in its order,
 * written as one object literal (a third of the time `Object.assign` takes).
 */
function webhookEntry(
  event: DerivedEvent,
  hook: StoredWebhook,
  eventId: string,
  body: string,
  now: string,
): OutboxEntry {
  return {
    tenant_id: event.tenantId,
    kind: 'webhook',
    webhook_id: hook.id,
    event_id: eventId,
    event_type: event.type,
    url: hook.url,
    body,
    id: newOrderedId(now, event.tenantId),
    created_at: now,
    state: 'pending',
    due_at: now,
    attempts: [],
  }
}

/** The enabled webhooks of `hooks` that take `type`. */
export const takes = (hooks: readonly StoredWebhook[], type: string) =>
  hooks.filter((h) => h.status === 'enabled' && h.events.includes(type))

/**
 * The write effect of webhooks: for each event of a write (see `eventsOf`), an `outbox.put` per
 * enabled webhook of its tenant that subscribes to its type. A tenant with no webhook costs one
 * read of its (at most five) webhooks per write that makes events, and nothing else. The tenant's
 * bound of `maxPending` pending deliveries is a guard of the same write (`count.within`, see
 * `pendingBound`): a write that would pass it is refused (429) and nothing lands, however many
 * writes race.
 */
export function webhookEffect(store: Store, maxPending: number): WriteEffectHook {
  return {
    async derive(context: WriteEffectContext, batch: Readonly<WriteBatch>): Promise<DerivedWrite> {
      // Of outbox writes only an accepted react's makes an event (the dispatcher's claims and
      // results come without effects); its own pending entry counts against the bound with them.
      const events = eventsOf(context, batch)
      if (!events.length) return { ops: [] }
      const own = batch.ops.reduce((n, op) => (op.op === 'outbox.put' ? n + 1 : n), 0)
      // The sweep's writes (actor `system`: expired tokens deleted, cvcs dropped) may take a tenant
      // to `SYSTEM_PENDING_FACTOR` times its bound: one at its bound still has its expired data
      // gone. Past that, a token's write is refused and left for a later sweep, once the tenant's
      // deliveries drained: with no bound, each sweep added a delivery per webhook for every card
      // whose cvc ended, however many the tenant held.
      const bound = context.actorType === 'system' ? SYSTEM_PENDING_FACTOR * maxPending : maxPending
      return deliveriesOf(store, context, events, bound - own)
    },
    refused: (check) => pendingRefusal(check, maxPending),
  }
}

/**
 * The outbox entries of `events` (made in `context`): an `outbox.put` per enabled webhook of the
 * event's tenant that subscribes to its type, and the guards that keep each tenant within
 * `maxPending` pending deliveries (`pendingBound`). A tenant with no webhook costs one read of its
 * (at most five) webhooks and nothing else.
 */
export async function deliveriesOf(
  store: Pick<Store, 'listWebhooks'>,
  context: WriteEffectContext,
  events: readonly DerivedEvent[],
  maxPending: number,
): Promise<DerivedWrite> {
  const ops: Op[] = []
  const hooksOf = new Map<string, StoredWebhook[]>()
  for (const event of events) {
    let hooks = hooksOf.get(event.tenantId)
    if (!hooks) {
      hooks = (await store.listWebhooks(event.tenantId, { offset: 0, limit: MAX_WEBHOOKS_PER_TENANT })).items
      hooksOf.set(event.tenantId, hooks)
    }
    const targets = takes(hooks, event.type)
    if (!targets.length) continue
    const eventId = randomUUID()
    const body = eventBody(context, event, eventId)
    for (const hook of targets)
      ops.push({ op: 'outbox.put', entry: webhookEntry(event, hook, eventId, body, context.now) })
  }
  return { ops, checks: pendingBound(ops, maxPending) }
}

/** How many times its bound of pending deliveries the sweep's writes may take a tenant to. */
export const SYSTEM_PENDING_FACTOR = 2

/**
 * The guards that keep each tenant of `ops` within `maxPending` pending deliveries: the tenant may
 * hold at most `maxPending` less what this write adds (`count.within` is read in the write itself,
 * under the store's lock on the count, so concurrent writes can't pass the bound together).
 */
export function pendingBound(ops: readonly Op[], maxPending: number): Check[] {
  const adding = new Map<string, number>()
  for (const op of ops)
    if (op.op === 'outbox.put') adding.set(op.entry.tenant_id, (adding.get(op.entry.tenant_id) ?? 0) + 1)
  return [...adding].map(([tenantId, n]) => ({
    check: 'count.within' as const,
    tenant_id: tenantId,
    kind: 'outbox.pending' as const,
    max: maxPending - n,
  }))
}

/** The 429 of a write whose deliveries would take the tenant past its pending bound. */
export function pendingRefusal(check: Check, maxPending: number): Error {
  const adding = check.check === 'count.within' ? maxPending - check.max : 1
  return tooMany(
    `this write's ${adding} webhook deliveries would take this tenant past ${maxPending} deliveries and callbacks pending, its bound`,
    10,
  )
}

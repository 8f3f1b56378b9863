/**
 * The operator's view of what a tenant's calls left behind: its audit log, newest first, and its
 * outbox deliveries (webhook events, callbacks, asynchronous reacts), oldest first. Keyset pages:
 * each costs its page, not the tenant's log or outbox. The test console shows these.
 */
import { answersTo, type LogView, logView } from '../audit/index.js'
import type { OutboxAttempt, OutboxEntry } from '../kernel/index.js'
import { invalid, parseDateTime } from '../kernel/index.js'
import type { Store } from '../store/index.js'

/** A page of a keyset-paged list: `next` is the cursor of the following page, if any. */
export interface ViewPage<T> {
  data: T[]
  next?: string
}

/** What `AdminView.logs` filters by, and its page. */
export interface LogViewQuery {
  /** `token`, `application`, … (as `GET /logs`' `entity_type`). */
  entity_type?: string
  /** One record's id; needs `entity_type`. */
  entity_id?: string
  /** Entries created at or after this date-time (as `GET /logs` reads it: ISO 8601, `9/27/2030`, …). */
  start_date?: string
  /** Entries created at or before this date-time. */
  end_date?: string
  /** The `next` of the page before. */
  start?: string
  /** 1–100 entries; 20 unless given. */
  size?: number
}

/**
 * A delivery as the view shows it: a webhook event whole (events hold ids and names, never token
 * data); a callback's or an asynchronous react's body and result withheld (sealed at rest, they may
 * hold a react's revealed data), their length in characters given instead.
 */
export interface DeliveryView {
  id: string
  kind: OutboxEntry['kind']
  event_type?: string
  webhook_id?: string
  reactor_id?: string
  url: string
  state: OutboxEntry['state']
  created_at: string
  due_at?: string
  attempts: OutboxAttempt[]
  /** The body sent (`kind: 'webhook'` only). */
  body?: string
  body_chars: number
  result_chars?: number
}

const ENTITY_TYPE_CHARS = 100
const ENTITY_ID_CHARS = 400

function pageSize(value: number | undefined): number {
  if (value === undefined) return 20
  if (!Number.isSafeInteger(value) || value < 1 || value > 100) throw invalid('size', 'must be 1 to 100')
  return value
}

function text(value: string | undefined, field: string, most: number): string | undefined {
  if (value === undefined || value === '') return undefined
  if (typeof value !== 'string' || value.length > most || value.includes('\u0000'))
    throw invalid(field, `must be text of at most ${most} characters`)
  return value
}

/** A date-time filter normalized to UTC ISO, or a 400 naming `field`. */
function dateTime(value: string | undefined, field: string): string | undefined {
  const given = text(value, field, 64)
  if (given === undefined) return undefined
  const parsed = parseDateTime(given)
  if (parsed === null)
    throw invalid(field, 'must be a date-time like 2030-08-26T19:23:57Z or 9/27/2030 (no offset: UTC)')
  return parsed
}

/** An entry's `created_at` as every store keeps it. */
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** The cursor of the log page after the entry `e` (the admin may read the whole log: not sealed). */
function logCursor(e: { created_at: string; id: string }): string {
  return Buffer.from(`${e.created_at}\u0001${e.id}`, 'utf8').toString('base64url')
}

function readLogCursor(start: string): { created_at: string; id: string } {
  const decoded = /^[A-Za-z0-9_-]{1,600}$/.test(start) ? Buffer.from(start, 'base64url').toString('utf8') : ''
  const at = decoded.indexOf('\u0001')
  const position = { created_at: decoded.slice(0, at), id: decoded.slice(at + 1) }
  // A cursor names an entry as stored: a UTC ISO time and an id without U+0000 (any store can compare them).
  const stored = ISO_UTC.test(position.created_at) && !position.id.includes('\u0000')
  if (at <= 0 || !stored || logCursor(position) !== start)
    throw invalid('start', 'is not a cursor this view answered')
  return position
}

/** A page of `tenantId`'s audit log, newest first (see `AdminView.logs`). */
export async function logsPage(
  store: Store,
  tenantId: string,
  query: LogViewQuery,
): Promise<ViewPage<LogView>> {
  const size = pageSize(query.size)
  const entity_type = text(query.entity_type, 'entity_type', ENTITY_TYPE_CHARS)
  const entity_id = text(query.entity_id, 'entity_id', ENTITY_ID_CHARS)
  if (entity_id !== undefined && entity_type === undefined) throw invalid('entity_id', 'needs entity_type')
  const from = dateTime(query.start_date, 'start_date')
  const to = dateTime(query.end_date, 'end_date')
  const filters = {
    ...(entity_type ? { entity_type } : {}),
    ...(entity_id ? { entity_id } : {}),
    ...(from ? { from } : {}),
    ...(to ? { to } : {}),
  }
  const after = query.start === undefined || query.start === '' ? undefined : readLogCursor(query.start)
  const rows = await store.listLogs(tenantId, {
    order: 'newest',
    ...filters,
    limit: size + 1,
    ...(after ? { after } : {}),
  })
  const shown = rows.slice(0, size)
  const last = shown[shown.length - 1]
  // An entry an index filed where it does not belong (edited below the service) is not shown there.
  const data = shown.filter((e) => answersTo(e, filters)).map(logView)
  return rows.length > size && last ? { data, next: logCursor(last) } : { data }
}

/** An outbox entry as the view shows it (see `DeliveryView`). */
export function deliveryView(e: OutboxEntry): DeliveryView {
  const view: DeliveryView = {
    id: e.id,
    kind: e.kind,
    url: e.url,
    state: e.state,
    created_at: e.created_at,
    attempts: e.attempts.map((a) => ({ ...a })),
    body_chars: e.body.length,
  }
  if (e.event_type !== undefined) view.event_type = e.event_type
  if (e.webhook_id !== undefined) view.webhook_id = e.webhook_id
  if (e.reactor_id !== undefined) view.reactor_id = e.reactor_id
  if (e.due_at !== undefined && e.state === 'pending') view.due_at = e.due_at
  if (e.kind === 'webhook') view.body = e.body
  if (e.result !== undefined) view.result_chars = e.result.length
  return view
}

/** A page of `tenantId`'s deliveries, oldest first, after the delivery id `after` (see `AdminView.deliveries`). */
export async function deliveriesPage(
  store: Store,
  tenantId: string,
  query: { after?: string; size?: number },
): Promise<ViewPage<DeliveryView>> {
  const size = pageSize(query.size)
  const after = text(query.after, 'after', ENTITY_ID_CHARS)
  const rows = await store.listOutbox(tenantId, { limit: size + 1, ...(after ? { after } : {}) })
  const data = rows.slice(0, size).map(deliveryView)
  const last = data[data.length - 1]
  return rows.length > size && last ? { data, next: last.id } : { data }
}

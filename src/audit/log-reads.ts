import * as v from 'valibot'
import { requirePermission } from '../applications/index.js'
import type { Ctx } from '../call/index.js'
import { cursorFor, positionFromCursor } from '../call/index.js'
import type { LogEntry } from '../kernel/index.js'
import { invalid, isoDateTime, nextTurn, pagination, parse } from '../kernel/index.js'

/** A log entry as `GET /logs` answers it: the reference's fields, the request id and the outcome. */
export type LogView = Pick<
  LogEntry,
  | 'id'
  | 'tenant_id'
  | 'actor_id'
  | 'actor_type'
  | 'entity_type'
  | 'entity_id'
  | 'operation'
  | 'message'
  | 'outcome'
  | 'request_id'
  | 'created_at'
>

/** A page of `GET /logs`: newest first; `next` is the cursor (`start`) of the following page. */
export interface LogPage {
  pagination: { page_number: number; page_size: number; next?: string }
  data: LogView[]
}

/** Deepest page `page` reaches without a cursor (`page` × `size` entries skipped at most); past it, use `start`. */
export const MAX_LOG_OFFSET = 10_000

/** `GET /logs`'s query: the reference's filters and paging. */
export const listLogsQuery = v.object({
  entity_type: v.optional(v.pipe(v.string(), v.maxLength(100, 'must be at most 100 characters'))),
  entity_id: v.optional(v.pipe(v.string(), v.maxLength(400, 'must be at most 400 characters'))),
  start_date: v.optional(isoDateTime),
  end_date: v.optional(isoDateTime),
  start: v.optional(v.pipe(v.string(), v.maxLength(2000, 'must be at most 2000 characters'))),
  ...pagination,
})
export type ListLogsQuery = v.InferInput<typeof listLogsQuery>

/** The entity types entries name (`GET /logs/entity-types`), as the reference lists them. */
export const LOG_ENTITY_TYPES: readonly { display_name: string; value: string }[] = [
  { display_name: 'Token', value: 'token' },
  { display_name: 'Application', value: 'application' },
  { display_name: 'Reactor', value: 'reactor' },
  { display_name: 'Reactor Formula', value: 'reactor_formula' },
  { display_name: 'Session', value: 'session' },
  { display_name: 'Transaction', value: 'transaction' },
  { display_name: 'Tenant', value: 'tenant' },
  { display_name: 'Proxy', value: 'proxy' },
  { display_name: 'Webhook', value: 'webhook' },
]

/** An entry as `GET /logs` shows it: without its place in its chain and its MAC. */
export const logView = (e: LogEntry): LogView => {
  const { lane: _l, seq: _s, floor: _f, mac: _m, ...shown } = e
  return shown
}

/** `GET /logs` and `GET /logs/entity-types` for a key holding `log:read`. */
export function logOperations(ctx: Ctx) {
  return {
    /** A page of the caller's tenant's log, newest first (keyset: costs the page, not the log). */
    async list(query: ListLogsQuery = {}): Promise<LogPage> {
      requirePermission(ctx.principal, 'log:read')
      const q = parse(listLogsQuery, query)
      if (q.entity_id !== undefined && q.entity_type === undefined)
        throw invalid('entity_id', 'needs entity_type')
      if (q.start === undefined && (q.page - 1) * q.size > MAX_LOG_OFFSET) {
        throw invalid(
          'page',
          `skips at most ${MAX_LOG_OFFSET} entries: follow pagination.next (start) instead`,
        )
      }
      const scope = JSON.stringify([
        'logs',
        q.entity_type ?? null,
        q.entity_id ?? null,
        q.start_date ?? null,
        q.end_date ?? null,
      ])
      let after =
        q.start === undefined ? undefined : splitPosition(await positionFromCursor(ctx, scope, q.start))
      const filters = {
        order: 'newest' as const,
        ...(q.entity_type === undefined ? {} : { entity_type: q.entity_type }),
        ...(q.entity_id === undefined ? {} : { entity_id: q.entity_id }),
        ...(q.start_date === undefined ? {} : { from: q.start_date }),
        ...(q.end_date === undefined ? {} : { to: q.end_date }),
      }
      // Without a cursor, page N walks the N − 1 pages before it (bounded by MAX_LOG_OFFSET), 250
      // entries a turn of the event loop: 10 000 read at once held the file store's process 0.26 s.
      for (let skip = q.start === undefined ? (q.page - 1) * q.size : 0; skip > 0; ) {
        if (after) await nextTurn()
        const limit = Math.min(skip, 250)
        const passed = await ctx.store.listLogs(ctx.principal.tenantId, {
          ...filters,
          limit,
          ...(after ? { after } : {}),
        })
        if (passed.length < limit) return { pagination: { page_number: q.page, page_size: q.size }, data: [] }
        const last = passed[passed.length - 1]!
        after = { created_at: last.created_at, id: last.id }
        skip -= limit
      }
      const rows = await ctx.store.listLogs(ctx.principal.tenantId, {
        ...filters,
        limit: q.size + 1,
        ...(after ? { after } : {}),
      })
      const data = rows.slice(0, q.size)
      const last = data[data.length - 1]
      const next =
        rows.length > q.size && last
          ? await cursorFor(ctx, scope, `${last.created_at}\u0001${last.id}`)
          : undefined
      return {
        pagination: { page_number: q.page, page_size: q.size, ...(next === undefined ? {} : { next }) },
        // An entry a store's index filed where it does not belong (edited below the service) is not shown there.
        data: data.filter((e) => answersTo(e, filters)).map(logView),
      }
    },
    /** The entity types the log names. */
    async entityTypes(): Promise<{ display_name: string; value: string }[]> {
      requirePermission(ctx.principal, 'log:read')
      return LOG_ENTITY_TYPES.map((t) => ({ ...t }))
    },
  }
}

/** Whether `e` is one the page's filters ask for (its own fields, not where an index filed it). */
export function answersTo(
  e: LogEntry,
  f: { entity_type?: string; entity_id?: string; from?: string; to?: string },
) {
  return (
    (f.entity_type === undefined || e.entity_type === f.entity_type) &&
    (f.entity_id === undefined || e.entity_id === f.entity_id) &&
    (f.from === undefined || e.created_at >= f.from) &&
    (f.to === undefined || e.created_at <= f.to)
  )
}

/** A cursor's position back into the entry it follows. */
function splitPosition(position: string): { created_at: string; id: string } {
  const at = position.indexOf('\u0001')
  if (at < 0) throw invalid('start', 'is not a cursor this API answered for this query')
  return { created_at: position.slice(0, at), id: position.slice(at + 1) }
}

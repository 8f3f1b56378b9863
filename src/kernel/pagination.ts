/**
 * Pagination, once for every list: the page/size envelope (`rangeOf`, `paginated`) and the
 * cursor pages of the v2 token list and search (`CursorPage`, `cursorFor`, `idFromCursor`).
 */

import type { Page, Range } from '../store/index.js'
import type { Ctx } from './context.js'
import { invalid } from './errors.js'

/** A page of a list in the HTTP envelope. */
export interface Paginated<T> {
  pagination: { total_items: number; page_number: number; page_size: number; total_pages: number }
  data: T[]
}

/** The store range of list page `page` (1-based) of `size` items. */
export function rangeOf(q: { page: number; size: number }): Range {
  return { offset: (q.page - 1) * q.size, limit: q.size }
}

/** Wraps a store page in the list envelope. */
export function paginated<T>(page: Page<T>, pageNumber: number, pageSize: number): Paginated<T> {
  return {
    pagination: {
      total_items: page.total,
      page_number: pageNumber,
      page_size: pageSize,
      total_pages: Math.ceil(page.total / pageSize),
    },
    data: page.items,
  }
}

/** A page of the cursor-paginated token list: `next` is the cursor of the following page, if any. */
export interface CursorPage<T> {
  pagination: { page_size: number; next?: string }
  data: T[]
}

/** The keyed-hash purpose of cursor tags. */
const CURSOR_PURPOSE = 'cursor'

/**
 * The cursor of the page after token `id` of the list or search `scope` (its route and its
 * filters or query, as a string): opaque to callers, the base64url of the id, a dot, and a tag
 * (a keyed hash under the tenant's key of scope and id). A cursor is thus tamper-evident, and good
 * only for the query and tenant that answered it.
 */
export async function cursorFor(ctx: Ctx, scope: string, id: string): Promise<string> {
  const tag = (await ctx.hmac(CURSOR_PURPOSE, `${scope}\u0000${id}`)).slice(0, 32)
  return `${Buffer.from(id, 'utf8').toString('base64url')}.${tag}`
}

/**
 * The token id a cursor of `cursorFor` names for this `scope`; a validation error on `field` for a
 * forged cursor, one of another query or another tenant, or anything else.
 */
export async function idFromCursor(
  ctx: Ctx,
  scope: string,
  cursor: string,
  field = 'start',
): Promise<string> {
  const refused = () => invalid(field, 'is not a cursor this API answered for this query')
  const match = /^([A-Za-z0-9_-]{1,400})\.([A-Za-z0-9_-]{32})$/.exec(cursor)
  if (!match) throw refused()
  const id = Buffer.from(match[1]!, 'base64url').toString('utf8')
  if (Buffer.from(id, 'utf8').toString('base64url') !== match[1]) throw refused()
  if ((await cursorFor(ctx, scope, id)) !== cursor) throw refused()
  return id
}

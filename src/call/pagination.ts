/**
 * Pagination, once for every list: the page/size envelope (`rangeOf`, `paginated`) and the
 * cursor pages of the v2 token list and search (`CursorPage`, `cursorFor`, `positionFromCursor`).
 */

import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { invalid } from '../kernel/index.js'
import type { Page, Range } from '../store/index.js'
import type { Ctx } from './context.js'

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

/** The keyed-hash purpose of the keys cursors are sealed under. */
const CURSOR_PURPOSE = 'cursor-seal'

/** The longest position a cursor holds (a token id, or a position just past one), in UTF-16 units. */
const MAX_POSITION = 400

/**
 * The AES-256-GCM key of the cursors of `scope` (a route and its filters or query, as a string)
 * for the caller's tenant: a keyed hash under the tenant's key, so a cursor opens only for the
 * tenant and the query that answered it.
 */
async function cursorKey(ctx: Ctx, scope: string): Promise<Buffer> {
  return Buffer.from(await ctx.hmac(CURSOR_PURPOSE, scope), 'base64url').subarray(0, 32)
}

/**
 * The cursor of the page that goes on at `position` (a keyset position of the list or search
 * `scope`: the next page answers ids at or after it). Opaque: the position sealed with AES-256-GCM
 * under a key of the tenant and `scope` (a fresh random IV each time), as base64url. A decoded
 * cursor shows nothing of the ids it names; a changed one fails to open.
 */
export async function cursorFor(ctx: Ctx, scope: string, position: string): Promise<string> {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', await cursorKey(ctx, scope), iv)
  const sealed = Buffer.concat([cipher.update(position, 'utf8'), cipher.final()])
  return Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString('base64url')
}

/**
 * The position a cursor of `cursorFor` holds for this `scope`; a validation error on `field` for a
 * forged or changed cursor, one of another query or another tenant, or anything else.
 */
export async function positionFromCursor(
  ctx: Ctx,
  scope: string,
  cursor: string,
  field = 'start',
): Promise<string> {
  const refused = () => invalid(field, 'is not a cursor this API answered for this query')
  // IV (12 bytes) and tag (16) around at most MAX_POSITION characters of UTF-8 (3 bytes each).
  if (cursor.length > 2000 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw refused()
  const bytes = Buffer.from(cursor, 'base64url')
  if (bytes.length < 28 || bytes.toString('base64url') !== cursor) throw refused()
  try {
    const decipher = createDecipheriv('aes-256-gcm', await cursorKey(ctx, scope), bytes.subarray(0, 12))
    decipher.setAuthTag(bytes.subarray(bytes.length - 16))
    const plain = Buffer.concat([decipher.update(bytes.subarray(12, bytes.length - 16)), decipher.final()])
    const position = plain.toString('utf8')
    if (position.length > MAX_POSITION * 2) throw refused()
    return position
  } catch {
    throw refused()
  }
}

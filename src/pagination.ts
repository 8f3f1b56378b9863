/**
 * Pagination, once for every list: the page/size envelope (`rangeOf`, `paginated`) and the
 * cursor pages of the v2 token list and search (`CursorPage`, `cursorAfter`, `idAfterCursor`).
 */
import { invalid } from './errors.js'
import type { Page, Range } from './store/contract.js'

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

/** The cursor of the page after the token `id`: opaque to callers (base64url of the id). */
export function cursorAfter(id: string): string {
  return Buffer.from(`after:${id}`, 'utf8').toString('base64url')
}

/** The token id a cursor of `cursorAfter` names; a validation error on `field` for anything else. */
export function idAfterCursor(cursor: string, field = 'start'): string {
  const text = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : ''
  if (!text.startsWith('after:') || cursorAfter(text.slice(6)) !== cursor)
    throw invalid(field, 'is not a cursor this API answered')
  return text.slice(6)
}

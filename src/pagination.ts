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

import { invalid } from '../kernel/index.js'
import { sealedBytes } from '../store/index.js'
import type { Seen } from './token-view.js'

/**
 * The most bytes of token data (and masks) one page of a list or search answers, counted before
 * anything is read whole or decrypted: a v2 page stops before the token that would pass it (and
 * says where to go on in `next`); a v1 page that can't hold its `size` tokens within it answers
 * 400. A page always holds its first token (no token is larger than a request body).
 */
export const MAX_PAGE_BYTES = 4 * 1024 * 1024

/**
 * The bytes `seen` adds to a page: a committed token's `stored_bytes` as its store reports them (or
 * as the core measured them, see `measuredStore`), a staged token's data and mask (already open in
 * memory) as many bytes as they take once sealed, so a token counts the same staged or committed.
 */
export function seenBytes(seen: Seen): number {
  if (seen.staged) return sealedBytes(seen.staged)
  return seen.head.stored_bytes ?? 0
}

/** The bytes a page has taken so far, and whether the next token still fits. */
export class PageBytes {
  private taken = 0
  private count = 0

  /** Takes `seen` into the page if it fits (or is the page's first token); false otherwise. */
  take(seen: Seen): boolean {
    const bytes = seenBytes(seen)
    if (this.count > 0 && this.taken + bytes > MAX_PAGE_BYTES) return false
    this.taken += bytes
    this.count++
    return true
  }
}

/** The 400 of a v1 page whose `size` tokens hold more than `MAX_PAGE_BYTES` bytes. */
export function pageTooLarge(field: string) {
  return invalid(
    field,
    `is too large for these tokens: the page would answer more than ${MAX_PAGE_BYTES} bytes of token data; ask for a smaller size or use the v2 route, which ends a page early`,
  )
}

import type { StoredToken } from '../kernel/index.js'
import type { Page, Store, TokenHead } from './contract.js'
import { delegatingStore } from './delegate.js'
import { PageFill, storedBytes } from './stored-bytes.js'

/** `page` cut to the items that fit `STORE_PAGE_BYTES` (its first always does), `total` unchanged. */
function filled(page: Page<StoredToken>): Page<StoredToken> {
  const fill = new PageFill()
  const end = page.items.findIndex((token) => !fill.fits(token))
  return end === -1 ? page : { items: page.items.slice(0, end), total: page.total }
}

/**
 * `inner` with the page byte budget kept whatever `inner` does about it (a third party's store may
 * report no `stored_bytes` on heads, or answer list pages without ending them within
 * `STORE_PAGE_BYTES`). It sits below the sealed store, so it sees tokens as stored (sealed) and
 * measures them with `storedBytes` before anything is decrypted:
 * - a head without `stored_bytes` gets it from its stored record, read for that (one `getTokens`
 *   call for every such head of a read; our stores report it and cost nothing more);
 * - a `listTokens` or `listChildren` page ends before the token that would pass the budget, which
 *   the core then answers as a page a store ended early.
 */
export function measuredStore(inner: Store): Store {
  return delegatingStore(inner, {
    async getTokenHeads(tenantId, ids): Promise<TokenHead[]> {
      const heads = await inner.getTokenHeads(tenantId, ids)
      const unmeasured = heads.filter((h) => typeof h.stored_bytes !== 'number').map((h) => h.id)
      if (!unmeasured.length) return heads
      const bytes = new Map(
        (await inner.getTokens(tenantId, unmeasured)).map((t) => [t.id, storedBytes(t)] as const),
      )
      return heads.map((h) =>
        typeof h.stored_bytes === 'number' ? h : { ...h, stored_bytes: bytes.get(h.id) ?? 0 },
      )
    },
    async listTokens(tenantId, query) {
      return filled(await inner.listTokens(tenantId, query))
    },
    async listChildren(tenantId, parentId, query) {
      return filled(await inner.listChildren(tenantId, parentId, query))
    },
  })
}

import { expect, it } from 'vitest'
import { createService } from '../../entry/index.js'
import { manualClock } from '../../src/kernel/index.js'
import type { Store } from '../../src/store/index.js'
import { delegatingStore } from '../../src/store/index.js'

/** A fixed test master key: the service encrypts token data before it reaches the store. */
const MASTER_KEY = new Uint8Array(32).fill(9)

/**
 * `store` counting the token records it hands back: `whole` (with `data`: what the service
 * decrypts) and `heads` (plain fields only).
 */
function counting(store: Store) {
  const n = { whole: 0, heads: 0 }
  // Delegated method by method (a store may be a class, whose methods a spread would lose).
  const counted = delegatingStore(store, {
    getToken: async (t, id) => {
      const token = await store.getToken(t, id)
      if (token) n.whole++
      return token
    },
    getTokens: async (t, ids) => {
      const tokens = await store.getTokens(t, ids)
      n.whole += tokens.length
      return tokens
    },
    listTokens: async (t, q) => {
      const page = await store.listTokens(t, q)
      n.whole += page.items.length
      return page
    },
    listChildren: async (t, p, q) => {
      const page = await store.listChildren(t, p, q)
      n.whole += page.items.length
      return page
    },
    getTokenHeads: async (t, ids) => {
      const heads = await store.getTokenHeads(t, ids)
      n.heads += heads.length
      return heads
    },
  })
  return { store: counted, n }
}

/** What a list or search costs in records read: a page, not the tenant. Registered inside the store suite's `describe`. */
export function costTests(fresh: () => Promise<Store>): void {
  it('a page reads at most its size (+1 head) of 300 tokens, and an exact-term search decrypts only what it answers', async () => {
    const { store, n } = counting(await fresh())
    const service = createService({
      store,
      clock: manualClock('2030-01-01T00:00:00.000Z'),
      masterKey: MASTER_KEY,
    })
    const tenant = await service.admin.createTenant({ name: 'cost' })
    const { key } = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'reader',
      type: 'private',
      permissions: ['token:create', 'token:read', 'token:search'],
    })
    const client = service.connect(key)
    for (let batch = 0; batch < 3; batch++) {
      await client.tokens.tokenize(
        Array.from({ length: 100 }, (_, j) => {
          const i = batch * 100 + j
          return {
            id: `t${String(i).padStart(3, '0')}`,
            type: i % 2 ? 'odd' : 'even',
            data: { number: `n-${i}` },
            metadata: { order: `ORD-${i}`, shard: String(i % 3) },
            search_indexes: ['{{ data.number }}'],
          }
        }),
      )
    }
    const cost = async <T>(call: () => Promise<T>) => {
      n.whole = 0
      n.heads = 0
      const answer = await call()
      return { answer, whole: n.whole, heads: n.heads }
    }
    const first = await cost(() => client.tokens.listV2({ size: 10 }))
    expect(first.answer.data.map((t) => t.id)).toEqual(Array.from({ length: 10 }, (_, i) => `t00${i}`))
    expect([first.whole, first.heads <= 11]).toEqual([10, true])
    const middle = await cost(() => client.tokens.listV2({ size: 10, start: first.answer.pagination.next! }))
    expect(middle.answer.data[0]!.id).toBe('t010')
    expect([middle.whole, middle.heads <= 11]).toEqual([10, true])
    const typed = await cost(() => client.tokens.listV2({ size: 10, type: 'odd' }))
    expect([typed.answer.data.length, typed.whole, typed.heads <= 11]).toEqual([10, 10, true])
    const byMetadata = await cost(() =>
      client.tokens.listV2({ metadata: JSON.stringify({ order: 'ord-123' }) }),
    )
    expect([byMetadata.answer.data.map((t) => t.id), byMetadata.whole, byMetadata.heads]).toEqual([
      ['t123'],
      1,
      1,
    ])
    const v1 = await cost(() => client.tokens.list({ size: 10, page: 3 }))
    expect([v1.answer.data[0]!.id, v1.whole]).toEqual(['t020', 10])
    for (const query of ['metadata.order:ord-123', 'data.number:n-123', 'data:n-123', 'id:t123']) {
      const exact = await cost(() => client.tokens.searchV2({ query }))
      expect([query, exact.answer.data.map((t) => t.id), exact.whole, exact.heads]).toEqual([
        query,
        ['t123'],
        1,
        1,
      ])
    }
    const both = await cost(() => client.tokens.search({ query: 'type:odd AND metadata.shard:0', size: 5 }))
    expect([both.answer.pagination.total_items, both.whole]).toEqual([50, 5])
    // Scans too decrypt only what they answer.
    const scan = await cost(() => client.tokens.searchV2({ query: 'metadata.order:ord-2?5', size: 3 }))
    expect([scan.answer.data.map((t) => t.id), scan.whole]).toEqual([['t205', 't215', 't225'], 3])
    await service.close()
  })
}

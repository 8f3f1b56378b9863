import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import type { Store } from '../../src/store/contract.js'
import { delegatingStore } from '../../src/store/delegate.js'
import { failure, setup } from './setup.js'

/**
 * A third party's store that keeps no byte budget: its heads carry no `stored_bytes`, and its list
 * pages hold `limit` tokens whatever their size (read from the memory store, which is honest, by
 * id and then whole).
 */
function budgetless(inner: Store): Store {
  return delegatingStore(inner, {
    async getTokenHeads(tenantId, ids) {
      return (await inner.getTokenHeads(tenantId, ids)).map(({ stored_bytes: _, ...head }) => head)
    },
    async listTokens(tenantId, query) {
      const ids = await inner.findTokenIds(tenantId, { limit: 10_000 })
      const page = ids.slice(query.offset, query.offset + query.limit)
      return { items: await inner.getTokens(tenantId, page), total: ids.length }
    },
    async listChildren(tenantId, parentId, query) {
      const links = await inner.findChildIds(tenantId, parentId, { limit: 10_000 })
      const page = links.slice(query.offset, query.offset + query.limit).map((l) => l.id)
      return { items: await inner.getTokens(tenantId, page), total: links.length }
    },
  })
}

describe('a store that reports no stored bytes still gets the 4 MiB page budget', () => {
  it('the core measures stored tokens itself, before decrypting: 900 KB tokens end a page at four', async () => {
    const store = budgetless(memoryStore())
    const { client } = await setup({ store })
    await client.tokens.create({ id: 'parent', type: 'parent', data: 'p' })
    const big = 'x'.repeat(900_000)
    for (let i = 0; i < 5; i++)
      await client.tokens.children.create('parent', {
        id: `big-${i}`,
        type: 'big',
        data: big,
        metadata: { k: 'v' },
      })
    const v2 = await client.tokens.listV2({ type: ['big'], size: 5 })
    expect([v2.data.length, v2.pagination.next]).toEqual([4, expect.any(String)])
    const found = await client.tokens.searchV2({ query: 'type:big', size: 5 })
    expect([found.data.length, found.pagination.next]).toEqual([4, expect.any(String)])
    for (const call of [
      () => client.tokens.list({ size: 6 }),
      () => client.tokens.list({ size: 5, metadata: { k: 'v' } }),
      () => client.tokens.search({ query: 'type:big', size: 5 }),
      () => client.tokens.children.list('parent', { size: 5 }),
      () => client.tokens.children.list('parent', { size: 5, metadata: { k: 'v' } }),
    ]) {
      const refused = await failure(call())
      expect([refused.code, refused.message]).toEqual([
        'validation_failed',
        expect.stringContaining('4194304'),
      ])
    }
    expect((await client.tokens.list({ size: 4, type: ['big'] })).data).toHaveLength(4)
  }, 60_000)
})

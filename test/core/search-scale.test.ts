import { describe, expect, it } from 'vitest'
import type { Store } from '../../src/store/contract.js'
import type { Op } from '../../src/store/index.js'
import { failure, setup } from './setup.js'

/** `count` plaintext tokens of `tenant` written straight to the store (as a store holding them would). */
async function fill(store: Store, tenant: string, count: number, from = 0) {
  for (let start = from; start < from + count; start += 1000) {
    const ops: Op[] = []
    for (let i = start; i < Math.min(from + count, start + 1000); i++) {
      const id = `t${String(i).padStart(6, '0')}`
      ops.push({
        op: 'token.put',
        token: {
          id,
          tenant_id: tenant,
          type: 'token',
          data: `secret-${i}`,
          containers: ['/general/high/'],
          metadata: { order: `ord-${i}` },
          created_by: 'app',
          created_at: '2030-01-01T00:00:00.000Z',
        },
      })
    }
    await store.write({ ops })
  }
}

// That one tenant's heavy searches never stall another tenant's reads is timed in
// search-scale.slow.test.ts.
describe('searches and lists examine at most 10 000 tokens per call', () => {
  it('v1 counts up to 10 000 examined tokens and answers 400 past them; v2 answers a page with a cursor to go on', async () => {
    const { store, tenant, client } = await setup()
    await fill(store, tenant.id, 10_000)
    expect((await client.tokens.search({ query: 'NOT type:other', size: 1 })).pagination.total_items).toBe(
      10_000,
    )
    expect((await client.tokens.search({ query: 'type:token', size: 1 })).pagination.total_items).toBe(10_000)
    expect((await client.tokens.list({ metadata: {}, size: 1 })).pagination.total_items).toBe(10_000)
    await fill(store, tenant.id, 1, 10_000)
    const broad = await failure(client.tokens.search({ query: 'NOT type:other', size: 1 }))
    expect([broad.code, broad.message]).toEqual(['validation_failed', expect.stringContaining('too broad')])
    expect((await failure(client.tokens.search({ query: 'type:token' }))).message).toContain('query')
    // An exact term narrows the count to what it matches.
    expect((await client.tokens.search({ query: 'metadata.order:ORD-10000' })).data.map((t) => t.id)).toEqual(
      ['t010000'],
    )
    // v2: a wildcard costs 3 units a token (one, and two for its pattern), so a call examines
    // 3 334 tokens, then answers what it found with a cursor to go on.
    const pages = async (query: string) => {
      const found: string[][] = []
      let start: string | undefined
      do {
        const page = await client.tokens.searchV2({ query, size: 5, ...(start ? { start } : {}) })
        found.push(page.data.map((t) => t.id))
        start = page.pagination.next
      } while (start)
      return found
    }
    expect(await pages('id:none*')).toEqual([[], [], []])
    expect(await pages('id:t01000*')).toEqual([[], [], ['t010000']])
  }, 60_000)
})

import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import type { Store } from '../../src/store/contract.js'
import type { Op } from '../../src/store/index.js'
import { countingReads, turnsDuring } from './read-probes.js'
import { failure, setup } from './setup.js'

/** `count` plaintext tokens written straight to the store, of type `ta` (even) and `tb` (odd). */
async function fill(store: Store, tenant: string, count: number) {
  for (let start = 0; start < count; start += 1000) {
    const ops: Op[] = []
    for (let i = start; i < Math.min(count, start + 1000); i++)
      ops.push({
        op: 'token.put',
        token: {
          id: `t${String(i).padStart(6, '0')}`,
          tenant_id: tenant,
          type: i % 2 ? 'tb' : 'ta',
          data: `secret-${i}`,
          containers: ['/general/high/'],
          metadata: {},
          created_by: 'app',
          created_at: '2030-01-01T00:00:00.000Z',
        },
      })
    await store.write({ ops })
  }
}

describe('a join costs what it reads: skipped index entries count against the work cap', () => {
  it('an AND of exact terms over interleaved tokens stops at the cap, yields as it skips, and pages on', async () => {
    const { store, count } = countingReads(memoryStore())
    const { client, tenant } = await setup({ store })
    await fill(store, tenant.id, 12_000)
    count.entries = 0
    // v1: counting would read past 12 000 entries that match no token: 400 naming the cap.
    const broad = await failure(client.tokens.search({ query: 'type:ta AND type:tb' }))
    expect([broad.code, broad.message]).toEqual(['validation_failed', expect.stringContaining('too broad')])
    expect(count.entries).toBeLessThanOrEqual(10_600)
    // v2: an empty page with a cursor, the call's reads within the cap, other work run between.
    count.entries = 0
    const { result: first, turns } = await turnsDuring(() =>
      client.tokens.searchV2({ query: 'type:ta AND type:tb', size: 10 }),
    )
    expect(first.data).toEqual([])
    expect(count.entries).toBeLessThanOrEqual(10_600)
    expect(turns).toBeGreaterThanOrEqual(100)
    const second = await client.tokens.searchV2({
      query: 'type:ta AND type:tb',
      size: 10,
      start: first.pagination.next!,
    })
    expect([second.data, second.pagination.next]).toEqual([[], undefined])
  }, 60_000)

  it('a wildcard scan examines at most a third of the cap per call, yielding every few tokens', async () => {
    const { store, count } = countingReads(memoryStore())
    const { client, tenant } = await setup({ store })
    await fill(store, tenant.id, 12_000)
    count.heads = 0
    const { result, turns } = await turnsDuring(() => client.tokens.searchV2({ query: 'id:*x*', size: 10 }))
    expect(result.data).toEqual([])
    expect(result.pagination.next).toBeTypeOf('string')
    // 3 units a token (one, and two for the pattern): 3 334 tokens before the cap of 10 000 is passed.
    expect(count.heads).toBeLessThanOrEqual(3_334 + 128)
    expect(turns).toBeGreaterThanOrEqual(150)
  }, 60_000)
})

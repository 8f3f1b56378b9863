import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { failure, setup } from './setup.js'

/**
 * Four tokens of 333 322 euro signs (3 UTF-8 bytes each: sealed, 3 × 333 322 + 4 + 36 = 1 000 006
 * bytes) and one ASCII token of 194 240 characters (194 280 bytes): 4 194 304 bytes in all, exactly
 * 4 MiB. The `over` set's last token is one byte longer.
 */
const EUROS = '€'.repeat(333_322)
const dataOf = (type: 'fit' | 'over', i: number) =>
  i < 4 ? EUROS : 'x'.repeat(type === 'fit' ? 194_240 : 194_241)
const ids = (type: string) => [0, 1, 2, 3, 4].map((i) => `${type}-${i}`)

describe("a page built from a transaction's staged writes keeps the 4 MiB byte budget", () => {
  it('counts a staged token as the bytes it takes once sealed: 4 MiB answered whole, one byte more ends the page', async () => {
    const store = memoryStore()
    const { client, service, full, tenant } = await setup({ store })
    const tx = await client.transactions.create()
    const inTx = service.connect(full.key, { transactionId: tx.id })
    for (const type of ['fit', 'over'] as const)
      for (const i of [0, 1, 2, 3, 4])
        await inTx.tokens.create({ id: `${type}-${i}`, type, data: dataOf(type, i) })

    const v1 = (type: string) => inTx.tokens.list({ type: [type], size: 5 })
    expect((await v1('fit')).data.map((t) => t.id)).toEqual(ids('fit'))
    const refused = await failure(v1('over'))
    expect([refused.code, refused.message]).toEqual(['validation_failed', expect.stringContaining('4194304')])
    const search = await failure(inTx.tokens.search({ query: 'type:over', size: 5 }))
    expect(search.code).toBe('validation_failed')
    const v2 = await inTx.tokens.listV2({ type: ['over'], size: 5 })
    expect([v2.data.map((t) => t.id), v2.pagination.next]).toEqual([
      ids('over').slice(0, 4),
      expect.any(String),
    ])

    // Committed, the same tokens hold the bytes the staged ones were counted at.
    await client.transactions.commit(tx.id)
    const heads = await store.getTokenHeads(tenant.id, [...ids('fit'), ...ids('over')])
    const sizes = [1_000_006, 1_000_006, 1_000_006, 1_000_006]
    expect(heads.map((h) => h.stored_bytes)).toEqual([...sizes, 194_280, ...sizes, 194_281])
  }, 120_000)
})

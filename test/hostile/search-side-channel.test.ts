import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import type { Store } from '../../src/store/contract.js'
import { setup } from '../core/setup.js'

/** `store` with a count of everything its token reads answered (index entries, heads, tokens). */
function counting(store: Store) {
  const count = { entries: 0, heads: 0, tokens: 0 }
  const wrapped = new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver)
      if (name === 'findTokenIds')
        return async (...args: Parameters<Store['findTokenIds']>) => {
          const ids = await target.findTokenIds(...args)
          count.entries += ids.length
          return ids
        }
      if (name === 'getTokenHeads')
        return async (...args: Parameters<Store['getTokenHeads']>) => {
          const heads = await target.getTokenHeads(...args)
          count.heads += heads.length
          return heads
        }
      if (name === 'getTokens')
        return async (...args: Parameters<Store['getTokens']>) => {
          const tokens = await target.getTokens(...args)
          count.tokens += tokens.length
          return tokens
        }
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
  return { store: wrapped, count }
}

describe('search work does not tell what an unreadable token holds', () => {
  it('a key limited to /general/ probing a /pci/ token for a value does the same reads whether it holds it or not', async () => {
    const { store, count } = counting(memoryStore())
    const { client, keyFor } = await setup({ store })
    await client.tokens.create({
      id: 'pci-09998-cust-jane',
      type: 'card_like',
      data: '4242424242424242',
      containers: ['/pci/'],
      search_indexes: ['{{ data }}'],
    })
    await client.tokens.create({ id: 'gen-1', type: 'card_like', data: 'x', containers: ['/general/'] })
    const limited = (
      await keyFor(
        'private',
        [],
        [
          {
            description: 'general only',
            priority: 1,
            container: '/general/',
            transform: 'reveal',
            permissions: ['token:read', 'token:search'],
          },
        ],
      )
    ).client
    const work = async (query: string) => {
      Object.assign(count, { entries: 0, heads: 0, tokens: 0 })
      const page = await limited.tokens.searchV2({ query, size: 10 })
      expect(page.data).toEqual([])
      return { ...count }
    }
    for (const shape of ['id:pci-09998-cust-jane AND data:%', 'type:card_like AND data:%']) {
      const holds = await work(shape.replace('%', '4242424242424242'))
      const lacks = await work(shape.replace('%', '4000000000000002'))
      expect(holds).toEqual(lacks)
    }
  })
})

import type { Store } from '../../src/store/contract.js'
import { delegatingStore } from '../../src/store/delegate.js'

/** `store` with counts of what its token reads answered: index entries, heads and whole tokens. */
export function countingReads(store: Store) {
  const count = { entries: 0, heads: 0, tokens: 0 }
  const wrapped = delegatingStore(store, {
    async findTokenIds(...args) {
      const ids = await store.findTokenIds(...args)
      count.entries += ids.length
      return ids
    },
    async getTokenHeads(...args) {
      const heads = await store.getTokenHeads(...args)
      count.heads += heads.length
      return heads
    },
    async getTokens(...args) {
      const tokens = await store.getTokens(...args)
      count.tokens += tokens.length
      return tokens
    },
  })
  return { store: wrapped, count }
}

/** How many times other work got the event loop (a macrotask each turn) while `work` ran. */
export async function turnsDuring<T>(work: () => Promise<T>): Promise<{ result: T; turns: number }> {
  let turns = 0
  let running = true
  const tick = () => {
    if (!running) return
    turns++
    setImmediate(tick)
  }
  setImmediate(tick)
  try {
    return { result: await work(), turns }
  } finally {
    running = false
  }
}

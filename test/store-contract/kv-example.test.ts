import { readFileSync } from 'node:fs'
import { expect, it } from 'vitest'
import type { Store } from '../../entry/index.js'
import { type KeyValue, kvStore } from '../../examples/kv-store.js'
import { storeEquivalence } from '../../testing/equivalence.js'
import { storeContract } from '../../testing/store-contract.js'

/** The worked example of docs/stores.md's "Write your own store", over an in-memory key-value map. */
function harness(name: string) {
  const storages = new WeakMap<Store, KeyValue>()
  const open = async (kv: KeyValue) => {
    const store = await kvStore(kv)
    storages.set(store, kv)
    return store
  }
  return {
    name,
    open: () => {
      const map = new Map<string, string>()
      return open({ get: async (k) => map.get(k) ?? null, set: async (k, v) => void map.set(k, v) })
    },
    reopen: async (store: Store) => {
      const kv = storages.get(store)!
      await store.close()
      return open(kv)
    },
  }
}

storeContract(harness('docs example: key-value store'))
// With reopen: the example restores from its snapshot between steps, so that code is compared too.
storeEquivalence({ ...harness('docs example: key-value store'), runs: 10 })

it('docs/stores.md shows the key-value store example exactly as examples/kv-store.ts', () => {
  expect(readFileSync('docs/stores.md', 'utf8')).toContain(
    readFileSync('examples/kv-store.ts', 'utf8').trim(),
  )
})

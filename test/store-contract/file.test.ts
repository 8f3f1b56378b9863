import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll } from 'vitest'
import type { FileStoreOptions } from '../../adapters/file/index.js'
import { fileStore } from '../../adapters/file/index.js'
import type { Store } from '../../src/store/contract.js'
import { storeEquivalence } from '../../testing/store/equivalence.js'
import { storeContract } from '../../testing/store/suite.js'

const dirs: string[] = []
afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })))
})

/** A harness over fresh temp directories; `reopen` closes the store and opens its directory again. */
function harness(name: string, options: Omit<FileStoreOptions, 'path'>) {
  const paths = new WeakMap<Store, string>()
  return {
    name,
    open: async () => {
      const path = await mkdtemp(join(tmpdir(), 'tokenvault-contract-'))
      dirs.push(path)
      const store = await fileStore({ path, ...options })
      paths.set(store, path)
      return store
    },
    reopen: async (store: Store) => {
      const path = paths.get(store)!
      await store.close()
      const again = await fileStore({ path, ...options })
      paths.set(again, path)
      return again
    },
  }
}

storeContract(harness('file', {}))
// The model-based equivalence harness, reopening the store every few steps.
storeEquivalence({ ...harness('file', { durability: 'none' }), runs: 25 })

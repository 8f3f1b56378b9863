import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll } from 'vitest'
import { forwardedResult } from '../../adapters/file/forward.js'
import type { FileStore, FileStoreOptions } from '../../adapters/file/index.js'
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

/**
 * A file store whose writes another store of the same directory commits (`commitsOn`, as the heavy
 * lane's thread hands its writes to the main thread's store), each write and its answer copied as
 * `postMessage` copies them, its records moved.
 */
async function forwarding(path: string): Promise<Store> {
  const committer = await fileStore({ path })
  const store = await fileStore({
    path,
    commitsOn: async (write, transfer) => {
      const answer = await forwardedResult(committer.commitForwarded(structuredClone(write, { transfer })))
      return structuredClone(answer)
    },
  })
  const closeBoth = async () => {
    await store.close()
    await committer.close()
  }
  return { ...store, close: closeBoth, stats: () => (committer as FileStore).stats() } as Store
}

storeContract({
  name: 'file, writes committed by another store of the directory',
  open: async () => {
    const path = await mkdtemp(join(tmpdir(), 'tokenvault-contract-'))
    dirs.push(path)
    return forwarding(path)
  },
})
// The model-based equivalence harness, reopening the store every few steps.
storeEquivalence({ ...harness('file', { durability: 'none' }), runs: 25 })

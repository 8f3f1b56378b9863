import type { Store } from '../../src/store/index.js'
import { StoreError } from '../../src/store/index.js'
import { emptyMaps } from './maps.js'
import { mapsReads } from './model-reads.js'
import { writeBatch } from './ops.js'

/**
 * A store that keeps everything in this process's memory: the default store, and the fake for tests.
 * It keeps every promise of the `Store` contract (atomic, serialized batches; copies in and out), so
 * code tested against it behaves the same on the durable stores. Nothing survives the process.
 *
 * Composed, not inherited: the records are one plain object of maps (`emptyMaps()`), which the
 * store's write (`writeBatch`: the checks of `checks.ts`, then the ops of `apply.ts`) and reads
 * (`reads.ts`, by name in `mapsReads`) take as their first argument.
 */
export function memoryStore(): Store {
  const maps = emptyMaps()
  let closed = false
  const open = () => {
    if (closed) throw new StoreError('closed', 'memoryStore: the store is closed')
    return maps
  }
  return {
    write: async (batch) => writeBatch(open(), batch),
    ...mapsReads(open),
    close: async () => {
      closed = true
    },
  }
}

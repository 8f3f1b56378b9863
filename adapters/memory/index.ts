import type { Store } from '../../src/store/contract.js'
import { StoreError } from '../../src/store/error.js'
import { MemoryState } from '../../src/store/memory-state.js'
import { modelReads } from '../../src/store/model-reads.js'

/**
 * A store that keeps everything in this process's memory: the default store, and the fake for tests.
 * It keeps every promise of the `Store` contract (atomic, serialized batches; copies in and out), so
 * code tested against it behaves the same on the durable stores. Nothing survives the process.
 */
export function memoryStore(): Store {
  const state = new MemoryState()
  let closed = false
  const open = () => {
    if (closed) throw new StoreError('closed', 'memoryStore: the store is closed')
    return state
  }
  return {
    write: async (batch) => open().write(batch),
    ...modelReads(open),
    close: async () => {
      closed = true
    },
  }
}

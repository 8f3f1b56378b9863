import type { Store } from '../../src/store/index.js'
import { StoreError } from '../../src/store/index.js'
import { modelReads } from './model-reads.js'
import { MemoryState } from './state.js'

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

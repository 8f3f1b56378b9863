import type { Op, Store } from '../../src/store/index.js'
import { delegatingStore } from '../../src/store/index.js'

/**
 * `store` with every acknowledged batch also handed to `record` before the write answers: when a
 * call of the service returns, what it wrote has been recorded (the leak index and the names and
 * grants the insight reports read are never behind the vault's state).
 */
export function watchedStore(store: Store, record: (ops: readonly Op[]) => Promise<void>): Store {
  return delegatingStore(store, {
    write: async (batch) => {
      const result = await store.write(batch)
      if (result.ok) await record(batch.ops)
      return result
    },
  })
}

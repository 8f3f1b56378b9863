import type { Store } from 'tokenvault'
import { modelReads, ReferenceModel } from 'tokenvault/testing'

/** Any string key-value storage: a browser's localStorage, a Redis client, a file. */
export interface KeyValue {
  get(key: string): Promise<string | null>
  set(key: string, value: string): Promise<void>
}

/**
 * A durable store over a key-value storage: the reference model answers and guards every call,
 * and each acknowledged write saves a snapshot of all records under one key before it resolves.
 */
export async function kvStore(kv: KeyValue, key = 'tokenvault'): Promise<Store> {
  const saved = await kv.get(key)
  const model = saved ? ReferenceModel.fromRecords(JSON.parse(saved)) : new ReferenceModel()
  let queue = Promise.resolve()
  let closed = false
  const use = () => {
    if (closed) throw new Error('kvStore: closed')
    return model
  }
  return {
    async write(batch) {
      const result = use().write(batch) // synchronous: checks and ops apply atomically
      if (!result.ok) return result
      const snapshot = JSON.stringify(model.records())
      queue = queue.then(() => kv.set(key, snapshot))
      await queue
      return result
    },
    ...modelReads(use),
    async close() {
      closed = true
      await queue
    },
  }
}

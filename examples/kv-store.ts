import type { Store } from 'tokenvault'
import { ReferenceModel } from 'tokenvault/testing'

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
    getTenant: async (id) => use().getTenant(id),
    hasTenants: async () => use().hasTenants(),
    listTenants: async () => use().listTenants(),
    findKey: async (hash) => use().findKey(hash),
    getApplication: async (t, id) => use().getApplication(t, id),
    listApplications: async (t, range) => use().listApplications(t, range),
    getToken: async (t, id) => use().getToken(t, id),
    hasAssociation: async (t, p, c) => use().hasAssociation(t, p, c),
    listChildren: async (t, p, q) => use().listChildren(t, p, q),
    listTokens: async (t, q) => use().listTokens(t, q),
    getTransaction: async (t, id) => use().getTransaction(t, id),
    getSessionByNonce: async (t, hash) => use().getSessionByNonce(t, hash),
    getFormula: async (t, id) => use().getFormula(t, id),
    listFormulas: async (t, q) => use().listFormulas(t, q),
    getReactor: async (t, id) => use().getReactor(t, id),
    listReactors: async (t, q) => use().listReactors(t, q),
    getIdempotency: async (t, id) => use().getIdempotency(t, id),
    listExpired: async (q) => use().listExpired(q),
    dump: async () => use().dump(),
    async close() {
      closed = true
      await queue
    },
  }
}

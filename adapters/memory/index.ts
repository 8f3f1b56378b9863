import type { Store } from '../../src/store/contract.js'
import { StoreError } from '../../src/store/error.js'
import { MemoryState } from '../../src/store/memory-state.js'

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
    getTenant: async (id) => open().getTenant(id),
    hasTenants: async () => open().hasTenants(),
    listTenants: async () => open().listTenants(),
    findKey: async (hash) => open().findKey(hash),
    getApplication: async (t, id) => open().getApplication(t, id),
    listApplications: async (t, range) => open().listApplications(t, range),
    getToken: async (t, id) => open().getToken(t, id),
    hasAssociation: async (t, p, c) => open().hasAssociation(t, p, c),
    listChildren: async (t, p, q) => open().listChildren(t, p, q),
    listTokens: async (t, q) => open().listTokens(t, q),
    getTransaction: async (t, id) => open().getTransaction(t, id),
    getSessionByNonce: async (t, hash) => open().getSessionByNonce(t, hash),
    getFormula: async (t, id) => open().getFormula(t, id),
    listFormulas: async (t, q) => open().listFormulas(t, q),
    getReactor: async (t, id) => open().getReactor(t, id),
    listReactors: async (t, q) => open().listReactors(t, q),
    getIdempotency: async (t, id) => open().getIdempotency(t, id),
    listExpired: async (query) => open().listExpired(query),
    dump: async () => open().dump(),
    close: async () => {
      closed = true
    },
  }
}

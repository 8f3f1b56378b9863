import type { StoreReads } from '../../src/store/index.js'
import type { MemoryState } from './state.js'

/**
 * Every read of the store contract answered by the state `use()` returns (which may throw, say once
 * the store is closed): what a store keeping a `MemoryState` in memory (memory, file, a key-value
 * store) answers reads with. Each call reads `use()` anew, so a store may swap its state.
 */
export function modelReads(use: () => MemoryState): StoreReads {
  return {
    getTenant: async (id) => use().getTenant(id),
    hasTenants: async () => use().hasTenants(),
    listTenants: async () => use().listTenants(),
    findKey: async (hash) => use().findKey(hash),
    getApplication: async (t, id) => use().getApplication(t, id),
    listApplications: async (t, range) => use().listApplications(t, range),
    getToken: async (t, id) => use().getToken(t, id),
    hasAssociation: async (t, p, c) => use().hasAssociation(t, p, c),
    listLinks: async (t, id) => use().listLinks(t, id),
    listChildren: async (t, p, q) => use().listChildren(t, p, q),
    listTokens: async (t, q) => use().listTokens(t, q),
    findTokenIds: async (t, q) => use().findTokenIds(t, q),
    findChildIds: async (t, p, q) => use().findChildIds(t, p, q),
    getTokenHeads: async (t, ids) => use().getTokenHeads(t, ids),
    getTokens: async (t, ids) => use().getTokens(t, ids),
    getTransaction: async (t, id) => use().getTransaction(t, id),
    getStaged: async (t, tx, ids) => use().getStaged(t, tx, ids),
    listStaged: async (t, tx, q) => use().listStaged(t, tx, q),
    getSessionByNonce: async (t, hash) => use().getSessionByNonce(t, hash),
    getFormula: async (t, id) => use().getFormula(t, id),
    listFormulas: async (t, q) => use().listFormulas(t, q),
    getReactor: async (t, id) => use().getReactor(t, id),
    listReactors: async (t, q) => use().listReactors(t, q),
    getIdempotency: async (t, id) => use().getIdempotency(t, id),
    getClientKey: async (t, id) => use().getClientKey(t, id),
    listClientKeys: async (t, q) => use().listClientKeys(t, q),
    getProxy: async (t, id) => use().getProxy(t, id),
    listProxies: async (t, q) => use().listProxies(t, q),
    getTokenIntent: async (t, id) => use().getTokenIntent(t, id),
    listDocuments: async (t, q) => use().listDocuments(t, q),
    getDocument: async (t, id) => use().getDocument(t, id),
    getDocumentChunk: async (t, id, i) => use().getDocumentChunk(t, id, i),
    getWebhook: async (t, id) => use().getWebhook(t, id),
    listWebhooks: async (t, q) => use().listWebhooks(t, q),
    getOutbox: async (t, id) => use().getOutbox(t, id),
    listOutbox: async (t, q) => use().listOutbox(t, q),
    listDueOutbox: async (q) => use().listDueOutbox(q),
    listLogs: async (t, q) => use().listLogs(t, q),
    countRecords: async (t, kind) => use().countRecords(t, kind),
    listExpired: async (query) => use().listExpired(query),
    dump: async () => use().dump(),
  }
}

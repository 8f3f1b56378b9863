import type { StoreReads } from '../../src/store/index.js'
import type { MemoryMaps } from './maps.js'
import * as read from './reads.js'
import type { MemoryState } from './state.js'

/**
 * Every read of the store contract answered from the maps `use()` returns (which may throw, say once
 * the store is closed), by the read of `reads.ts` of the same name: what a store keeping its records
 * in memory answers reads with (`memoryStore()`). Each call reads `use()` anew, so a store may swap
 * its maps.
 */
export function mapsReads(use: () => MemoryMaps): StoreReads {
  return {
    getTenant: async (id) => read.getTenant(use(), id),
    hasTenants: async () => read.hasTenants(use()),
    listTenants: async () => read.listTenants(use()),
    findKey: async (hash) => read.findKey(use(), hash),
    getApplication: async (t, id) => read.getApplication(use(), t, id),
    listApplications: async (t, range) => read.listApplications(use(), t, range),
    getToken: async (t, id) => read.getToken(use(), t, id),
    hasAssociation: async (t, p, c) => read.hasAssociation(use(), t, p, c),
    listLinks: async (t, id) => read.listLinks(use(), t, id),
    listChildren: async (t, p, q) => read.listChildren(use(), t, p, q),
    listTokens: async (t, q) => read.listTokens(use(), t, q),
    findTokenIds: async (t, q) => read.findTokenIds(use(), t, q),
    findChildIds: async (t, p, q) => read.findChildIds(use(), t, p, q),
    getTokenHeads: async (t, ids) => read.getTokenHeads(use(), t, ids),
    getTokens: async (t, ids) => read.getTokens(use(), t, ids),
    getTransaction: async (t, id) => read.getTransaction(use(), t, id),
    listTransactions: async (t, q) => read.listTransactions(use(), t, q),
    getStaged: async (t, tx, ids) => read.getStaged(use(), t, tx, ids),
    listStaged: async (t, tx, q) => read.listStaged(use(), t, tx, q),
    getSessionByNonce: async (t, hash) => read.getSessionByNonce(use(), t, hash),
    getFormula: async (t, id) => read.getFormula(use(), t, id),
    listFormulas: async (t, q) => read.listFormulas(use(), t, q),
    getReactor: async (t, id) => read.getReactor(use(), t, id),
    listReactors: async (t, q) => read.listReactors(use(), t, q),
    getIdempotency: async (t, id) => read.getIdempotency(use(), t, id),
    listIdempotency: async (t, q) => read.listIdempotency(use(), t, q),
    getClientKey: async (t, id) => read.getClientKey(use(), t, id),
    listClientKeys: async (t, q) => read.listClientKeys(use(), t, q),
    getProxy: async (t, id) => read.getProxy(use(), t, id),
    listProxies: async (t, q) => read.listProxies(use(), t, q),
    getTokenIntent: async (t, id) => read.getTokenIntent(use(), t, id),
    listTokenIntents: async (t, q) => read.listTokenIntents(use(), t, q),
    listDocuments: async (t, q) => read.listDocuments(use(), t, q),
    getDocument: async (t, id) => read.getDocument(use(), t, id),
    getDocumentChunk: async (t, id, i) => read.getDocumentChunk(use(), t, id, i),
    getWebhook: async (t, id) => read.getWebhook(use(), t, id),
    listWebhooks: async (t, q) => read.listWebhooks(use(), t, q),
    getOutbox: async (t, id) => read.getOutbox(use(), t, id),
    listOutbox: async (t, q) => read.listOutbox(use(), t, q),
    listDueOutbox: async (q) => read.listDueOutbox(use(), q),
    listLogs: async (t, q) => read.listLogs(use(), t, q),
    unindexedLog: async (t, entries) => read.unindexedLog(use(), t, entries),
    countRecords: async (t, kind) => read.countRecords(use(), t, kind),
    listExpired: async (query) => read.listExpired(use(), query),
    dump: async () => read.dump(use()),
  }
}

/**
 * Every read of the store contract answered by the state `use()` returns (which may throw, say once
 * the store is closed): what a store keeping a `MemoryState` in memory (the file store, a key-value
 * store) answers reads with. Each call reads `use()` anew, so a store may swap its state.
 */
export function modelReads(use: () => MemoryState): StoreReads {
  return mapsReads(() => use().maps)
}

import type { Store } from './contract.js'

/** The names of the contract's methods (`persistent` is a property, not a method). */
export type StoreMethod = Exclude<keyof Store, 'persistent'>

/**
 * Every method of `Store`, named once: a method added to the contract and missing here (or a name
 * here that is no method) fails to compile, so a wrapper built on `delegatingStore` can't drop one.
 */
const STORE_METHODS = {
  write: true,
  getTenant: true,
  hasTenants: true,
  listTenants: true,
  findKey: true,
  getApplication: true,
  listApplications: true,
  getToken: true,
  hasAssociation: true,
  listLinks: true,
  listChildren: true,
  listTokens: true,
  findTokenIds: true,
  findChildIds: true,
  getTokenHeads: true,
  getTokens: true,
  getTransaction: true,
  listTransactions: true,
  getStaged: true,
  listStaged: true,
  getSessionByNonce: true,
  getFormula: true,
  listFormulas: true,
  getReactor: true,
  listReactors: true,
  getIdempotency: true,
  listIdempotency: true,
  getProxy: true,
  listProxies: true,
  getClientKey: true,
  listClientKeys: true,
  getTokenIntent: true,
  listTokenIntents: true,
  listDocuments: true,
  getDocument: true,
  getDocumentChunk: true,
  getWebhook: true,
  listWebhooks: true,
  getOutbox: true,
  listOutbox: true,
  listDueOutbox: true,
  listLogs: true,
  unindexedLog: true,
  countRecords: true,
  listExpired: true,
  dump: true,
  close: true,
} satisfies Record<StoreMethod, true>

/** The contract's method names, in the order `STORE_METHODS` lists them. */
export const STORE_METHOD_NAMES = Object.keys(STORE_METHODS) as StoreMethod[]

/**
 * A store that answers each method of the contract with `overrides`' own when it has one, else by
 * calling `inner`'s method of that name on `inner` (so `inner` may be a class: its prototype
 * methods and private fields work). `persistent` is read from `inner` once. How to wrap a store:
 * never by spreading it, which copies own properties only and loses a class's methods.
 */
export function delegatingStore(inner: Store, overrides: Partial<Pick<Store, StoreMethod>>): Store {
  const out: Partial<Record<StoreMethod, unknown>> = {}
  for (const name of STORE_METHOD_NAMES) {
    const own = overrides[name]
    out[name] = own ?? (inner[name] as (...args: unknown[]) => unknown).bind(inner)
  }
  const persistent = inner.persistent
  return (persistent === undefined ? out : { ...out, persistent }) as Store
}

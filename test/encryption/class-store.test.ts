import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { Keyring, sealedStore, toProvider } from '../../src/encryption/index.js'
import type { Store } from '../../src/store/contract.js'
import { ContractModel } from '../../testing/store/model.js'

/**
 * A store may be a class: the service wraps it (to seal token data) by delegating each method of
 * the contract by name, never by spreading it (a spread copies own properties only, so a class's
 * prototype methods would be lost).
 */

const MASTER_KEY = new Uint8Array(32).fill(7)

async function vaultOver(store: Store) {
  const service = createService({
    store,
    clock: manualClock('2030-01-01T00:00:00.000Z'),
    masterKey: MASTER_KEY,
    runner: null,
  })
  const tenant = await service.admin.createTenant({ name: 'class' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'backend',
    type: 'private',
    permissions: ['token:create', 'token:read', 'token:search', 'token:delete'],
    rules: [
      {
        description: 'all',
        priority: 1,
        container: '/',
        transform: 'reveal',
        permissions: ['token:create', 'token:read', 'token:search', 'token:delete'],
      },
    ],
  })
  return { service, client: service.connect(key) }
}

/**
 * A store written as a class whose every method lives on the prototype and reaches the store it
 * keeps in a private field (`#inner`): nothing of it is an own enumerable property. It counts
 * the calls of each method, so the test sees every method of the contract reached through it.
 */
class PrototypeStore implements Store {
  readonly #inner: Store
  readonly calls = new Map<string, number>()
  constructor(inner: Store) {
    this.#inner = inner
  }
  get persistent() {
    return false
  }
  #count(name: string) {
    this.calls.set(name, (this.calls.get(name) ?? 0) + 1)
  }
  write(...a: Parameters<Store['write']>) {
    this.#count('write')
    return this.#inner.write(...a)
  }
  getTenant(...a: Parameters<Store['getTenant']>) {
    this.#count('getTenant')
    return this.#inner.getTenant(...a)
  }
  hasTenants() {
    this.#count('hasTenants')
    return this.#inner.hasTenants()
  }
  listTenants() {
    this.#count('listTenants')
    return this.#inner.listTenants()
  }
  findKey(...a: Parameters<Store['findKey']>) {
    this.#count('findKey')
    return this.#inner.findKey(...a)
  }
  getApplication(...a: Parameters<Store['getApplication']>) {
    this.#count('getApplication')
    return this.#inner.getApplication(...a)
  }
  listApplications(...a: Parameters<Store['listApplications']>) {
    this.#count('listApplications')
    return this.#inner.listApplications(...a)
  }
  getToken(...a: Parameters<Store['getToken']>) {
    this.#count('getToken')
    return this.#inner.getToken(...a)
  }
  hasAssociation(...a: Parameters<Store['hasAssociation']>) {
    this.#count('hasAssociation')
    return this.#inner.hasAssociation(...a)
  }
  listLinks(...a: Parameters<Store['listLinks']>) {
    this.#count('listLinks')
    return this.#inner.listLinks(...a)
  }
  listChildren(...a: Parameters<Store['listChildren']>) {
    this.#count('listChildren')
    return this.#inner.listChildren(...a)
  }
  listTokens(...a: Parameters<Store['listTokens']>) {
    this.#count('listTokens')
    return this.#inner.listTokens(...a)
  }
  findTokenIds(...a: Parameters<Store['findTokenIds']>) {
    this.#count('findTokenIds')
    return this.#inner.findTokenIds(...a)
  }
  findChildIds(...a: Parameters<Store['findChildIds']>) {
    this.#count('findChildIds')
    return this.#inner.findChildIds(...a)
  }
  getTokenHeads(...a: Parameters<Store['getTokenHeads']>) {
    this.#count('getTokenHeads')
    return this.#inner.getTokenHeads(...a)
  }
  getTokens(...a: Parameters<Store['getTokens']>) {
    this.#count('getTokens')
    return this.#inner.getTokens(...a)
  }
  getTransaction(...a: Parameters<Store['getTransaction']>) {
    this.#count('getTransaction')
    return this.#inner.getTransaction(...a)
  }
  listTransactions(...a: Parameters<Store['listTransactions']>) {
    this.#count('listTransactions')
    return this.#inner.listTransactions(...a)
  }
  getStaged(...a: Parameters<Store['getStaged']>) {
    this.#count('getStaged')
    return this.#inner.getStaged(...a)
  }
  listStaged(...a: Parameters<Store['listStaged']>) {
    this.#count('listStaged')
    return this.#inner.listStaged(...a)
  }
  getSessionByNonce(...a: Parameters<Store['getSessionByNonce']>) {
    this.#count('getSessionByNonce')
    return this.#inner.getSessionByNonce(...a)
  }
  getFormula(...a: Parameters<Store['getFormula']>) {
    this.#count('getFormula')
    return this.#inner.getFormula(...a)
  }
  listFormulas(...a: Parameters<Store['listFormulas']>) {
    this.#count('listFormulas')
    return this.#inner.listFormulas(...a)
  }
  getReactor(...a: Parameters<Store['getReactor']>) {
    this.#count('getReactor')
    return this.#inner.getReactor(...a)
  }
  listReactors(...a: Parameters<Store['listReactors']>) {
    this.#count('listReactors')
    return this.#inner.listReactors(...a)
  }
  getIdempotency(...a: Parameters<Store['getIdempotency']>) {
    this.#count('getIdempotency')
    return this.#inner.getIdempotency(...a)
  }
  listIdempotency(...a: Parameters<Store['listIdempotency']>) {
    this.#count('listIdempotency')
    return this.#inner.listIdempotency(...a)
  }
  getClientKey(...a: Parameters<Store['getClientKey']>) {
    this.#count('getClientKey')
    return this.#inner.getClientKey(...a)
  }
  listClientKeys(...a: Parameters<Store['listClientKeys']>) {
    this.#count('listClientKeys')
    return this.#inner.listClientKeys(...a)
  }
  getTokenIntent(...a: Parameters<Store['getTokenIntent']>) {
    this.#count('getTokenIntent')
    return this.#inner.getTokenIntent(...a)
  }
  listTokenIntents(...a: Parameters<Store['listTokenIntents']>) {
    this.#count('listTokenIntents')
    return this.#inner.listTokenIntents(...a)
  }
  getProxy(...a: Parameters<Store['getProxy']>) {
    this.#count('getProxy')
    return this.#inner.getProxy(...a)
  }
  listProxies(...a: Parameters<Store['listProxies']>) {
    this.#count('listProxies')
    return this.#inner.listProxies(...a)
  }
  listDocuments(...a: Parameters<Store['listDocuments']>) {
    this.#count('listDocuments')
    return this.#inner.listDocuments(...a)
  }
  getDocument(...a: Parameters<Store['getDocument']>) {
    this.#count('getDocument')
    return this.#inner.getDocument(...a)
  }
  getDocumentChunk(...a: Parameters<Store['getDocumentChunk']>) {
    this.#count('getDocumentChunk')
    return this.#inner.getDocumentChunk(...a)
  }
  getWebhook(...a: Parameters<Store['getWebhook']>) {
    this.#count('getWebhook')
    return this.#inner.getWebhook(...a)
  }
  listWebhooks(...a: Parameters<Store['listWebhooks']>) {
    this.#count('listWebhooks')
    return this.#inner.listWebhooks(...a)
  }
  getOutbox(...a: Parameters<Store['getOutbox']>) {
    this.#count('getOutbox')
    return this.#inner.getOutbox(...a)
  }
  listOutbox(...a: Parameters<Store['listOutbox']>) {
    this.#count('listOutbox')
    return this.#inner.listOutbox(...a)
  }
  listDueOutbox(...a: Parameters<Store['listDueOutbox']>) {
    this.#count('listDueOutbox')
    return this.#inner.listDueOutbox(...a)
  }
  listLogs(...a: Parameters<Store['listLogs']>) {
    this.#count('listLogs')
    return this.#inner.listLogs(...a)
  }
  unindexedLog(...a: Parameters<Store['unindexedLog']>) {
    this.#count('unindexedLog')
    return this.#inner.unindexedLog(...a)
  }
  countRecords(...a: Parameters<Store['countRecords']>) {
    this.#count('countRecords')
    return this.#inner.countRecords(...a)
  }
  listExpired(...a: Parameters<Store['listExpired']>) {
    this.#count('listExpired')
    return this.#inner.listExpired(...a)
  }
  dump() {
    this.#count('dump')
    return this.#inner.dump()
  }
  close() {
    this.#count('close')
    return this.#inner.close()
  }
}

/** Every method of the `Store` contract, by name (`persistent` is a property, not a method). */
const CONTRACT_METHODS = [
  'write',
  'getTenant',
  'hasTenants',
  'listTenants',
  'findKey',
  'getApplication',
  'listApplications',
  'getToken',
  'hasAssociation',
  'listLinks',
  'listChildren',
  'listTokens',
  'findTokenIds',
  'findChildIds',
  'getTokenHeads',
  'getTokens',
  'getTransaction',
  'listTransactions',
  'getStaged',
  'listStaged',
  'getSessionByNonce',
  'getFormula',
  'listFormulas',
  'getReactor',
  'listReactors',
  'getIdempotency',
  'listIdempotency',
  'getClientKey',
  'listClientKeys',
  'getTokenIntent',
  'listTokenIntents',
  'getProxy',
  'listProxies',
  'listDocuments',
  'getDocument',
  'getDocumentChunk',
  'getWebhook',
  'listWebhooks',
  'getOutbox',
  'listOutbox',
  'listDueOutbox',
  'listLogs',
  'unindexedLog',
  'countRecords',
  'listExpired',
  'dump',
  'close',
] as const

describe('a store written as a class', () => {
  it('the test kit’s ContractModel serves create, get, search and delete', async () => {
    const { service, client } = await vaultOver(new ContractModel())
    const created = await client.tokens.create({
      id: 'card-1',
      type: 'token',
      data: 'secret value',
      metadata: { order: 'ord-1' },
    })
    expect(created.id).toBe('card-1')
    expect((await client.tokens.get('card-1')).data).toBe('secret value')
    const found = await client.tokens.search({ query: 'metadata.order:ord-1' })
    expect(found.data.map((t) => t.id)).toEqual(['card-1'])
    await client.tokens.delete('card-1')
    await expect(client.tokens.get('card-1')).rejects.toMatchObject({ code: 'not_found' })
    await service.close()
  })

  it('serves a vault whose store keeps its methods on its prototype', async () => {
    const store = new PrototypeStore(memoryStore())
    const { service, client } = await vaultOver(store)
    await client.tokens.create({ id: 'p1', type: 'token', data: 'parent' })
    await client.tokens.children.create('p1', { id: 'c1', type: 'token', data: 'child' })
    expect((await client.tokens.get('c1')).data).toBe('child')
    expect((await client.tokens.children.list('p1')).data.map((t) => t.id)).toEqual(['c1'])
    expect((await client.tokens.search({ query: 'id:p1' })).data.map((t) => t.id)).toEqual(['p1'])
    await service.admin.sweep()
    await service.close()
    expect(store.calls.get('close')).toBe(1)
  })

  it('the sealed store answers every method of the contract, each reaching the class once', async () => {
    // The class holds exactly the contract's methods (checked here, so the list can't drift).
    expect(
      Object.getOwnPropertyNames(PrototypeStore.prototype)
        .filter((name) => name !== 'constructor' && name !== 'persistent')
        .sort(),
    ).toEqual([...CONTRACT_METHODS].sort())
    const inner = new PrototypeStore(memoryStore())
    const keyring = new Keyring(inner, [toProvider(MASTER_KEY)])
    const store = sealedStore(inner, keyring, {
      searchIndexPurpose: 'search-index',
      asRead: (token) => token,
    })
    expect(store.persistent).toBe(false)
    const now = '2030-01-01T00:00:00.000Z'
    const page = { offset: 0, limit: 10 }
    const calls: Record<(typeof CONTRACT_METHODS)[number], () => Promise<unknown>> = {
      write: () => store.write({ ops: [] }),
      getTenant: () => store.getTenant('t'),
      hasTenants: () => store.hasTenants(),
      listTenants: () => store.listTenants(),
      findKey: () => store.findKey('hash'),
      getApplication: () => store.getApplication('t', 'a'),
      listApplications: () => store.listApplications('t', page),
      getToken: () => store.getToken('t', 'x'),
      hasAssociation: () => store.hasAssociation('t', 'p', 'c'),
      listLinks: () => store.listLinks('t', 'x'),
      listChildren: () => store.listChildren('t', 'p', { ...page, now }),
      listTokens: () => store.listTokens('t', { ...page, now }),
      findTokenIds: () => store.findTokenIds('t', { limit: 10 }),
      findChildIds: () => store.findChildIds('t', 'p', { limit: 10 }),
      getTokenHeads: () => store.getTokenHeads('t', ['x']),
      getTokens: () => store.getTokens('t', ['x']),
      getTransaction: () => store.getTransaction('t', 'tx'),
      listTransactions: () => store.listTransactions('t', { limit: 10 }),
      getStaged: () => store.getStaged('t', 'tx', ['x']),
      listStaged: () => store.listStaged('t', 'tx', { limit: 10 }),
      getSessionByNonce: () => store.getSessionByNonce('t', 'nonce'),
      getFormula: () => store.getFormula(null, 'f'),
      listFormulas: () => store.listFormulas('t', page),
      getReactor: () => store.getReactor('t', 'r'),
      listReactors: () => store.listReactors('t', page),
      getIdempotency: () => store.getIdempotency('t', 'i'),
      listIdempotency: () => store.listIdempotency('t', { limit: 10 }),
      getClientKey: () => store.getClientKey('t', 'k'),
      listClientKeys: () => store.listClientKeys('t', page),
      getTokenIntent: () => store.getTokenIntent('t', 'i'),
      listTokenIntents: () => store.listTokenIntents('t', { limit: 10 }),
      getProxy: () => store.getProxy('t', 'p'),
      listProxies: () => store.listProxies('t', page),
      listDocuments: () => store.listDocuments('t', { limit: 10 }),
      getDocument: () => store.getDocument('t', 'd'),
      getDocumentChunk: () => store.getDocumentChunk('t', 'd', 0),
      getWebhook: () => store.getWebhook('t', 'w'),
      listWebhooks: () => store.listWebhooks('t', page),
      getOutbox: () => store.getOutbox('t', 'o'),
      listOutbox: () => store.listOutbox('t', { limit: 10 }),
      listDueOutbox: () => store.listDueOutbox({ before: now, limit: 10 }),
      listLogs: () => store.listLogs('t', { order: 'chain', limit: 10 }),
      unindexedLog: () => store.unindexedLog('t', []),
      countRecords: () => store.countRecords('t', 'idempotency'),
      listExpired: () => store.listExpired({ kind: 'token', before: now, limit: 10 }),
      dump: () => store.dump(),
      close: () => store.close(),
    }
    for (const call of Object.values(calls)) await call()
    expect(Object.fromEntries(CONTRACT_METHODS.map((name) => [name, inner.calls.get(name)]))).toEqual(
      Object.fromEntries(CONTRACT_METHODS.map((name) => [name, 1])),
    )
  })
})

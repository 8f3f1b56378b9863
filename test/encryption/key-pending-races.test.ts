/**
 * The re-encryption pass re-seals kept idempotency answers and open transactions' staged writes
 * with guarded writes: a change that lands between the pass's read and its write wins, and the
 * pass neither overwrites it nor brings back a record deleted meanwhile.
 */
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import type { IdempotencyRecord } from '../../src/kernel/index.js'
import { delegatingStore, type Store } from '../../src/store/index.js'
import { pendingVersions } from './key-pending.js'

/** A memory store whose `listIdempotency`, `listStaged`, `listTokenIntents` and `listProxies` each run their hook (once, when set) after reading. */
function hookedStore() {
  const inner = memoryStore()
  const hooks: {
    idempotency?: () => Promise<void>
    staged?: () => Promise<void>
    proxies?: () => Promise<void>
    intents?: () => Promise<void>
  } = {}
  const fire = async (name: keyof typeof hooks) => {
    const run = hooks[name]
    delete hooks[name]
    if (run) await run()
  }
  const store: Store = delegatingStore(inner, {
    async listIdempotency(t, q) {
      const page = await inner.listIdempotency(t, q)
      await fire('idempotency')
      return page
    },
    async listStaged(t, tx, q) {
      const page = await inner.listStaged(t, tx, q)
      await fire('staged')
      return page
    },
    async listTokenIntents(t, q) {
      const page = await inner.listTokenIntents(t, q)
      await fire('intents')
      return page
    },
    async listProxies(t, q) {
      const page = await inner.listProxies(t, q)
      await fire('proxies')
      return page
    },
  })
  return { inner, store, hooks }
}

async function vault(store: Store) {
  const clock = manualClock('2030-01-01T00:00:00Z')
  const service = createService({ store, clock, runner: null, masterKey: randomBytes(32) })
  const tenant = await service.admin.createTenant({ name: 't' })
  const permissions = ['token:create', 'token:read', 'token:update'] as const
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'm',
    type: 'private',
    permissions: [...permissions, 'token-intent:create'],
    rules: [
      { description: 'all', priority: 1, container: '/', transform: 'reveal', permissions: [...permissions] },
    ],
  })
  const rotateLate = async () => {
    await service.admin.rotateDataKey({ tenantId: tenant.id })
    clock.advance(60_000)
  }
  return { service, tenantId: tenant.id, key, rotateLate }
}

describe('re-sealing kept answers and staged writes is guarded', () => {
  it('a staging that lands between the pass reading a staged write and writing it wins; the pass reads the transaction again', async () => {
    const { store, hooks } = hookedStore()
    const { service, tenantId, key, rotateLate } = await vault(store)
    const client = service.connect(key)
    await client.tokens.create({ id: 'a', type: 'token', data: 'committed' })
    const tx = await client.transactions.create()
    const inTx = service.connect(key, { transactionId: tx.id })
    await inTx.tokens.update('a', { data: 'staged first' })
    await inTx.tokens.create({ id: 'b', type: 'token', data: 'staged b' })
    await rotateLate()
    hooks.staged = async () => {
      await inTx.tokens.update('a', { data: 'staged concurrently' })
    }
    const progress = await service.admin.reencrypt({ tenantId, batchSize: 10 })
    expect(hooks.staged).toBeUndefined()
    expect(progress.versions).toEqual([2])
    expect(await pendingVersions(store, tenantId)).toEqual({ answers: [], staged: [2, 2], intents: [] })
    expect((await inTx.tokens.get('a')).data).toBe('staged concurrently')
    await client.transactions.commit(tx.id)
    expect((await client.tokens.get('a')).data).toBe('staged concurrently')
    expect((await client.tokens.get('b')).data).toBe('staged b')
    await service.close()
  })

  it('a commit that lands between the pass reading a staged write and writing it wins; no staged record comes back', async () => {
    const { store, hooks } = hookedStore()
    const { service, tenantId, key, rotateLate } = await vault(store)
    const client = service.connect(key)
    const tx = await client.transactions.create()
    const inTx = service.connect(key, { transactionId: tx.id })
    await inTx.tokens.create({ id: 'c', type: 'token', data: 'staged c' })
    await rotateLate()
    hooks.staged = async () => {
      await client.transactions.commit(tx.id)
    }
    const progress = await service.admin.reencrypt({ tenantId, batchSize: 10 })
    expect(hooks.staged).toBeUndefined()
    expect(progress.versions).toEqual([2])
    expect((await store.dump()).staged).toEqual([])
    expect((await client.tokens.get('c')).data).toBe('staged c')
    await service.close()
  })

  it('an idempotency record deleted or claimed anew between the pass reading it and writing it is not overwritten', async () => {
    const { inner, store, hooks } = hookedStore()
    const { service, tenantId, key, rotateLate } = await vault(store)
    await service.connect(key, { idempotencyKey: 'gone' }).tokens.create({ type: 'token', data: 1 })
    await service.connect(key, { idempotencyKey: 'taken' }).tokens.create({ type: 'token', data: 2 })
    const [gone, taken] = (await inner.dump()).idempotency as [IdempotencyRecord, IdempotencyRecord]
    await rotateLate()
    const { answer: _answer, ...rest } = taken
    const retaken: IdempotencyRecord = { ...rest, state: 'pending', claim: 'another claim' }
    hooks.idempotency = async () => {
      await inner.write({
        ops: [
          { op: 'idempotency.delete', tenant_id: tenantId, id: gone.id },
          { op: 'idempotency.put', record: retaken },
        ],
      })
    }
    const progress = await service.admin.reencrypt({ tenantId, batchSize: 10 })
    expect(hooks.idempotency).toBeUndefined()
    expect(progress.versions).toEqual([2])
    expect((await inner.dump()).idempotency).toEqual([retaken])
    await service.close()
  })

  it("a proxy's change that lands between the pass reading the proxy and writing it wins", async () => {
    const { store, hooks } = hookedStore()
    const { service, tenantId, rotateLate } = await vault(store)
    const management = await service.admin.createApplication({
      tenantId,
      name: 'p',
      type: 'management',
      permissions: ['proxy:create', 'proxy:read', 'proxy:update'],
    })
    const admin = service.connect(management.key)
    const proxy = await admin.proxies.create({
      name: 'p',
      destination_url: 'https://api.example.test',
      configuration: { SECRET: 'before' },
    })
    await rotateLate()
    hooks.proxies = async () => {
      await admin.proxies.patch(proxy.id, { configuration: { SECRET: 'concurrent' } })
    }
    const progress = await service.admin.reencrypt({ tenantId, batchSize: 10 })
    expect(hooks.proxies).toBeUndefined()
    expect((await admin.proxies.get(proxy.id)).configuration).toEqual({ SECRET: 'concurrent' })
    // The change was sealed under the current version: nothing holds version 1 any more.
    expect(progress.versions).toEqual([2])
    await service.close()
  })

  it('a token intent converted between the pass reading it and writing it is not brought back', async () => {
    const { store, hooks } = hookedStore()
    const { service, tenantId, key, rotateLate } = await vault(store)
    const client = service.connect(key)
    const intent = await client.tokenIntents.create({ type: 'token', data: { intended: 1 } })
    await rotateLate()
    let converted = ''
    hooks.intents = async () => {
      converted = (await client.tokens.create({ token_intent_id: intent.id })).id
    }
    const progress = await service.admin.reencrypt({ tenantId, batchSize: 10 })
    expect(hooks.intents).toBeUndefined()
    expect(progress.versions).toEqual([2])
    expect((await store.dump()).token_intents).toEqual([])
    expect((await client.tokens.get(converted)).data).toEqual({ intended: 1 })
    await service.close()
  })
})

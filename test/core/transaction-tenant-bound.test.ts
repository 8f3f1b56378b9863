/**
 * What all of one tenant's open transactions may hold staged together (`maxStagedCharsPerTenant`,
 * 64 MiB of token JSON by default), on the memory, file and PostgreSQL stores: the bound stages, one
 * character past it answers 429 and stages nothing, an ended transaction frees its share, staged
 * deletes and other tenants go on, and racing writes never pass it.
 */
import type pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { postgresStore } from '../../adapters/postgres/index.js'
import { createService, manualClock } from '../../entry/index.js'
import type { Store } from '../../src/store/contract.js'
import { tempDir } from '../file/helpers.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from '../postgres/database.js'
import { keyMaker, tenantWithClient } from '../support/tenants.js'
import { failure, setup } from './setup.js'

const STORES: [string, () => Promise<Store>][] = [
  ['memory', async () => memoryStore()],
  ['file', async () => fileStore({ path: await tempDir(), durability: 'none' })],
]

const MiB = 1024 * 1024

/**
 * The two tests, on the stores `makeStore` makes, each within `timeout` ms (PostgreSQL stages its
 * 64 MiB in 26–36 s alone, and has met 60 s beside the rest of the suite).
 */
function boundTests(makeStore: () => Promise<Store>, timeout = 60_000): void {
  it(
    'hold 67 108 864 characters staged together; one more answers 429 and stages nothing',
    async () => {
      const { client, service, full, store, tenant } = await setup({ store: await makeStore() })
      const held = () => store.countRecords(tenant.id, 'transaction.staged')
      const open = async () => {
        const tx = await client.transactions.create()
        return { tx, inTx: service.connect(full.key, { transactionId: tx.id }) }
      }
      // The staged JSON of a token with `n` characters of data is `n` plus an overhead that is fixed
      // for long data (short data carries a search term too): each fill ends with a long token.
      const first = await open()
      await first.inTx.tokens.create({ type: 'token', data: 'x'.repeat(MiB) })
      const overhead = (await held()) - MiB
      const fill = async (inTx: typeof first.inTx, upTo: number) => {
        while (upTo - (await held()) > 3 * MiB)
          await inTx.tokens.create({ type: 'token', data: 'x'.repeat(MiB) })
        await inTx.tokens.create({ type: 'token', data: 'x'.repeat(upTo - (await held()) - overhead) })
        expect(await held()).toBe(upTo)
      }
      // What a token of 1000 characters stages, measured in a transaction rolled back.
      const probe = await open()
      await probe.inTx.tokens.create({ type: 'token', data: 'x'.repeat(1000) })
      const small = (await held()) - MiB - overhead
      await client.transactions.rollback(probe.tx.id)
      await fill(first.inTx, 16_777_216)
      const rest = [await open(), await open(), await open()]
      await fill(rest[0]!.inTx, 2 * 16_777_216)
      await fill(rest[1]!.inTx, 3 * 16_777_216)
      // The fourth stops short by that token: a fifth transaction stages it, and not one character more.
      await fill(rest[2]!.inTx, 4 * 16_777_216 - small)
      const fifth = await open()
      const before = await store.dump()
      const past = await failure(fifth.inTx.tokens.create({ type: 'token', data: 'x'.repeat(1001) }))
      expect(past.code).toBe('too_many_requests')
      expect(past.message).toContain('open transactions')
      expect(await store.dump()).toEqual(before)
      await fifth.inTx.tokens.create({ type: 'token', data: 'x'.repeat(1000) })
      expect(await held()).toBe(67_108_864)
      expect((await failure(fifth.inTx.tokens.create({ type: 'token', data: '' }))).code).toBe(
        'too_many_requests',
      )
      // A commit frees its transaction's share.
      await client.transactions.commit(first.tx.id)
      expect(await held()).toBe(67_108_864 - 16_777_216)
      await fifth.inTx.tokens.create({ type: 'token', data: 'x'.repeat(MiB) })
      for (const { tx } of [...rest, fifth]) await client.transactions.rollback(tx.id)
      expect(await held()).toBe(0)
    },
    timeout,
  )

  it(
    'keeps staging deletes and other tenants at the bound; expiry frees a share; racing writes never pass it',
    async () => {
      const bound = 20_000
      const store = await makeStore()
      const clock = manualClock('2030-01-01T00:00:00.000Z')
      const masterKey = Buffer.alloc(32, 0x54)
      const service = createService({ store, clock, runner: null, masterKey, maxStagedCharsPerTenant: bound })
      const tenant = await service.admin.createTenant({ name: 'mine' })
      const key = await keyMaker(service, tenant.id)('private', [
        'token:create',
        'token:read',
        'token:delete',
      ])
      const client = service.connect(key)
      const held = () => store.countRecords(tenant.id, 'transaction.staged')
      const inTx = async () => {
        const tx = await client.transactions.create()
        return { tx, client: service.connect(key, { transactionId: tx.id }) }
      }
      const kept = await client.tokens.create({ type: 'token', data: 'kept' })
      const a = await inTx()
      await a.client.tokens.create({ type: 'token', data: 'x'.repeat(bound - 2_000) })
      const past = await failure(a.client.tokens.create({ type: 'token', data: 'x'.repeat(3_000) }))
      expect(past.code).toBe('too_many_requests')
      // A delete stages nothing to hold: it goes on at the bound.
      await a.client.tokens.delete(kept.id)
      // Another tenant stages as it likes.
      const other = await tenantWithClient(service, 'other')
      const otherTx = await other.client.transactions.create()
      const inOther = service.connect(other.key, { transactionId: otherTx.id })
      await inOther.tokens.create({ type: 'token', data: 'y'.repeat(bound - 2_000) })
      await other.client.transactions.commit(otherTx.id)
      // Twelve writes of 400 characters race for the room left: they never pass the bound.
      const b = await inTx()
      const racing = await Promise.allSettled(
        Array.from({ length: 12 }, () => b.client.tokens.create({ type: 'token', data: 'z'.repeat(400) })),
      )
      expect(racing.some((r) => r.status === 'fulfilled')).toBe(true)
      expect(racing.some((r) => r.status === 'rejected')).toBe(true)
      expect(await held()).toBeLessThanOrEqual(bound)
      // Once A expires and the sweep ends it, its share is free.
      clock.advance(60 * 60_000 + 1)
      await service.admin.sweep()
      expect(await held()).toBe(0)
      const c = await inTx()
      await c.client.tokens.create({ type: 'token', data: 'x'.repeat(bound - 2_000) })
      await client.transactions.commit(c.tx.id)
      // A's staged delete ended with it: the token is still there.
      expect((await client.tokens.get(kept.id)).id).toBe(kept.id)
      await service.close()
    },
    timeout,
  )
}

describe.each(STORES)("a tenant's open transactions on the %s store", (_name, makeStore) =>
  boundTests(makeStore),
)

describePostgres("a tenant's open transactions on PostgreSQL", (url) => {
  let pool: pg.Pool
  const schemas: string[] = []
  beforeAll(() => {
    pool = testPool(url, 10)
  })
  afterAll(async () => {
    await dropSchemas(pool, schemas)
    await pool.end()
  })
  boundTests(async () => {
    const schema = freshSchema()
    schemas.push(schema)
    return postgresStore({ pool, schema })
  }, 180_000)
})

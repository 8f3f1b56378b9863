import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { postgresStore } from '../../adapters/postgres/index.js'
import { createService, manualClock } from '../../entry/index.js'
import type { Store } from '../../src/store/contract.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from '../postgres/database.js'

/** A service on `raw` whose tenants keep at most 50 entries, and a key that creates tokens. */
async function setup(raw: Store) {
  const clock = manualClock(new Date('2030-01-01T00:00:00.000Z'))
  const service = createService({
    store: raw,
    clock,
    runner: null,
    masterKey: randomBytes(32),
    maxLogEntriesPerTenant: 50,
  })
  const tenant = await service.admin.createTenant({ name: 'acme' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'writer',
    type: 'private',
    permissions: ['token:create'],
  })
  const client = service.connect(key)
  const count = () => raw.countRecords(tenant.id, 'log')
  /** Creates tokens one by one until the tenant holds `n` entries (each create logs one). */
  const fillTo = async (n: number) => {
    while ((await count()) < n) await client.tokens.create({ type: 'token', data: 'x' })
  }
  const oldest = async () => (await raw.listLogs(tenant.id, { order: 'oldest', limit: 1 }))[0]!
  return { service, tenant, clock, count, fillTo, oldest }
}

describe('audit log: entries per tenant', () => {
  it('keeps 50 entries through a sweep, and past 50 the sweep removes the oldest; verification holds', async () => {
    const { service, tenant, count, fillTo, oldest } = await setup(memoryStore())
    await fillTo(50)
    expect(await count()).toBe(50)
    const first = await oldest()
    await service.admin.sweepLogs()
    expect(await count()).toBe(50)
    expect((await oldest()).id).toBe(first.id)
    await fillTo(51)
    const swept = await service.admin.sweepLogs()
    // The writer's first retention mark takes the place of a removed entry: two go to make room.
    expect(swept.removed).toBe(2)
    // The sweep logs what it removed: one entry of its own, so 51 again until the next sweep.
    expect(await count()).toBe(51)
    // With the mark in place, what goes is what is past the bound: 52 - 50.
    await fillTo(52)
    expect((await service.admin.sweepLogs()).removed).toBe(2)
    expect(await count()).toBe(51)
    expect((await oldest()).id).not.toBe(first.id)
    expect(await service.admin.verifyLogs({ tenantId: tenant.id })).toMatchObject({ ok: true })
  })

  it('counts entries on the file store in their own write transaction', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tv-log-bound-'))
    try {
      const store = await fileStore({ path: dir })
      const { service, count, fillTo } = await setup(store)
      await fillTo(51)
      expect(await count()).toBe(51)
      // Two: the writer's first retention mark takes one removed entry's place.
      expect((await service.admin.sweepLogs()).removed).toBe(2)
      expect(await count()).toBe(51)
      await service.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)
})

describePostgres('audit log: entries per tenant on PostgreSQL', (url) => {
  const pool = testPool(url)
  const schemas: string[] = []
  afterAll(async () => {
    await dropSchemas(pool, schemas)
    await pool.end()
  })

  it('counts entries by trigger in the write, and past 50 the sweep removes the oldest', async () => {
    const schema = freshSchema()
    schemas.push(schema)
    const { service, tenant, count, fillTo } = await setup(await postgresStore({ pool, schema }))
    await fillTo(51)
    expect(await count()).toBe(51)
    // Two: the writer's first retention mark takes one removed entry's place.
    expect((await service.admin.sweepLogs()).removed).toBe(2)
    expect(await count()).toBe(51)
    expect(await service.admin.verifyLogs({ tenantId: tenant.id })).toMatchObject({ ok: true })
  }, 120_000)
})

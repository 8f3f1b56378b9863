import { randomBytes } from 'node:crypto'
import type pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

/**
 * What the re-encryption sweep's writes cost PostgreSQL: its re-seals and place (`deferSync`)
 * commit without waiting for the WAL flush, the retirement after them waits for it (and so flushes
 * theirs).
 */
describePostgres('postgres store: the re-encryption sweep writes', (url) => {
  let pool: pg.Pool
  const schema = freshSchema()
  const issued: pg.QueryConfig[] = []
  beforeAll(() => {
    pool = testPool(url)
  })
  afterAll(async () => {
    await dropSchemas(pool, [schema])
    await pool.end()
  })

  it('commits the re-seals unsynced and the retirement after them synced', async () => {
    const recording = Object.create(pool) as pg.Pool
    recording.query = ((config: pg.QueryConfig) => {
      issued.push(config)
      return pool.query(config)
    }) as pg.Pool['query']
    const clock = manualClock('2030-01-01T00:00:00.000Z')
    const service = createService({
      store: await postgresStore({ pool: recording, schema }),
      clock,
      masterKey: randomBytes(32),
      runner: null,
    })
    try {
      const tenant = await service.admin.createTenant({ name: 't' })
      const { key } = await service.admin.createApplication({
        tenantId: tenant.id,
        name: 'p',
        type: 'private',
        permissions: ['token:create', 'token:read', 'token:update'],
      })
      const client = service.connect(key)
      for (let i = 0; i < 20; i++)
        await client.tokens.create({ type: 'token', data: i, metadata: { n: String(i) } })
      await service.admin.rotateDataKey({ tenantId: tenant.id })
      clock.advance(31_000)
      const unsynced = (q: pg.QueryConfig) => q.text.includes("set_config('synchronous_commit', 'off', true)")
      const writes = () => issued.filter((q) => q.text.includes('tv_write('))
      issued.length = 0
      const done = await service.admin.reencrypt({ tenantId: tenant.id, batchSize: 50 })
      expect(done.finished).toBe(true)
      expect(done.versions).toEqual([2])
      // 20 tokens: three chunks' re-seals, unsynced; the reservation before them and the
      // retirement after them synced.
      const reseals = writes().filter((q) => JSON.stringify(q.values).includes('token.unchanged'))
      expect(reseals).toHaveLength(3)
      expect(reseals.filter(unsynced)).toHaveLength(3)
      const last = writes().at(-1)!
      expect(JSON.stringify(last.values)).toContain('tenant.put')
      expect(unsynced(last)).toBe(false)
    } finally {
      await service.close()
    }
  })
})

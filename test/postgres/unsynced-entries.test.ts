import { randomBytes } from 'node:crypto'
import type pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

/**
 * A write of audit entries only (a read's) commits with `synchronous_commit` off for its own
 * transaction; a write that changes data (with its entries) keeps the server's setting
 * (docs/audit-log.md, "What an entry survives").
 */
describePostgres('postgres store: read entries without waiting for the WAL flush', (url) => {
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

  it("turns synchronous_commit off in a read's entry write only, for that transaction alone", async () => {
    const recording = Object.create(pool) as pg.Pool
    recording.query = ((config: pg.QueryConfig) => {
      issued.push(config)
      return pool.query(config)
    }) as pg.Pool['query']
    const service = createService({
      store: await postgresStore({ pool: recording, schema }),
      clock: manualClock('2030-01-01T00:00:00.000Z'),
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
      const token = await client.tokens.create({ type: 'token', data: 'warm' })
      const unsynced = (q: pg.QueryConfig) => q.text.includes("set_config('synchronous_commit', 'off', true)")
      const writes = () =>
        issued.filter((q) => q.text.includes('tv_write') || /INSERT INTO \S+\.logs\b/.test(q.text))

      issued.length = 0
      await client.tokens.update(token.id, { data: 'b' })
      expect(writes()).toHaveLength(1)
      expect(writes().filter(unsynced)).toEqual([])

      issued.length = 0
      await client.tokens.get(token.id)
      expect(writes()).toHaveLength(1)
      expect(writes().filter(unsynced)).toHaveLength(1)
      // Entries only: one INSERT of them, not a call of the write function.
      expect(writes()[0]!.text).not.toContain('tv_write')
    } finally {
      await service.close()
    }
    // The setting is the transaction's: inside the statement it is off, after it the server's again.
    const client = await pool.connect()
    try {
      const inside = await client.query(
        "SELECT set_config('synchronous_commit', 'off', true) AS s, current_setting('synchronous_commit') AS now",
      )
      expect(inside.rows[0].now).toBe('off')
      const after = await client.query("SELECT current_setting('synchronous_commit') AS now")
      expect(after.rows[0].now).not.toBe('off')
    } finally {
      client.release()
    }
  })
})

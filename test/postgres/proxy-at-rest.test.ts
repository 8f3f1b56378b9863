/**
 * A pre-configured proxy's configuration is never in the clear in PostgreSQL: a `pg_dump` of the
 * store's schema holds no trace of a canary secret (nor of its base64), and the service reads it back.
 */
import { execFileSync } from 'node:child_process'
import { expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { describePostgres, freshSchema, pgProgram, testPool } from './database.js'

const CANARY = 'canary-7be1c4-proxy-configuration-pg'

describePostgres('proxy configuration at rest (PostgreSQL)', (url) => {
  it('a pg_dump of the schema holds no trace of the canary; the service reads it back', async () => {
    const pool = testPool(url, 2)
    const schema = freshSchema()
    try {
      const store = await postgresStore({ pool, schema })
      const service = createService({
        store,
        clock: manualClock(),
        runner: null,
        masterKey: Buffer.alloc(32, 9),
      })
      const tenant = await service.admin.createTenant({ name: 't' })
      const { key } = await service.admin.createApplication({
        tenantId: tenant.id,
        name: 'm',
        type: 'management',
        permissions: ['proxy:create', 'proxy:read'],
      })
      const client = service.connect(key)
      const made = await client.proxies.create({
        name: 'p',
        destination_url: 'https://api.example.test',
        configuration: { SECRET: CANARY },
      })
      expect((await client.proxies.get(made.id)).configuration).toEqual({ SECRET: CANARY })
      const binary = pgProgram('pg_dump')
      expect(binary, 'pg_dump is installed').toBeDefined()
      const dump = execFileSync(binary!, ['--dbname', url, '--schema', schema], {
        encoding: 'latin1',
        maxBuffer: 64 << 20,
      })
      expect(dump).toContain('api.example.test')
      for (const needle of [CANARY, Buffer.from(CANARY).toString('base64').slice(0, 24)])
        expect(dump.includes(needle), needle).toBe(false)
      await service.close()
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await pool.end()
    }
  }, 60_000)
})

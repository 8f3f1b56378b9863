import { randomBytes } from 'node:crypto'
import type pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { createService, manualClock } from '../../src/index.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

/**
 * Token deduplication across processes: two services, each with its own pool, on one schema, as
 * two server processes would be. Concurrent creates of one duplicate make exactly one token.
 */
describePostgres('deduplicate_token on PostgreSQL, across services', (url) => {
  let pools: pg.Pool[] = []
  const schema = freshSchema()
  beforeAll(() => {
    pools = [testPool(url, 4), testPool(url, 4)]
  })
  afterAll(async () => {
    await dropSchemas(pools[0]!, [schema])
    await Promise.all(pools.map((p) => p.end()))
  })

  it('concurrent creates of one duplicate on two services answer one token; the fingerprint filter finds it', async () => {
    const masterKey = randomBytes(32)
    const clock = manualClock('2030-01-01T00:00:00.000Z')
    const services = await Promise.all(
      pools.map(async (pool) =>
        createService({ store: await postgresStore({ pool, schema }), clock, masterKey, runner: null }),
      ),
    )
    try {
      const [a, b] = services as [(typeof services)[0], (typeof services)[0]]
      const tenant = await a.admin.createTenant({ name: 't' })
      const { key } = await a.admin.createApplication({
        tenantId: tenant.id,
        name: 'p',
        type: 'private',
        permissions: ['token:create', 'token:read'],
      })
      for (const number of ['4242424242424242', '5555555555554444', '4000056655665556']) {
        const body = { type: 'card', data: { number }, deduplicate_token: true }
        const answers = await Promise.all(
          Array.from({ length: 10 }, (_, i) => (i % 2 ? b : a).connect(key).tokens.create(body)),
        )
        expect(new Set(answers.map((t) => t.id)).size).toBe(1)
        expect(answers.filter((t) => t._extras?.deduplicated === false)).toHaveLength(1)
        const listed = await b.connect(key).tokens.listV2({ fingerprint: answers[0]!.fingerprint })
        expect(listed.data.map((t) => t.id)).toEqual([answers[0]!.id])
      }
      const { rows } = await pools[0]!.query(`SELECT count(*)::int AS n FROM "${schema}".tokens`)
      expect(rows[0].n).toBe(3)
    } finally {
      await Promise.all(services.map((s) => s.close()))
    }
  })
})

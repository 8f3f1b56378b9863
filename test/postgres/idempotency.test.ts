import type pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { ServiceError } from '../../entry/index.js'
import { describePostgres, dropSchemas, freshSchema, testPool, twoServices } from './database.js'

/**
 * Idempotency across processes (docs/api/idempotency.mdx): two services, each with its own pool, on
 * one PostgreSQL schema, as two server processes would be. A key is claimed by exactly one of them.
 */
describePostgres('idempotency on PostgreSQL, across services', (url) => {
  let pools: pg.Pool[] = []
  const schema = freshSchema()
  beforeAll(() => {
    pools = [testPool(url, 4), testPool(url, 4)]
  })
  afterAll(async () => {
    await dropSchemas(pools[0]!, [schema])
    await Promise.all(pools.map((p) => p.end()))
  })

  it('concurrent repeats of one request on two services create one token; every success answers it', async () => {
    const { a, b, key, close } = await twoServices(pools, schema)
    try {
      const body = { type: 'token', data: { n: 1 } }
      for (let round = 0; round < 5; round++) {
        const idempotencyKey = `round-${round}`
        const attempts = Array.from({ length: 8 }, (_, i) =>
          (i % 2 ? b : a).connect(key, { idempotencyKey }).tokens.create(body),
        )
        const settled = await Promise.allSettled(attempts)
        const ids = new Set<string>()
        for (const s of settled) {
          if (s.status === 'fulfilled') ids.add(s.value.id)
          else expect((s.reason as ServiceError).code).toBe('conflict')
        }
        expect(ids.size).toBe(1)
        // Once the first is done, both services replay it.
        const [fromA, fromB] = await Promise.all([
          a.connect(key, { idempotencyKey }).tokens.create(body),
          b.connect(key, { idempotencyKey }).tokens.create(body),
        ])
        expect(new Set([fromA.id, fromB.id, ...ids]).size).toBe(1)
      }
      const { rows } = await pools[0]!.query(`SELECT count(*)::int AS n FROM "${schema}".tokens`)
      expect(rows[0].n).toBe(5)
      const kept = await pools[0]!.query(`SELECT doc::text AS doc FROM "${schema}".idempotency`)
      expect(kept.rows).toHaveLength(5)
      for (const row of kept.rows) expect(row.doc).not.toContain('round-')
    } finally {
      await close()
    }
  })
})

import type pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { describePostgres, dropSchemas, freshSchema, testPool, twoServices } from './database.js'

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
    const { a, b, key, close } = await twoServices(pools, schema)
    try {
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
      await close()
    }
  })
})

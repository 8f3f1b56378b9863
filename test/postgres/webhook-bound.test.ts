import { afterAll, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { createTestVault } from '../../testing/index.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

const RECEIVER = 'https://hooks.example.test'

describePostgres('the webhook bound on PostgreSQL', (url) => {
  const schemas: string[] = []
  afterAll(async () => {
    const pool = testPool(url, 1)
    await dropSchemas(pool, schemas)
    await pool.end()
  })

  it('8 concurrent creates on an empty tenant make 5 webhooks (the count.within guard), 3 are 429', async () => {
    const s = freshSchema()
    schemas.push(s)
    const store = await postgresStore({ connectionString: url, schema: s })
    const v = await createTestVault({ store, destinations: { [RECEIVER]: () => new Response(null) } })
    const hooks = v.client('management').webhooks
    const body = (i: number) => ({ name: `h${i}`, url: `${RECEIVER}/in`, events: ['token.created'] })
    const outcomes = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => hooks.create(body(i))))
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(5)
    const refused = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason.code] : []))
    expect(refused).toEqual(['too_many_requests', 'too_many_requests', 'too_many_requests'])
    expect((await hooks.list()).pagination.total_items).toBe(5)
    await v.close()
  }, 120_000)
})

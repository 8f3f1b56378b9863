/**
 * The pending-deliveries bound of webhook events on PostgreSQL: a guard (`count.within`) of the
 * event's own write, so of 5 concurrent token creates at maxPendingDeliveriesPerTenant 3, exactly 3
 * land with their deliveries and 2 answer 429 (see test/webhooks/pending-bound-race.test.ts).
 */
import { afterAll, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { expectBoundKept, raceCreates } from '../webhooks/pending-bound.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

describePostgres('the pending-deliveries bound of webhook events on PostgreSQL', (url) => {
  const schemas: string[] = []
  afterAll(async () => {
    const pool = testPool(url, 1)
    await dropSchemas(pool, schemas)
    await pool.end()
  })

  it('maxPendingDeliveriesPerTenant 3, 5 concurrent creates — 3 made, 2 are 429', async () => {
    const s = freshSchema()
    schemas.push(s)
    expectBoundKept(await raceCreates(await postgresStore({ connectionString: url, schema: s })))
  }, 120_000)
})

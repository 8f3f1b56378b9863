/**
 * Two processes on one PostgreSQL database deliver a tenant's webhook events once between them, and
 * the survivor delivers what a SIGKILLed one held once its claims end (see
 * test/webhooks/two-processes.ts).
 */
import { afterAll, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { twoProcessesDeliverOnce } from '../webhooks/two-processes.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

describePostgres('webhook deliveries from two processes on PostgreSQL', (url) => {
  const schemas: string[] = []
  afterAll(async () => {
    const pool = testPool(url, 1)
    await dropSchemas(pool, schemas)
    await pool.end()
  })

  it('two processes deliver 40 events once between them; after one is SIGKILLed mid-delivery the other delivers its 6 once', async () => {
    const s = freshSchema()
    schemas.push(s)
    const open = () => postgresStore({ connectionString: url, schema: s })
    await twoProcessesDeliverOnce(`pg:${s}`, open, { TOKENVAULT_PG_URL: url })
  }, 180_000)
})

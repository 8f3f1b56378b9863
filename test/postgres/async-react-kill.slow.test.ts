import { afterAll, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { asyncReactSurvivesKill } from '../webhooks/async-react-crash.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

describePostgres('asynchronous reacts on PostgreSQL under SIGKILL', (url) => {
  const schemas: string[] = []
  afterAll(async () => {
    const pool = testPool(url, 1)
    await dropSchemas(pool, schemas)
    await pool.end()
  })

  it('a react accepted by a process SIGKILLed mid-run is run by the next process after its claim', async () => {
    const s = freshSchema()
    schemas.push(s)
    await asyncReactSurvivesKill(`pg:${s}`, () => postgresStore({ connectionString: url, schema: s }))
  }, 120_000)
})

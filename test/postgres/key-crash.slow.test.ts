import { afterAll, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { counterSurvivesKill, sweepSurvivesKill } from '../encryption/key-crash.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

describePostgres('data keys on PostgreSQL under SIGKILL', (url) => {
  const schemas: string[] = []
  const schema = () => {
    const s = freshSchema()
    schemas.push(s)
    return s
  }
  afterAll(async () => {
    const pool = testPool(url, 1)
    await dropSchemas(pool, schemas)
    await pool.end()
  })

  it('the seal counter never goes back: a killed process loses only unused reservations', async () => {
    const s = schema()
    await counterSurvivesKill(`pg:${s}`, () => postgresStore({ connectionString: url, schema: s }))
  }, 120_000)

  it('re-encryption killed midway resumes and ends with every record on the newest version, none lost', async () => {
    const s = schema()
    await sweepSurvivesKill(`pg:${s}`, () => postgresStore({ connectionString: url, schema: s }))
  }, 120_000)
})

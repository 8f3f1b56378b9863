import type pg from 'pg'
import { afterAll, beforeAll } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { nulInputCases } from '../core/nul-input.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

describePostgres('U+0000 in input (PostgreSQL store)', (url) => {
  let pool: pg.Pool
  const schemas: string[] = []
  beforeAll(() => {
    pool = testPool(url)
  })
  afterAll(async () => {
    await dropSchemas(pool, schemas)
    await pool.end()
  })
  nulInputCases(async () => {
    const schema = freshSchema()
    schemas.push(schema)
    return postgresStore({ pool, schema })
  })
})

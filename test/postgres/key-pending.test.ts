import { it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { pendingResealed } from '../encryption/key-pending.js'
import { describePostgres, freshSchema, testPool } from './database.js'

describePostgres(
  'kept idempotency answers and staged transaction writes follow the data-key versions (PostgreSQL)',
  (url) => {
    it('a create repeated and a transaction committed after the old version is retired answer and commit, none left under version 1', async () => {
      const pool = testPool(url, 2)
      const schema = freshSchema()
      try {
        await pendingResealed(await postgresStore({ pool, schema }))
      } finally {
        await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
        await pool.end()
      }
    }, 120_000)
  },
)

import { it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { everyKindResealed } from '../encryption/key-kinds.js'
import { describePostgres, freshSchema, testPool } from './database.js'

describePostgres(
  'every sealed record kind is re-sealed before its old data-key version is retired (PostgreSQL)',
  (url) => {
    it('tokens, reactor and proxy configurations and outbox entries read after the retirement, none left under version 1', async () => {
      const pool = testPool(url, 2)
      const schema = freshSchema()
      try {
        await everyKindResealed(await postgresStore({ pool, schema }))
      } finally {
        await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
        await pool.end()
      }
    }, 120_000)
  },
)

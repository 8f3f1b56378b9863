import type pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { tx } from '../../testing/store/records.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

/**
 * Migration 21 on a schema that held open transactions before it: the tenant's `transaction.staged`
 * count starts at what they staged (ended ones not counted), and moves with them after.
 */
describePostgres('the staged count of a schema migrated with open transactions', (url) => {
  let pool: pg.Pool
  const schema = freshSchema()
  beforeAll(() => {
    pool = testPool(url, 4)
  })
  afterAll(async () => {
    await dropSchemas(pool, [schema])
    await pool.end()
  })

  it('fills the count from the open transactions, then keeps it', async () => {
    const store = await postgresStore({ pool, schema })
    const T = 'tenant-a'
    await store.write({
      ops: [
        { op: 'transaction.put', transaction: tx('o1', { staged_chars: 300 }) },
        { op: 'transaction.put', transaction: tx('o2', { staged_chars: 45 }) },
        { op: 'transaction.put', transaction: tx('c1', { staged_chars: 9000, state: 'committed' }) },
      ],
    })
    await store.close()
    // As a schema before migration 21 was: no trigger, no count, the step not recorded.
    await pool.query(`DROP TRIGGER staged_count ON "${schema}".transactions`)
    await pool.query(`DELETE FROM "${schema}".record_counts WHERE kind = 'transaction.staged'`)
    await pool.query(`DELETE FROM "${schema}".tokenvault_migrations WHERE version = 21`)
    const migrated = await postgresStore({ pool, schema })
    expect(await migrated.countRecords(T, 'transaction.staged')).toBe(345)
    await migrated.write({
      ops: [{ op: 'transaction.put', transaction: tx('o1', { staged_chars: 300, state: 'rolled_back' }) }],
    })
    expect(await migrated.countRecords(T, 'transaction.staged')).toBe(45)
    await migrated.close()
  })
})

import fc from 'fast-check'
import type pg from 'pg'
import { afterAll, beforeAll, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import type { Store } from '../../src/store/contract.js'
import { nameFilter, step } from '../../testing/store/arbitraries.js'
import { expectSameAsModel } from '../../testing/store/observe.js'
import { assertProperty } from '../../testing/store/seed.js'
import { describePostgres, dropSchemas, freshSchema, testPool, truncateAll } from './database.js'

describePostgres('postgres store behaves exactly like the contract model', (url) => {
  let pool: pg.Pool
  let store: Store
  const schema = freshSchema()
  beforeAll(async () => {
    pool = testPool(url)
    // Tables are truncated behind the store's back between runs, as another process would: without
    // the key cache, which trusts a lookup for up to 500 ms, the store must answer at once.
    store = await postgresStore({ pool, schema, keyCacheMs: 0 })
  })
  afterAll(async () => {
    await store?.close()
    await dropSchemas(pool, [schema])
    await pool.end()
  })

  it('on random sequences of batches, purges and reads', async () => {
    await assertProperty(
      fc.asyncProperty(
        fc.array(step, { maxLength: 16 }),
        fc.array(nameFilter, { maxLength: 3 }),
        async (steps, filters) => {
          await truncateAll(pool, schema)
          await expectSameAsModel(store, steps, filters)
        },
      ),
      { numRuns: 80 },
    )
  }, 180_000)
})

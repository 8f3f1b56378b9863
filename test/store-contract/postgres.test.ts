import type pg from 'pg'
import { afterAll } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import type { Store } from '../../src/store/contract.js'
import { storeEquivalence } from '../../testing/store/equivalence.js'
import { storeContract } from '../../testing/store/suite.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from '../postgres/database.js'

describePostgres('postgres store', (url) => {
  let pool: pg.Pool | undefined
  const schemas = new Map<Store, string>()
  afterAll(async () => {
    if (!pool) return
    await dropSchemas(pool, [...new Set(schemas.values())])
    await pool.end()
  })
  const open = async (schema: string) => {
    pool ??= testPool(url)
    const store = await postgresStore({ pool, schema })
    schemas.set(store, schema)
    return store
  }
  const harness = {
    name: 'postgres',
    // Each store gets a schema of its own in the test database.
    open: () => open(freshSchema()),
    reopen: async (store: Store) => {
      await store.close()
      return open(schemas.get(store)!)
    },
  }
  storeContract(harness)
  // The model-based equivalence harness, reopening the store every few steps.
  storeEquivalence({ ...harness, runs: 10 })
})

/**
 * A write the database answers with a serialization failure (40001) or a deadlock (40P01) is run
 * again, up to 10 tries in all (docs/server.md): nine failures and the tenth try succeeds; ten
 * failures and the write fails, with no eleventh try. The failures are injected on the pool, in
 * front of a real database.
 */
import type pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import type { StoredToken } from '../../src/kernel/types.js'
import type { Store } from '../../src/store/contract.js'
import { TIMES } from '../../testing/store/arbitraries.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

const token = (id: string): StoredToken => ({
  id,
  tenant_id: 'T',
  type: 'token',
  data: { n: id },
  containers: ['/a/'],
  metadata: {},
  created_by: 'a',
  created_at: TIMES[0]!,
})

describePostgres('serialization failures are retried, 10 tries in all', (url) => {
  let pool: pg.Pool
  let store: Store
  let schema: string
  /** How many write statements to fail next, with which SQLSTATE, and how many were sent. */
  const inject = { failures: 0, code: '40001', sent: 0 }

  beforeAll(async () => {
    pool = testPool(url, 4)
    const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>
    ;(pool as unknown as { query: unknown }).query = (config: unknown, ...rest: unknown[]) => {
      const text = typeof config === 'string' ? config : ((config as { text?: string }).text ?? '')
      const write = text.includes('.tv_write') || text.includes('pg_advisory_xact_lock_shared')
      if (write) inject.sent++
      if (write && inject.failures > 0) {
        inject.failures--
        return Promise.reject(Object.assign(new Error('could not serialize access'), { code: inject.code }))
      }
      return query(config, ...rest)
    }
    schema = freshSchema()
    store = await postgresStore({ pool, schema })
  })
  afterAll(async () => {
    await store.close()
    await dropSchemas(pool, [schema])
    await pool.end()
  })

  const create = (id: string) =>
    store.write({
      checks: [{ check: 'token.absent', tenant_id: 'T', id }],
      ops: [{ op: 'token.put', token: token(id) }],
    })
  const update = (id: string) =>
    store.write({
      checks: [{ check: 'token.present', tenant_id: 'T', id }],
      ops: [{ op: 'token.put', token: { ...token(id), data: { n: 'updated' } } }],
    })

  for (const code of ['40001', '40P01'])
    it(`${code}: nine failures, then the tenth try writes; ten failures fail the write after 10 tries`, async () => {
      Object.assign(inject, { failures: 9, code, sent: 0 })
      expect(await create(`ok-${code}`)).toEqual({ ok: true })
      expect(inject.sent).toBe(10)
      expect((await store.getToken('T', `ok-${code}`))?.data).toEqual({ n: `ok-${code}` })

      Object.assign(inject, { failures: 10, code, sent: 0 })
      await expect(create(`lost-${code}`)).rejects.toBeDefined()
      expect(inject.sent).toBe(10)
      expect(await store.getToken('T', `lost-${code}`)).toBeNull()

      // The same for a write through `tv_write` (an update guarded by the token's existence).
      Object.assign(inject, { failures: 9, code, sent: 0 })
      expect(await update(`ok-${code}`)).toEqual({ ok: true })
      expect(inject.sent).toBe(10)
      Object.assign(inject, { failures: 10, code, sent: 0 })
      await expect(update(`ok-${code}`)).rejects.toBeDefined()
      expect(inject.sent).toBe(10)
      inject.failures = 0
    })
})

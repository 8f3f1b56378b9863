import pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { MIGRATIONS } from '../../adapters/postgres/migrations.js'
import { describePostgres, dropSchemas, freshSchema, testPool, waitingForLock } from './database.js'

const T = 'tenant-a'
const NOW = '2030-01-01T00:00:00.000Z'
const token = (id: string) => ({
  id,
  tenant_id: T,
  type: 'token',
  data: id,
  containers: ['/general/high/'],
  metadata: {},
  created_by: 'app',
  created_at: NOW,
})

describePostgres('postgres store lifecycle', (url) => {
  let pool: pg.Pool
  const schemas: string[] = []
  const schema = () => {
    const s = freshSchema()
    schemas.push(s)
    return s
  }
  beforeAll(() => {
    pool = testPool(url)
  })
  afterAll(async () => {
    await dropSchemas(pool, schemas)
    await pool.end()
  })

  it('migrates once when four processes open the same new schema at once, and again is a no-op', async () => {
    const s = schema()
    const pools = Array.from({ length: 4 }, () => testPool(url, 2))
    try {
      const stores = await Promise.all(pools.map((p) => postgresStore({ pool: p, schema: s })))
      await Promise.all(stores.map((store) => store.close()))
      const again = await postgresStore({ pool, schema: s })
      await again.close()
      const { rows } = await pool.query(`SELECT version FROM "${s}".tokenvault_migrations ORDER BY version`)
      expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version))
    } finally {
      await Promise.all(pools.map((p) => p.end()))
    }
  })

  it('refuses a schema migrated by a newer version', async () => {
    const s = schema()
    await (await postgresStore({ pool, schema: s })).close()
    await pool.query(`INSERT INTO "${s}".tokenvault_migrations (version, name) VALUES (9999, 'future')`)
    await expect(postgresStore({ pool, schema: s })).rejects.toThrow(/newer/)
  })

  it("uses the pool's current schema by default", async () => {
    const s = schema()
    await pool.query(`CREATE SCHEMA "${s}"`)
    const scoped = new pg.Pool({ connectionString: url, max: 2, options: `-c search_path=${s}` })
    try {
      const store = await postgresStore({ pool: scoped })
      await store.write({ ops: [{ op: 'token.put', token: token('a') }] })
      await store.close()
      const { rows } = await pool.query(`SELECT id FROM "${s}".tokens`)
      expect(rows).toEqual([{ id: 'a' }])
    } finally {
      await scoped.end()
    }
  })

  it('close waits for calls in flight, leaves a pool it was given open, and refuses later calls', async () => {
    const store = await postgresStore({ pool, schema: schema() })
    const writing = store.write({ ops: [{ op: 'token.put', token: token('a') }] })
    await store.close()
    await expect(writing).resolves.toEqual({ ok: true })
    await expect(store.getToken(T, 'a')).rejects.toThrow(/closed/)
    await expect(store.write({ ops: [] })).rejects.toThrow(/closed/)
    expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }])
  })

  it('creates and ends its own pool from a connection string', async () => {
    const s = schema()
    const store = await postgresStore({ connectionString: url, max: 2, schema: s })
    await store.write({ ops: [{ op: 'token.put', token: token('a') }] })
    expect((await store.getToken(T, 'a'))?.data).toBe('a')
    await store.close()
    await expect(store.getToken(T, 'a')).rejects.toThrow(/closed/)
  })

  it('runs writes of different records in parallel, even of one tenant, and of one record one at a time', async () => {
    const s = schema()
    const store = await postgresStore({ pool, schema: s })
    // Hold the lock of token a from outside: a write of token a waits, one of token b (same tenant) does not.
    const { LockKeys } = await import('../../adapters/postgres/locking.js')
    const holder = await pool.connect()
    try {
      await holder.query('BEGIN')
      const lockOfA = new LockKeys(s).key(`token\u0000${T}\u0000a`)
      await holder.query(`SELECT pg_advisory_xact_lock(${lockOfA})`)
      let aDone = false
      const a = store.write({ ops: [{ op: 'token.put', token: token('a') }] }).then((r) => {
        aDone = true
        return r
      })
      const b = await store.write({ ops: [{ op: 'token.put', token: token('b') }] })
      expect(b).toEqual({ ok: true })
      // The write of a waits for a's lock in the database.
      await waitingForLock(pool, lockOfA)
      expect(aDone).toBe(false)
      await holder.query('COMMIT')
      await expect(a).resolves.toEqual({ ok: true })
    } finally {
      holder.release()
      await store.close()
    }
  })
})

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

  it('a schema at version 1 gains its per-tenant counts in step 2, counting what it holds', async () => {
    const s = schema()
    const store = await postgresStore({ pool, schema: s })
    const idem = (id: string) => ({
      tenant_id: T,
      id,
      state: 'done' as const,
      claim: 'c',
      request: 'r',
      created_at: NOW,
      lease_until: NOW,
      expires_at: '2030-01-02T00:00:00.000Z',
    })
    const session = (id: string, state: 'created' | 'authorized') => ({
      id,
      tenant_id: T,
      application_id: 'pub',
      key_hash: `key-${id}`,
      nonce_hash: `nonce-${id}`,
      state,
      permissions: [],
      created_at: NOW,
      expires_at: '2030-01-01T00:03:00.000Z',
    })
    await store.write({
      ops: [
        { op: 'idempotency.put', record: idem('a') },
        { op: 'idempotency.put', record: idem('b') },
        { op: 'session.put', session: session('s1', 'created') },
        { op: 'session.put', session: session('s2', 'authorized') },
      ],
    })
    await store.close()
    // Back to version 1: no counts, no triggers keeping them.
    await pool.query(`DROP TABLE "${s}".record_counts CASCADE;
      DROP TRIGGER idempotency_count ON "${s}".idempotency; DROP TRIGGER session_count ON "${s}".sessions;
      DROP FUNCTION "${s}".idempotency_count(), "${s}".session_count(), "${s}".record_count(text, text, integer);
      DELETE FROM "${s}".tokenvault_migrations WHERE version = 2`)
    const again = await postgresStore({ pool, schema: s })
    try {
      expect(await again.countRecords(T, 'idempotency')).toBe(2)
      expect(await again.countRecords(T, 'session.created')).toBe(1)
      await again.write({ ops: [{ op: 'session.put', session: session('s1', 'authorized') }] })
      expect(await again.countRecords(T, 'session.created')).toBe(0)
    } finally {
      await again.close()
    }
  })

  it('a schema at version 2 gains step 3: one trigger keeps the terms and counts of tokens it held and of new ones; types come from an index', async () => {
    const s = schema()
    // A schema at version 2: steps 1 and 2 applied as they were, two tokens written through their triggers.
    await pool.query(`CREATE SCHEMA "${s}";
      CREATE TABLE "${s}".tokenvault_migrations (version integer PRIMARY KEY, name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now())`)
    for (const m of MIGRATIONS.filter((m) => m.version <= 2)) {
      await pool.query(m.sql(`"${s}"`))
      await pool.query(`INSERT INTO "${s}".tokenvault_migrations (version, name) VALUES ($1, $2)`, [
        m.version,
        m.name,
      ])
    }
    for (const id of ['a', 'b'])
      await pool.query(`INSERT INTO "${s}".tokens (tenant_id, id, type, doc) VALUES ($1, $2, 'token', $3)`, [
        T,
        id,
        JSON.stringify({ ...token(id), containers: ['/old/'] }),
      ])
    const store = await postgresStore({ pool, schema: s })
    try {
      const { rows } = await pool.query(`SELECT version FROM "${s}".tokenvault_migrations ORDER BY version`)
      expect(rows.map((r) => r.version)).toEqual([1, 2, 3])
      const { rows: triggers } = await pool.query(
        `SELECT tgname FROM pg_trigger WHERE tgrelid = '"${s}".tokens'::regclass AND NOT tgisinternal`,
      )
      expect(triggers.map((r) => r.tgname)).toEqual(['token_sync'])
      const total = async () => (await store.listTokens(T, { now: NOW, offset: 0, limit: 0 })).total
      const inContainer = (c: string) =>
        store.findTokenIds(T, { term: { kind: 'container', value: c }, limit: 10 })
      expect(await total()).toBe(2)
      const create = (id: string) => ({
        checks: [{ check: 'token.absent' as const, tenant_id: T, id }],
        ops: [{ op: 'token.put' as const, token: { ...token(id), containers: ['/new/'] } }],
      })
      expect(await store.write(create('c'))).toEqual({ ok: true })
      expect(await store.write(create('a'))).toEqual({ ok: false, failed: create('a').checks[0] })
      expect(await total()).toBe(3)
      await store.write({ ops: [{ op: 'token.put', token: { ...token('a'), containers: ['/new/'] } }] })
      await store.write({ ops: [{ op: 'token.delete', tenant_id: T, id: 'b' }] })
      expect(await total()).toBe(2)
      expect(await inContainer('/old/')).toEqual([])
      expect(await inContainer('/new/')).toEqual(['a', 'c'])
      // Type and fingerprint come from indexes on the tokens now: no term rows of theirs are left.
      expect(await store.findTokenIds(T, { term: { kind: 'type', value: 'token' }, limit: 10 })).toEqual([
        'a',
        'c',
      ])
      const { rows: kinds } = await pool.query(`SELECT DISTINCT kind FROM "${s}".token_terms ORDER BY kind`)
      expect(kinds.map((r) => r.kind)).toEqual(['container'])
    } finally {
      await store.close()
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

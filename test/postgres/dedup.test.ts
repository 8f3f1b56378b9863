import type pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { LockKeys } from '../../adapters/postgres/locking.js'
import type { StoredToken } from '../../src/types.js'
import {
  describePostgres,
  dropSchemas,
  freshSchema,
  testPool,
  twoServices,
  waitingForLock,
} from './database.js'

const T = 'tenant-a'
const NOW = '2030-01-01T00:00:00.000Z'
const token = (id: string, fingerprint: string): StoredToken => ({
  id,
  tenant_id: T,
  type: 'token',
  data: id,
  containers: ['/general/high/'],
  metadata: {},
  fingerprint,
  created_by: 'app',
  created_at: NOW,
})

/**
 * Token deduplication on PostgreSQL: concurrent creates of one duplicate make exactly one token, on
 * one service and on two services (each with its own pool, as two server processes would be) on
 * one schema; and the fingerprint's lock is shared by plain puts, exclusive for a deduplicating one.
 */
describePostgres('deduplicate_token on PostgreSQL', (url) => {
  let pools: pg.Pool[] = []
  const schemas: string[] = []
  const schema = () => {
    const s = freshSchema()
    schemas.push(s)
    return s
  }
  beforeAll(() => {
    pools = [testPool(url, 8), testPool(url, 8)]
  })
  afterAll(async () => {
    await dropSchemas(pools[0]!, schemas)
    await Promise.all(pools.map((p) => p.end()))
  })

  const raceOnce = async (services: 'one' | 'two') => {
    const s = schema()
    const { a, b, key, close } = await twoServices(pools, s)
    try {
      const body = { type: 'card', data: { number: '4242424242424242' }, deduplicate_token: true }
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          (services === 'two' && i % 2 ? b : a).connect(key).tokens.create(body),
        ),
      )
      expect(new Set(answers.map((t) => t.id)).size).toBe(1)
      expect(answers.filter((t) => t._extras?.deduplicated === false)).toHaveLength(1)
      const { rows } = await pools[0]!.query(`SELECT id FROM "${s}".tokens`)
      expect(rows.map((r) => r.id)).toEqual([answers[0]!.id])
    } finally {
      await close()
    }
  }

  it('50 concurrent deduplicating creates of one value on one service answer one token id', async () => {
    await raceOnce('one')
  }, 60_000)

  it('50 concurrent deduplicating creates of one value on two services answer one token id', async () => {
    await raceOnce('two')
  }, 60_000)

  it('concurrent creates of three duplicates on two services answer one token each; the fingerprint filter finds it', async () => {
    const s = schema()
    const { a, b, key, close } = await twoServices(pools, s)
    try {
      for (const number of ['4242424242424242', '5555555555554444', '4000056655665556']) {
        const body = { type: 'card', data: { number }, deduplicate_token: true }
        const answers = await Promise.all(
          Array.from({ length: 10 }, (_, i) => (i % 2 ? b : a).connect(key).tokens.create(body)),
        )
        expect(new Set(answers.map((t) => t.id)).size).toBe(1)
        expect(answers.filter((t) => t._extras?.deduplicated === false)).toHaveLength(1)
        const listed = await b.connect(key).tokens.listV2({ fingerprint: answers[0]!.fingerprint })
        expect(listed.data.map((t) => t.id)).toEqual([answers[0]!.id])
      }
      const { rows } = await pools[0]!.query(`SELECT count(*)::int AS n FROM "${s}".tokens`)
      expect(rows[0].n).toBe(3)
    } finally {
      await close()
    }
  }, 60_000)

  it('plain puts of one fingerprint never wait on each other; a deduplicating create waits for them', async () => {
    const s = schema()
    const store = await postgresStore({ pool: pools[0]!, schema: s })
    // A put of fingerprint `fp` in flight elsewhere: it holds the fingerprint's lock shared.
    const holder = await pools[1]!.connect()
    try {
      await holder.query('BEGIN')
      const key = new LockKeys(s).key(`fingerprint\u0000${T}\u0000fp`)
      await holder.query(`SELECT pg_advisory_xact_lock_shared(${key})`)
      const puts = await Promise.all(
        ['a', 'b', 'c'].map((id) =>
          store.write({
            checks: [{ check: 'token.absent', tenant_id: T, id }],
            ops: [{ op: 'token.put', token: token(id, 'fp') }],
          }),
        ),
      )
      expect(puts).toEqual([{ ok: true }, { ok: true }, { ok: true }])
      let done = false
      const dedup = store
        .write({
          checks: [{ check: 'token.fingerprint_absent', tenant_id: T, fingerprint: 'fp', now: NOW }],
          ops: [{ op: 'token.put', token: token('d', 'fp') }],
        })
        .then((result) => {
          done = true
          return result
        })
      // It waits for the fingerprint's lock, held shared by the put in flight.
      await waitingForLock(pools[0]!, key)
      expect(done).toBe(false)
      await holder.query('COMMIT')
      const result = await dedup
      expect(result.ok).toBe(false)
      expect(result.ok === false && result.failed.check).toBe('token.fingerprint_absent')
    } finally {
      holder.release()
      await store.close()
    }
  })
})

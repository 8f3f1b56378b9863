import type pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import type { StoredToken } from '../../src/kernel/types.js'
import type { Store, WriteResult } from '../../src/store/contract.js'
import type { Check, Op } from '../../src/store/index.js'
import { TIMES } from '../../testing/store/arbitraries.js'
import { describePostgres, dropSchemas, freshSchema, testPool, watchQueries } from './database.js'

const NOW = TIMES[0]!
const stored = (tenant: string, id: string, extra: Partial<StoredToken> = {}): StoredToken => ({
  id,
  tenant_id: tenant,
  type: 'x',
  data: { n: id },
  containers: ['/general/'],
  metadata: {},
  fingerprint: 'same',
  created_by: 'a',
  created_at: NOW,
  ...extra,
})
/** A create as the service sends it: absent and unlocked, then the put. */
const create = (token: StoredToken): { checks: Check[]; ops: Op[] } => ({
  checks: [
    { check: 'token.absent', tenant_id: token.tenant_id, id: token.id },
    { check: 'token.unlocked', tenant_id: token.tenant_id, id: token.id, now: NOW },
  ],
  ops: [{ op: 'token.put', token }],
})

describePostgres('writes of one tenant grouped into one call (tv_write_many)', (url) => {
  let pool: pg.Pool
  let store: Store
  const schemas: string[] = []
  /** The calls of each write statement the store made. */
  const calls = { alone: 0, together: 0 }
  const tokenIds = (tenant: string) => store.findTokenIds(tenant, { limit: 1000 })

  beforeAll(async () => {
    // Four connections: past a tenant's second call in flight, its writes wait and go together.
    pool = testPool(url, 4)
    watchQueries(pool, (text) => {
      if (text.includes('.tv_write_many(')) calls.together++
      else if (text.includes('.tv_write(')) calls.alone++
    })
    const schema = freshSchema()
    schemas.push(schema)
    store = await postgresStore({ pool, schema })
  })
  afterAll(async () => {
    await store.close()
    await dropSchemas(pool, schemas)
    await pool.end()
  })

  it('one write alone goes in one tv_write call', async () => {
    const before = { ...calls }
    expect(await store.write(create(stored('A', 'alone')))).toEqual({ ok: true })
    expect(calls.alone - before.alone).toBe(1)
    expect(calls.together - before.together).toBe(0)
  })

  it('many at once go together, each answered as alone: duplicates fail their token.absent, the rest land', async () => {
    const before = { ...calls }
    // 60 creates of 20 ids, each id three times: exactly one of each id lands.
    const writes = Array.from({ length: 60 }, (_, i) => create(stored('B', `t${i % 20}`)))
    const results = await Promise.all(writes.map((w) => store.write(w)))
    expect(calls.together - before.together).toBeGreaterThan(0)
    const landed = results.filter((r) => r.ok).length
    expect(landed).toBe(20)
    for (const [i, result] of results.entries()) {
      if (!result.ok) expect(result.failed).toEqual(writes[i]!.checks[0])
    }
    expect(await tokenIds('B')).toEqual(Array.from({ length: 20 }, (_, i) => `t${i}`).sort())
  })

  it('a failing compare-and-set in a group fails alone; its neighbours land', async () => {
    const base = stored('C', 'cas')
    expect(await store.write(create(base))).toEqual({ ok: true })
    const stale = { ...base, metadata: { stale: 'yes' } }
    const cas = (n: number): { checks: Check[]; ops: Op[] } => ({
      checks: [{ check: 'token.unchanged', tenant_id: 'C', id: 'cas', token: n === 0 ? base : stale }],
      ops: [{ op: 'token.put', token: { ...base, metadata: { n: String(n) } } }],
    })
    const others = Array.from({ length: 20 }, (_, i) => create(stored('C', `o${i}`)))
    const results: WriteResult[] = await Promise.all([
      ...others.map((w) => store.write(w)),
      store.write(cas(1)),
      store.write(cas(0)),
      store.write(cas(2)),
    ])
    expect(results.slice(0, 20)).toEqual(others.map(() => ({ ok: true })))
    // The stale ones fail on their guard; the one with the current record wins.
    expect(results[20]).toEqual({ ok: false, failed: cas(1).checks[0] })
    expect(results[21]).toEqual({ ok: true })
    expect(results[22]).toEqual({ ok: false, failed: cas(2).checks[0] })
    expect((await store.getToken('C', 'cas'))?.metadata).toEqual({ n: '0' })
  })

  it('a write the database refuses fails alone, whatever group it was in; the others land', async () => {
    const good = Array.from({ length: 20 }, (_, i) => create(stored('D', `g${i}`)))
    // PostgreSQL can't hold U+0000 in text: this write fails with an error, not a guard.
    const bad = create(stored('D', 'bad', { data: { n: 'a\u0000b' } }))
    const results = await Promise.allSettled([...good.map((w) => store.write(w)), store.write(bad)])
    expect(results.slice(0, 20).map((r) => r.status === 'fulfilled' && r.value)).toEqual(
      good.map(() => ({ ok: true })),
    )
    expect(results[20]!.status).toBe('rejected')
    expect(await store.getToken('D', 'bad')).toBeNull()
    expect(await tokenIds('D')).toHaveLength(20)
  })

  it('deduplicating creates of one value, many at once: one lands', async () => {
    const dedup = (id: string): { checks: Check[]; ops: Op[] } => ({
      checks: [
        ...create(stored('E', id)).checks,
        { check: 'token.fingerprint_absent', tenant_id: 'E', fingerprint: 'same', now: NOW },
      ],
      ops: create(stored('E', id)).ops,
    })
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => store.write(dedup(`d${i}`))))
    expect(results.filter((r) => r.ok)).toHaveLength(1)
    expect(await tokenIds('E')).toHaveLength(1)
  })
})

/**
 * Per-tenant bounds on PostgreSQL held shared with a slot (adapters/postgres/count-slots.ts): when
 * a write may go shared (the literal margin of 7 × 64 = 448 and the cap of 64 added a call), and
 * that the bound holds exactly either way — far from it (shared, grouped calls), across the margin
 * (a shared guard fails and the write runs again exclusive), and at it.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { boundsShared, withMargin } from '../../adapters/postgres/count-slots.js'
import { postgresStore } from '../../adapters/postgres/index.js'
import type { OutboxEntry } from '../../src/kernel/index.js'
import type { Check, Op, Store } from '../../src/store/index.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

const TENANT = 'tenant-a'
const NOW = '2030-01-01T00:00:00.000Z'
let ids = 0

/** A pending delivery of `tenant` (each a new entry). */
function entry(tenant = TENANT): OutboxEntry {
  return {
    tenant_id: tenant,
    kind: 'webhook',
    url: 'https://hooks.example.test/in',
    body: '{}',
    id: `e-${String(++ids).padStart(8, '0')}`,
    created_at: NOW,
    state: 'pending',
    due_at: NOW,
    attempts: [],
  } as OutboxEntry
}

const put = (e: OutboxEntry): Op => ({ op: 'outbox.put', entry: e })
const bound = (max: number, tenant = TENANT): Check => ({
  check: 'count.within',
  tenant_id: tenant,
  kind: 'outbox.pending',
  max,
})

describe('when a bounded write may hold its bound shared', () => {
  const write = (max: number, adds: number) => ({
    checks: [bound(max)],
    ops: Array.from({ length: adds }, () => put(entry())),
  })

  it('room of 448 (7 slots × 64) goes shared; 447 does not', () => {
    expect(boundsShared([write(448, 1)])).toBe(true)
    expect(boundsShared([write(447, 1)])).toBe(false)
  })

  it('a call adding 64 goes shared; 65 does not, however its writes split them', () => {
    expect(boundsShared([write(10_000, 64)])).toBe(true)
    expect(boundsShared([write(10_000, 65)])).toBe(false)
    const sixteen = Array.from({ length: 16 }, () => write(10_000, 4))
    expect(boundsShared(sixteen)).toBe(true)
    expect(boundsShared([...sixteen, write(10_000, 1)])).toBe(false)
  })

  it('another tenant’s entries and entries not pending add nothing to the count', () => {
    const other = put(entry('tenant-b'))
    const done = put({ ...entry(), state: 'delivered' } as OutboxEntry)
    const ops = [...Array.from({ length: 64 }, () => put(entry())), other, done]
    expect(boundsShared([{ checks: [bound(10_000)], ops }])).toBe(true)
  })

  it('a write without a bound takes no slot; the webhook bound of 5 is always exclusive', () => {
    expect(boundsShared([{ checks: [], ops: [put(entry())] }])).toBe(false)
    const webhookBound: Check = { check: 'count.within', tenant_id: TENANT, kind: 'webhook', max: 4 }
    expect(boundsShared([{ checks: [webhookBound], ops: [] }])).toBe(false)
  })

  it('a shared guard asks for 448 more room; other guards are sent as they are', () => {
    const absent: Check = { check: 'token.absent', tenant_id: TENANT, id: 't' }
    expect(withMargin([absent, bound(1000)])).toEqual([absent, bound(552)])
  })
})

describePostgres('per-tenant bounds held shared on PostgreSQL', (url) => {
  const schemas: string[] = []
  afterAll(async () => {
    const pool = testPool(url, 1)
    await dropSchemas(pool, schemas)
    await pool.end()
  })

  async function store(): Promise<Store> {
    const s = freshSchema()
    schemas.push(s)
    return postgresStore({ connectionString: url, schema: s })
  }

  /** `n` writes at once, each adding one pending entry under a bound of `limit`: how many landed. */
  async function race(s: Store, n: number, limit: number): Promise<number> {
    const results = await Promise.all(
      Array.from({ length: n }, () => s.write({ checks: [bound(limit - 1)], ops: [put(entry())] })),
    )
    return results.filter((r) => r.ok).length
  }

  it('700 writes at once under a bound of 600, from empty: exactly 600 land', async () => {
    const s = await store()
    expect(await race(s, 700, 600)).toBe(600)
    expect(await s.countRecords(TENANT, 'outbox.pending')).toBe(600)
    await s.close()
  }, 120_000)

  it('64 writes at once with 10 places left under a bound of 1000: exactly 10 land', async () => {
    const s = await store()
    for (let i = 0; i < 990; i += 90)
      expect(await s.write({ ops: Array.from({ length: 90 }, () => put(entry())) })).toEqual({ ok: true })
    expect(await race(s, 64, 1000)).toBe(10)
    expect(await s.countRecords(TENANT, 'outbox.pending')).toBe(1000)
    // Full: one more is refused, and another tenant is not held by it.
    expect(await race(s, 1, 1000)).toBe(0)
    const other = await s.write({ checks: [bound(999, 'tenant-b')], ops: [put(entry('tenant-b'))] })
    expect(other).toEqual({ ok: true })
    await s.close()
  }, 120_000)

  it('a write adding 65 at once goes exclusive and still lands within the bound', async () => {
    const s = await store()
    const many = Array.from({ length: 65 }, () => put(entry()))
    expect(await s.write({ checks: [bound(1000 - 65)], ops: many })).toEqual({ ok: true })
    expect(await s.write({ checks: [bound(129 - 65)], ops: many.map(() => put(entry())) })).toMatchObject({
      ok: false,
    })
    expect(await s.countRecords(TENANT, 'outbox.pending')).toBe(65)
    await s.close()
  }, 120_000)

  it('the counts are planned once a session and their pages kept nine tenths free (migration 15)', async () => {
    const s = freshSchema()
    schemas.push(s)
    const opened = await postgresStore({ connectionString: url, schema: s })
    const pool = testPool(url, 1)
    const lang = await pool.query(
      `SELECT l.lanname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
       JOIN pg_language l ON l.oid = p.prolang WHERE n.nspname = $1 AND p.proname = 'record_count'`,
      [s],
    )
    expect(lang.rows).toEqual([{ lanname: 'plpgsql' }])
    const options = await pool.query(
      `SELECT c.relname, c.reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = $1 AND c.relname IN ('record_counts', 'token_counts') ORDER BY c.relname`,
      [s],
    )
    expect(options.rows).toEqual([
      { relname: 'record_counts', reloptions: ['fillfactor=10'] },
      { relname: 'token_counts', reloptions: ['fillfactor=10'] },
    ])
    await pool.end()
    await opened.close()
  }, 120_000)
})

import type pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import type { OutboxEntry } from '../../src/kernel/types.js'
import type { Store } from '../../src/store/contract.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

/**
 * Pending deliveries are counted once a statement (migration 18: statement triggers with transition
 * tables in place of a row trigger): whatever a statement does to many entries at once (a put of
 * several, an upsert turning pending entries finished and finished ones pending, a delete), the
 * tenant's count is what the entries say, and a statement moves the count row once.
 */
const at = (minute: number) => new Date(Date.UTC(2030, 0, 1, 0, minute)).toISOString()
const pending = (tenant: string, id: string): OutboxEntry => ({
  tenant_id: tenant,
  id,
  kind: 'webhook',
  url: 'https://receiver.example/hook',
  body: '{}',
  created_at: at(0),
  state: 'pending',
  due_at: at(1),
  attempts: [],
})
const finished = (e: OutboxEntry): OutboxEntry => {
  const { due_at: _due, ...rest } = e
  return { ...rest, state: 'delivered', expires_at: at(60) }
}

describePostgres('PostgreSQL pending delivery counts', (url) => {
  let pool: pg.Pool
  let schema: string
  let store: Store
  beforeAll(async () => {
    pool = testPool(url, 2)
    schema = freshSchema()
    store = await postgresStore({ pool, schema })
  })
  afterAll(async () => {
    await store.close()
    await dropSchemas(pool, [schema])
    await pool.end()
  })

  it('counts what many entries put, turned, re-put and deleted in one write say', async () => {
    const a = Array.from({ length: 12 }, (_, i) => pending('ta', `a${i}`))
    const b = Array.from({ length: 5 }, (_, i) => pending('tb', `b${i}`))
    await store.write({ ops: [...a, ...b].map((entry) => ({ op: 'outbox.put' as const, entry })) })
    expect(await store.countRecords('ta', 'outbox.pending')).toBe(12)
    expect(await store.countRecords('tb', 'outbox.pending')).toBe(5)
    // Four of ta's delivered, two of them then pending again (a retry), one of tb's put again pending.
    await store.write({
      ops: [
        ...a.slice(0, 4).map((e) => ({ op: 'outbox.put' as const, entry: finished(e) })),
        ...a.slice(0, 2).map((e) => ({ op: 'outbox.put' as const, entry: e })),
        { op: 'outbox.put' as const, entry: b[0]! },
      ],
    })
    expect(await store.countRecords('ta', 'outbox.pending')).toBe(10)
    expect(await store.countRecords('tb', 'outbox.pending')).toBe(5)
    await store.write({
      ops: [
        { op: 'outbox.delete' as const, tenant_id: 'ta', id: 'a2' },
        { op: 'outbox.delete' as const, tenant_id: 'ta', id: 'a5' },
        { op: 'outbox.delete' as const, tenant_id: 'tb', id: 'b1' },
      ],
    })
    expect(await store.countRecords('ta', 'outbox.pending')).toBe(9)
    expect(await store.countRecords('tb', 'outbox.pending')).toBe(4)
  })

  it('moves a tenant’s count row once for a statement that inserts 40 pending entries', async () => {
    const rows = JSON.stringify(Array.from({ length: 40 }, (_, i) => pending('tc', `c${i}`)))
    const client = await pool.connect()
    /** The row versions this transaction wrote into `record_counts` (its own statistics, exact). */
    const countWrites = async () =>
      (
        await client.query<{ n: number }>(
          `SELECT (n_tup_ins + n_tup_upd)::int AS n FROM pg_stat_xact_user_tables
           WHERE schemaname = $1 AND relname = 'record_counts'`,
          [schema],
        )
      ).rows[0]!.n
    try {
      await client.query('BEGIN')
      const before = await countWrites()
      await client.query(
        `INSERT INTO "${schema}".outbox (tenant_id, id, due_at, doc)
         SELECT e ->> 'tenant_id', e ->> 'id', e ->> 'due_at', e FROM jsonb_array_elements($1::jsonb) AS e`,
        [rows],
      )
      expect((await countWrites()) - before).toBe(1)
      await client.query('COMMIT')
    } finally {
      client.release()
    }
    expect(await store.countRecords('tc', 'outbox.pending')).toBe(40)
  })
})

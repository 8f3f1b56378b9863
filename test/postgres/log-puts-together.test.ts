/**
 * A write's audit entries go to PostgreSQL in one statement (`log.put_many`, adapters/postgres/logs.ts)
 * and the tenant's count of entries moves once a statement (migration 16): when they go together,
 * and that the count and the entries are what they were one by one — several tenants in one
 * write, a put again of an entry there, removals, and a write mixing both.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { logPutsTogether } from '../../adapters/postgres/logs.js'
import type { LogEntry } from '../../src/kernel/index.js'
import type { Op, Store } from '../../src/store/index.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

function entry(tenant: string, seq: number, message = `read ${seq}`): LogEntry {
  return {
    tenant_id: tenant,
    id: `lane-1:${String(seq).padStart(12, '0')}`,
    actor_type: 'application',
    entity_type: 'token',
    entity_id: `t-${seq}`,
    operation: 'read',
    message,
    outcome: 'success',
    created_at: '2030-01-01T00:00:00.000Z',
    lane: 'lane-1',
    seq,
    mac: '',
  }
}
const put = (e: LogEntry): Op => ({ op: 'log.put', entry: e })
const puts = (tenant: string, from: number, n: number) =>
  Array.from({ length: n }, (_, i) => put(entry(tenant, from + i)))

describe('which writes put their entries in one statement', () => {
  const kinds = (ops: object[]) => ops.map((o) => (o as { op: string }).op)

  it('two or more entries go as one op, after the write’s other ops', () => {
    const token = { op: 'token.delete', tenant_id: 'a', id: 'x' }
    const out = logPutsTogether([put(entry('a', 0)), token, put(entry('b', 0))])
    expect(kinds(out)).toEqual(['token.delete', 'log.put_many'])
    expect((out[1] as { entries: LogEntry[] }).entries.map((e) => e.tenant_id)).toEqual(['a', 'b'])
  })

  it('one entry, an entry removed, or one entry put twice: the ops as they came', () => {
    const one = [put(entry('a', 0))]
    expect(logPutsTogether(one)).toBe(one)
    const removing = [...puts('a', 0, 3), { op: 'log.delete', tenant_id: 'a', id: 'lane-1:000000000000' }]
    expect(logPutsTogether(removing)).toBe(removing)
    const twice = [put(entry('a', 0)), put(entry('a', 0, 'again'))]
    expect(logPutsTogether(twice)).toBe(twice)
  })
})

describePostgres('audit entries put together on PostgreSQL', (url) => {
  const schemas: string[] = []
  afterAll(async () => {
    const pool = testPool(url, 1)
    await dropSchemas(pool, schemas)
    await pool.end()
  })

  async function store(): Promise<{ s: Store; schema: string }> {
    const schema = freshSchema()
    schemas.push(schema)
    return { s: await postgresStore({ connectionString: url, schema }), schema }
  }

  it('64 entries of two tenants in one write: each tenant counted exactly, every entry readable', async () => {
    const { s } = await store()
    expect(await s.write({ ops: [...puts('a', 0, 40), ...puts('b', 0, 24)] })).toEqual({ ok: true })
    expect(await s.countRecords('a', 'log')).toBe(40)
    expect(await s.countRecords('b', 'log')).toBe(24)
    const listed = await s.listLogs('a', { order: 'chain', limit: 100 })
    expect(listed.map((e) => e.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i))
    expect(listed[7]).toEqual(entry('a', 7))
    await s.close()
  }, 60_000)

  it('entries put again are replaced, not counted twice; removals and a mixed write count down', async () => {
    const { s } = await store()
    await s.write({ ops: puts('a', 0, 10) })
    const again = [
      put(entry('a', 3, 'sealed again')),
      put(entry('a', 4, 'sealed again')),
      ...puts('a', 10, 2),
    ]
    expect(await s.write({ ops: again })).toEqual({ ok: true })
    expect(await s.countRecords('a', 'log')).toBe(12)
    const listed = await s.listLogs('a', { order: 'chain', limit: 100 })
    expect(listed[3]!.message).toBe('sealed again')
    const removeTwo: Op[] = [0, 1].map((seq) => ({
      op: 'log.delete',
      tenant_id: 'a',
      id: entry('a', seq).id,
    }))
    expect(await s.write({ ops: [...removeTwo, ...puts('a', 12, 3)] })).toEqual({ ok: true })
    expect(await s.countRecords('a', 'log')).toBe(13)
    // Removing an entry that is not there changes nothing.
    expect(await s.write({ ops: removeTwo })).toEqual({ ok: true })
    expect(await s.countRecords('a', 'log')).toBe(13)
    await s.close()
  }, 60_000)

  it('the count moves once a statement: two statement triggers, no row trigger (migration 16)', async () => {
    const { s, schema } = await store()
    const pool = testPool(url, 1)
    const { rows } = await pool.query(
      `SELECT t.tgname, (t.tgtype & 1) = 1 AS per_row FROM pg_trigger t
       JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = $1 AND c.relname = 'logs' AND NOT t.tgisinternal ORDER BY t.tgname`,
      [schema],
    )
    expect(rows).toEqual([
      { tgname: 'log_count_added', per_row: false },
      { tgname: 'log_count_removed', per_row: false },
    ])
    await pool.end()
    await s.close()
  }, 60_000)
})

import type pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { LockKeys } from '../../adapters/postgres/locking.js'
import type { LogEntry, OutboxEntry, StoredToken } from '../../src/kernel/types.js'
import type { Store } from '../../src/store/contract.js'
import type { Check, Op, WriteResult } from '../../src/store/index.js'
import { TIMES } from '../../testing/store/arbitraries.js'
import {
  describePostgres,
  dropSchemas,
  freshSchema,
  testPool,
  waitingForLock,
  watchQueries,
} from './database.js'
import { cardToken } from './tokens.js'

/**
 * Creates with webhook deliveries (`hookedCreate` in adapters/postgres/ops.ts): the token, its
 * audit entry and its pending outbox entries in one statement, no `tv_write`, while the tenant's
 * bound of pending deliveries is held exactly as `tv_write` holds it.
 */
const NOW = TIMES[0]!
const token = cardToken
const entry = (tenant: string, id: string): LogEntry => ({
  tenant_id: tenant,
  id: `w.1:${id}`,
  actor_type: 'application',
  entity_type: 'token',
  entity_id: id,
  operation: 'create',
  message: 'token.create: created',
  outcome: 'success',
  created_at: NOW,
  lane: 'w.1',
  seq: 0,
  mac: `mac-${id}`,
})
const delivery = (tenant: string, id: string): OutboxEntry => ({
  tenant_id: tenant,
  id,
  kind: 'webhook',
  webhook_id: 'wh',
  event_id: `ev-${id}`,
  event_type: 'token.created',
  url: 'https://receiver.example/hook',
  body: '{}',
  created_at: NOW,
  state: 'pending',
  due_at: NOW,
  attempts: [],
})
/**
 * A create as the core sends one for a tenant with a webhook on `token.created`: guards
 * `token.absent` and the bound (`max`: the most pending deliveries before this write's own),
 * ops the put, its entry and a delivery per webhook.
 */
const hooked = (t: StoredToken, max: number, hooks = 1): { checks: Check[]; ops: Op[] } => ({
  checks: [
    { check: 'token.absent', tenant_id: t.tenant_id, id: t.id },
    { check: 'count.within', tenant_id: t.tenant_id, kind: 'outbox.pending', max },
  ],
  ops: [
    { op: 'token.put', token: t },
    { op: 'log.put', entry: entry(t.tenant_id, t.id) },
    ...Array.from({ length: hooks }, (_, i) => ({
      op: 'outbox.put' as const,
      entry: delivery(t.tenant_id, `d-${t.id}-${i}`),
    })),
  ],
})
const ids = (n: number, prefix: string) =>
  Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(4, '0')}`)
const okCount = (results: WriteResult[]) => results.filter((r) => r.ok).length

describePostgres('creates with webhook deliveries: one statement, the bound exact', (url) => {
  let pool: pg.Pool
  let store: Store
  let schema: string
  const sent = { hooked: 0, tvWrite: 0 }
  const pending = (tenant: string) => store.countRecords(tenant, 'outbox.pending')
  const tokens = async (tenant: string) =>
    (await store.listTokens(tenant, { offset: 0, limit: 1, now: NOW })).total

  beforeAll(async () => {
    // Four connections: past a tenant's second call in flight, its writes wait and go together.
    pool = testPool(url, 4)
    watchQueries(pool, (text) => {
      if (text.includes('.tv_write')) sent.tvWrite++
      else if (text.includes('tv_count_within')) sent.hooked++
    })
    schema = freshSchema()
    store = await postgresStore({ pool, schema })
  })
  afterAll(async () => {
    await store.close()
    await dropSchemas(pool, [schema])
    await pool.end()
  })

  it('one alone is one statement: the token, its entry and its deliveries land, and the pending count', async () => {
    const before = { ...sent }
    expect(await store.write(hooked(token('A', 'a1'), 999, 2))).toEqual({ ok: true })
    expect(sent.hooked - before.hooked).toBe(1)
    expect(sent.tvWrite - before.tvWrite).toBe(0)
    expect((await store.getToken('A', 'a1'))?.data).toEqual({ n: 'a1' })
    expect((await store.listLogs('A', { order: 'chain', limit: 10 })).map((e) => e.entity_id)).toEqual(['a1'])
    expect(await store.getOutbox('A', 'd-a1-1')).toEqual(delivery('A', 'd-a1-1'))
    expect(await pending('A')).toBe(2)
    expect((await store.listDueOutbox({ before: NOW, limit: 10 })).map((e) => e.id).sort()).toEqual([
      'd-a1-0',
      'd-a1-1',
    ])
    // Its id is there: refused by its first guard, and neither its entry nor a delivery is written.
    const again = hooked(token('A', 'a1'), 999)
    ;(again.ops[2] as Extract<Op, { op: 'outbox.put' }>).entry.id = 'd-again'
    expect(await store.write(again)).toEqual({ ok: false, failed: again.checks[0] })
    expect(await store.getOutbox('A', 'd-again')).toBeNull()
    expect(await pending('A')).toBe(2)
  })

  it('sent together, a group is one statement: every create lands with its delivery', async () => {
    const before = { ...sent }
    const results = await Promise.all(ids(24, 'g').map((id) => store.write(hooked(token('G', id), 999))))
    expect(results).toEqual(results.map(() => ({ ok: true })))
    expect(sent.hooked - before.hooked).toBeLessThan(24)
    expect(sent.tvWrite - before.tvWrite).toBe(0)
    expect(await tokens('G')).toBe(24)
    expect(await pending('G')).toBe(24)
    expect(await store.countRecords('G', 'log')).toBe(24)
  })

  it('a token with metadata, search indexes and two containers gets every term, alone and in a group', async () => {
    const rich = (id: string) =>
      token('M', id, {
        containers: ['/x/', '/y/'],
        metadata: { Owner: `Ann-${id}` },
        search_index_hashes: [`h-${id}`],
        expires_at: TIMES[2]!,
      })
    const before = { ...sent }
    expect(await store.write(hooked(rich('m1'), 999))).toEqual({ ok: true })
    const group = await Promise.all(ids(12, 'n').map((id) => store.write(hooked(rich(id), 999))))
    expect(group).toEqual(group.map(() => ({ ok: true })))
    expect(sent.tvWrite - before.tvWrite).toBe(0)
    const found = (term: NonNullable<Parameters<Store['findTokenIds']>[1]['term']>) =>
      store.findTokenIds('M', { limit: 100, term })
    expect(await found({ kind: 'container', value: '/y/' })).toHaveLength(13)
    expect(await found({ kind: 'metadata', key: 'Owner', value: 'ann-m1' })).toEqual(['m1'])
    expect(await found({ kind: 'search_index', value: 'h-n0007' })).toEqual(['n0007'])
    expect(await store.listExpired({ kind: 'token', before: TIMES[2]!, limit: 100 })).toHaveLength(13)
    expect(await tokens('M')).toBe(13)
    expect(await pending('M')).toBe(13)
  })

  it('racing past the bound, exactly as many land as it has room for, each with its token', async () => {
    // 530 pending: the first creates pass the guard with the margin (held shared), the rest only
    // exclusive, one at a time; 1 000 is the bound, so 470 of the 600 land.
    const fill: Op[] = ids(530, 'f').map((id) => ({ op: 'outbox.put', entry: delivery('B', id) }))
    expect(await store.write({ ops: fill })).toEqual({ ok: true })
    const before = { ...sent }
    const writes = ids(600, 'b').map((id) => hooked(token('B', id), 999))
    const results = await Promise.all(writes.map((w) => store.write(w)))
    expect(okCount(results)).toBe(470)
    for (const [i, r] of results.entries()) if (!r.ok) expect(r.failed).toEqual(writes[i]!.checks[1])
    expect(await pending('B')).toBe(1000)
    expect(await tokens('B')).toBe(470)
    expect(sent.hooked - before.hooked).toBeGreaterThan(0)
  })

  it('inserts its deliveries, never upserts them: the outbox table’s UPDATE statement triggers do not fire', async () => {
    // An upsert (INSERT … ON CONFLICT DO UPDATE) fires a table's UPDATE statement triggers even when
    // it updates no row: the count's (`outbox_count_updated`) then read its transition tables for
    // nothing. A statement trigger of the test's own counts the firings.
    const s = `"${schema}"`
    await pool.query(`CREATE TABLE ${s}.update_firings (n integer NOT NULL)
      ;CREATE FUNCTION ${s}.count_update_firing() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO ${s}.update_firings VALUES (1); RETURN NULL; END $$
      ;CREATE TRIGGER count_update_firing AFTER UPDATE ON ${s}.outbox
        FOR EACH STATEMENT EXECUTE FUNCTION ${s}.count_update_firing()`)
    const firings = async () =>
      Number((await pool.query(`SELECT count(*) AS n FROM ${s}.update_firings`)).rows[0].n)
    try {
      const before = { ...sent }
      expect(await store.write(hooked(token('U', 'u1'), 999, 2))).toEqual({ ok: true })
      const group = await Promise.all(ids(12, 'u').map((id) => store.write(hooked(token('U', id), 999))))
      expect(group).toEqual(group.map(() => ({ ok: true })))
      expect(sent.hooked - before.hooked).toBeGreaterThan(1)
      expect(sent.tvWrite - before.tvWrite).toBe(0)
      expect(await pending('U')).toBe(14)
      expect(await firings()).toBe(0)
      // The trigger counts: a delivery's update (its state moved) fires it once.
      const claimed = { ...delivery('U', 'd-u1-0'), state: 'delivered' as const, expires_at: NOW }
      expect(await store.write({ ops: [{ op: 'outbox.put', entry: claimed }] })).toEqual({ ok: true })
      expect(await firings()).toBe(1)
    } finally {
      await pool.query(`DROP TRIGGER count_update_firing ON ${s}.outbox; DROP TABLE ${s}.update_firings`)
    }
  })

  it('a delivery whose id is there already is written over, alone and in a group, as tv_write writes it', async () => {
    const old = (id: string) => ({
      op: 'outbox.put' as const,
      entry: { ...delivery('O', id), body: '"old"' },
    })
    expect(await store.write({ ops: [old('d-o1-0'), old('d-o0003-0')] })).toEqual({ ok: true })
    expect(await pending('O')).toBe(2)
    const before = { ...sent }
    // Alone: the statement meets the delivery's key, writes nothing, and the write goes through tv_write.
    expect(await store.write(hooked(token('O', 'o1'), 999))).toEqual({ ok: true })
    expect(sent.tvWrite - before.tvWrite).toBe(1)
    expect(await store.getOutbox('O', 'd-o1-0')).toEqual(delivery('O', 'd-o1-0'))
    // In a group: the group's statement fails whole, and its writes go through tv_write_many.
    const group = await Promise.all(ids(12, 'o').map((id) => store.write(hooked(token('O', id), 999))))
    expect(group).toEqual(group.map(() => ({ ok: true })))
    expect(await store.getOutbox('O', 'd-o0003-0')).toEqual(delivery('O', 'd-o0003-0'))
    expect(await tokens('O')).toBe(13)
    expect(await store.countRecords('O', 'log')).toBe(13)
    expect(await pending('O')).toBe(13)
  })

  it('reads the bound after its locks: a write that held the bound exclusive and filled it is counted', async () => {
    const holder = await pool.connect()
    try {
      await holder.query('BEGIN')
      // The bound's lock, held exclusive as a write near the bound holds it.
      const key = new LockKeys(schema).key('count\u0000C\u0000outbox.pending')
      await holder.query(`SELECT pg_advisory_xact_lock(${key})`)
      const create = store.write(hooked(token('C', 'c1'), 999))
      await waitingForLock(pool, key)
      // Fills the bound, then commits: the create, which began before this commit, must read it.
      await holder.query(
        `INSERT INTO "${schema}".outbox (tenant_id, id, due_at, doc)
         SELECT 'C', 'h' || i, $1, '{}'::jsonb FROM generate_series(1, 1000) AS i`,
        [NOW],
      )
      await holder.query('COMMIT')
      const result = await create
      expect(result.ok).toBe(false)
      expect(await store.getToken('C', 'c1')).toBeNull()
      expect(await pending('C')).toBe(1000)
    } finally {
      holder.release()
    }
  })
})

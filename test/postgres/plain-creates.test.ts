import type pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { LockKeys } from '../../adapters/postgres/locking.js'
import type { LogEntry, StoredToken } from '../../src/kernel/types.js'
import type { Store } from '../../src/store/contract.js'
import type { Check, Op } from '../../src/store/index.js'
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

const NOW = TIMES[0]!
const token = cardToken
/** An audit entry of `tenant` about token `id`, at `seq` of lane `w.1` (the store keeps it as given). */
const entry = (tenant: string, id: string, seq: number): LogEntry => ({
  tenant_id: tenant,
  id: `w.1:${String(seq).padStart(12, '0')}`,
  actor_type: 'application',
  entity_type: 'token',
  entity_id: id,
  operation: 'create',
  message: 'token.create: created',
  outcome: 'success',
  created_at: NOW,
  lane: 'w.1',
  seq,
  mac: `mac-${seq}`,
})
/** A plain create with its audit entries, as the core sends one with the log on. */
const logged = (t: StoredToken, ...entries: LogEntry[]): { checks: Check[]; ops: Op[] } => ({
  checks: plain(t).checks,
  ops: [...plain(t).ops, ...entries.map((e) => ({ op: 'log.put' as const, entry: e }))],
})
/** A create of a token whose id the core made: its one guard `token.absent`, its one op the put. */
const plain = (t: StoredToken): { checks: Check[]; ops: Op[] } => ({
  checks: [{ check: 'token.absent', tenant_id: t.tenant_id, id: t.id }],
  ops: [{ op: 'token.put', token: t }],
})

describePostgres('plain creates: one statement each, no tv_write', (url) => {
  let pool: pg.Pool
  let store: Store
  let schema: string
  /** The write statements the store sent, by kind. */
  const sent = { create: 0, createMany: 0, createManyAny: 0, tvWrite: 0 }
  const ids = (tenant: string, term?: Parameters<Store['findTokenIds']>[1]['term']) =>
    store.findTokenIds(tenant, { limit: 1000, ...(term ? { term } : {}) })
  const total = async (tenant: string) =>
    (await store.listTokens(tenant, { offset: 0, limit: 1, now: NOW })).total

  beforeAll(async () => {
    // Four connections: past a tenant's second call in flight, its writes wait and go together.
    pool = testPool(url, 4)
    watchQueries(pool, (text) => {
      if (text.includes('.tv_write')) sent.tvWrite++
      else if (text.includes('jsonb_array_elements($1::jsonb)')) {
        sent.createMany++
        if (text.includes('token_terms_of')) sent.createManyAny++
      } else if (text.includes('pg_advisory_xact_lock_shared')) sent.create++
    })
    schema = freshSchema()
    store = await postgresStore({ pool, schema })
  })
  afterAll(async () => {
    await store.close()
    await dropSchemas(pool, [schema])
    await pool.end()
  })

  it('the usual token is one statement: the row, its container term and its count', async () => {
    const before = { ...sent }
    expect(await store.write(plain(token('A', 'a1')))).toEqual({ ok: true })
    expect(sent.create - before.create).toBe(1)
    expect(sent.tvWrite - before.tvWrite).toBe(0)
    expect((await store.getToken('A', 'a1'))?.data).toEqual({ n: 'a1' })
    expect(await ids('A', { kind: 'container', value: '/pci/high/' })).toEqual(['a1'])
    expect(await ids('A', { kind: 'fingerprint', value: 'fp-a1' })).toEqual(['a1'])
    expect(await total('A')).toBe(1)
  })

  it('a create with its audit entries is one statement too: the row, its entries and their count land together', async () => {
    const before = { ...sent }
    const e = entry('L', 'l1', 0)
    expect(await store.write(logged(token('L', 'l1'), e))).toEqual({ ok: true })
    expect(sent.create - before.create).toBe(1)
    expect(sent.tvWrite - before.tvWrite).toBe(0)
    expect(await store.listLogs('L', { order: 'chain', limit: 10 })).toEqual([e])
    expect(await store.countRecords('L', 'log')).toBe(1)
    // Refused by its guard (the id is there): neither the row nor its entry is written again.
    const again = entry('L', 'l1', 1)
    expect((await store.write(logged(token('L', 'l1'), again))).ok).toBe(false)
    expect(await store.listLogs('L', { order: 'chain', limit: 10 })).toEqual([e])
    expect(await store.countRecords('L', 'log')).toBe(1)
    // Sent together (past two calls in flight), each create with its entry: all land, one statement a group.
    const many = Array.from({ length: 24 }, (_, i) => token('L', `k${String(i).padStart(2, '0')}`))
    const grouped = { ...sent }
    expect(await Promise.all(many.map((t, i) => store.write(logged(t, entry('L', t.id, 10 + i)))))).toEqual(
      many.map(() => ({ ok: true })),
    )
    expect(sent.createMany - grouped.createMany).toBeGreaterThan(0)
    expect(sent.tvWrite - grouped.tvWrite).toBe(0)
    const entries = await store.listLogs('L', { order: 'chain', limit: 100 })
    expect(entries.map((x) => x.entity_id).sort()).toEqual(['l1', ...many.map((t) => t.id)].sort())
    expect(await store.countRecords('L', 'log')).toBe(25)
  })

  it('a token with metadata, search indexes and two containers gets every term', async () => {
    const t = token('B', 'b1', {
      containers: ['/x/', '/y/'],
      metadata: { Owner: 'Ann' },
      search_index_hashes: ['h1', 'h2'],
      expires_at: TIMES[2]!,
    })
    expect(await store.write(plain(t))).toEqual({ ok: true })
    expect(await ids('B', { kind: 'container', value: '/y/' })).toEqual(['b1'])
    expect(await ids('B', { kind: 'metadata', key: 'Owner', value: 'ann' })).toEqual(['b1'])
    expect(await ids('B', { kind: 'search_index', value: 'h2' })).toEqual(['b1'])
    expect(await store.listExpired({ kind: 'token', before: TIMES[2]!, limit: 10 })).toContainEqual({
      tenant_id: 'B',
      id: 'b1',
    })
    expect(await total('B')).toBe(1)
    // Deleted, it takes every term and its count with it (the trigger reads the same terms).
    expect(await store.write({ ops: [{ op: 'token.delete', tenant_id: 'B', id: 'b1' }] })).toEqual({
      ok: true,
    })
    expect(await ids('B', { kind: 'metadata', key: 'Owner', value: 'ann' })).toEqual([])
    expect(await total('B')).toBe(0)
  })

  it('creates sent together get exactly their terms: usual tokens without token_terms_of, others with it', async () => {
    // Usual tokens only: their groups write each one's container from the doc.
    let before = { ...sent }
    const usual = Array.from({ length: 24 }, (_, i) => token('M', `m${String(i).padStart(2, '0')}`))
    expect(await Promise.all(usual.map((t) => store.write(plain(t))))).toEqual(
      usual.map(() => ({ ok: true })),
    )
    expect(sent.createMany - before.createMany).toBeGreaterThan(0)
    expect(sent.createManyAny - before.createManyAny).toBe(0)
    expect(await ids('M', { kind: 'container', value: '/pci/high/' })).toEqual(usual.map((t) => t.id))
    expect(await total('M')).toBe(24)

    // Every third token has other terms, so each group holding one takes them all from token_terms_of.
    before = { ...sent }
    const mixed = Array.from({ length: 24 }, (_, i) =>
      token('N', `n${String(i).padStart(2, '0')}`, {
        ...(i % 3 === 0
          ? { containers: ['/x/', '/y/'], metadata: { Tag: `T${i}` }, search_index_hashes: [`s${i}`] }
          : {}),
      }),
    )
    expect(await Promise.all(mixed.map((t) => store.write(plain(t))))).toEqual(
      mixed.map(() => ({ ok: true })),
    )
    expect(sent.createManyAny - before.createManyAny).toBeGreaterThan(0)
    const other = mixed.filter((_, i) => i % 3 === 0).map((t) => t.id)
    expect(await ids('N', { kind: 'container', value: '/pci/high/' })).toEqual(
      mixed.map((t) => t.id).filter((id) => !other.includes(id)),
    )
    expect(await ids('N', { kind: 'container', value: '/y/' })).toEqual(other)
    expect(await ids('N', { kind: 'metadata', key: 'Tag', value: 't3' })).toEqual(['n03'])
    expect(await ids('N', { kind: 'search_index', value: 's21' })).toEqual(['n21'])
    const terms = await pool.query(
      `SELECT count(*)::int AS n FROM "${schema}".token_terms WHERE tenant_id = 'N'`,
    )
    // 16 usual tokens, one term each; 8 others, four each (two containers, a metadata entry, a hash).
    expect(terms.rows[0].n).toBe(16 + 8 * 4)
    expect(await total('N')).toBe(24)
  })

  it('an id that is there fails its token.absent and writes nothing', async () => {
    expect(await store.write(plain(token('C', 'c1')))).toEqual({ ok: true })
    const again = plain(token('C', 'c1', { data: { n: 'other' } }))
    expect(await store.write(again)).toEqual({ ok: false, failed: again.checks[0] })
    expect((await store.getToken('C', 'c1'))?.data).toEqual({ n: 'c1' })
    expect(await total('C')).toBe(1)
  })

  it('many at once go together in one statement; a group with a taken id is answered write by write', async () => {
    const before = { ...sent }
    const fresh = Array.from({ length: 40 }, (_, i) => plain(token('D', `d${String(i).padStart(2, '0')}`)))
    expect(await Promise.all(fresh.map((w) => store.write(w)))).toEqual(fresh.map(() => ({ ok: true })))
    expect(sent.createMany - before.createMany).toBeGreaterThan(0)
    expect(await ids('D')).toHaveLength(40)
    expect(await total('D')).toBe(40)

    // 30 creates of 10 ids, each id three times: exactly one of each lands, the rest fail their guard.
    const racing = Array.from({ length: 30 }, (_, i) => plain(token('E', `e${i % 10}`, { data: { i } })))
    const results = await Promise.all(racing.map((w) => store.write(w)))
    expect(results.filter((r) => r.ok)).toHaveLength(10)
    for (const [i, r] of results.entries()) if (!r.ok) expect(r.failed).toEqual(racing[i]!.checks[0])
    expect(await ids('E')).toEqual(Array.from({ length: 10 }, (_, i) => `e${i}`))
    expect(await total('E')).toBe(10)
  })

  it('a create the database refuses fails alone, whatever group it was in; the others land', async () => {
    const good = Array.from({ length: 20 }, (_, i) => plain(token('H', `h${String(i).padStart(2, '0')}`)))
    // PostgreSQL can't hold U+0000 in text: this create fails with an error, not a guard.
    const bad = plain(token('H', 'bad', { data: { n: 'a\u0000b' } }))
    const results = await Promise.allSettled([...good.map((w) => store.write(w)), store.write(bad)])
    expect(results.slice(0, 20).map((r) => r.status === 'fulfilled' && r.value)).toEqual(
      good.map(() => ({ ok: true })),
    )
    expect(results[20]!.status).toBe('rejected')
    expect(await store.getToken('H', 'bad')).toBeNull()
    expect(await ids('H')).toHaveLength(20)
    expect(await total('H')).toBe(20)
  })

  it("waits for a deduplicating create's lock on its fingerprint (it takes that lock shared)", async () => {
    const holder = await pool.connect()
    try {
      await holder.query('BEGIN')
      // The lock a deduplicating create of this fingerprint holds, exclusive, while it checks.
      const key = new LockKeys(schema).key('fingerprint\u0000F\u0000fp-f1')
      await holder.query(`SELECT pg_advisory_xact_lock(${key})`)
      let done = false
      const create = store.write(plain(token('F', 'f1'))).then((r) => {
        done = true
        return r
      })
      await waitingForLock(pool, key)
      expect(done).toBe(false)
      expect(await total('F')).toBe(0)
      await holder.query('COMMIT')
      expect(await create).toEqual({ ok: true })
    } finally {
      holder.release()
    }
  })
})

describePostgres('plain creates sent together', (url) => {
  it("wait for a deduplicating create's lock on their fingerprint, as one alone does", async () => {
    // Four connections: past two calls in flight, a tenant's writes go together (`createMany`).
    const pool = testPool(url, 4)
    const schema = freshSchema()
    const store = await postgresStore({ pool, schema })
    const together = { calls: 0 }
    watchQueries(pool, (text) => {
      if (text.includes('jsonb_array_elements($1::jsonb)')) together.calls++
    })
    const holder = await pool.connect()
    try {
      await holder.query('BEGIN')
      const key = new LockKeys(schema).key('fingerprint\u0000G\u0000same')
      await holder.query(`SELECT pg_advisory_xact_lock(${key})`)
      // The first two go alone (another fingerprint: not held); the twelve behind them go together
      // once one of those ends, and the group waits for the lock.
      const alone = ['f1', 'f2'].map((id) => store.write(plain(token('G', id, { fingerprint: 'free' }))))
      let done = 0
      const creates = Array.from({ length: 12 }, (_, i) =>
        store
          .write(plain(token('G', `g${String(i).padStart(2, '0')}`, { fingerprint: 'same' })))
          .then((r) => {
            done++
            return r
          }),
      )
      expect(await Promise.all(alone)).toEqual([{ ok: true }, { ok: true }])
      await waitingForLock(pool, key)
      expect(done).toBe(0)
      await holder.query('COMMIT')
      expect(await Promise.all(creates)).toEqual(creates.map(() => ({ ok: true })))
      expect(together.calls).toBeGreaterThan(0)
      expect(await store.findTokenIds('G', { limit: 100 })).toHaveLength(14)
    } finally {
      holder.release()
      await store.close()
      await dropSchemas(pool, [schema])
      await pool.end()
    }
  })
})

describePostgres('a plain create waiting for its lock', (url) => {
  it('holds no row while it waits: the lock holder can write its count row', async () => {
    // One connection: the store's backend, and so its count row (`pg_backend_pid() % 16`), is known.
    const pool = testPool(url, 1)
    const other = testPool(url, 1)
    const schema = freshSchema()
    const store = await postgresStore({ pool, schema })
    const holder = await other.connect()
    try {
      expect(await store.write(plain(token('K', 'k0', { fingerprint: 'fp' })))).toEqual({ ok: true })
      const { rows } = await pool.query<{ shard: number }>('SELECT pg_backend_pid() % 16 AS shard')
      await holder.query('BEGIN')
      const key = new LockKeys(schema).key('fingerprint\u0000K\u0000fp')
      await holder.query(`SELECT pg_advisory_xact_lock(${key})`)
      let sent = 0
      watchQueries(pool, (text) => {
        if (text.includes('pg_advisory_xact_lock_shared')) sent++
      })
      const create = store.write(plain(token('K', 'k1', { fingerprint: 'fp' })))
      await waitingForLock(holder, key)
      // As a deduplicating create would: under the lock, it writes the count row the create uses.
      // Had the create written that row before asking for the lock, this would deadlock.
      await holder.query(`UPDATE "${schema}".token_counts SET n = n WHERE tenant_id = 'K' AND shard = $1`, [
        rows[0]!.shard,
      ])
      await holder.query('COMMIT')
      expect(await create).toEqual({ ok: true })
      // Sent once: a deadlock would have aborted it, and the store would have sent it again.
      expect(sent).toBe(1)
      expect((await store.listTokens('K', { offset: 0, limit: 1, now: NOW })).total).toBe(2)
    } finally {
      holder.release()
      await store.close()
      await dropSchemas(other, [schema])
      await Promise.all([pool.end(), other.end()])
    }
  })
})

describe('plainCreate', () => {
  it('is the one guard token.absent and the put of that token, nothing else', async () => {
    const { plainCreate } = await import('../../adapters/postgres/ops.js')
    const t = token('T', 'x')
    expect(plainCreate(plain(t).checks, plain(t).ops)).toEqual({ token: t, entries: [] })
    // With its audit entries (of its tenant, each id once) it is still plain.
    const e = entry('T', 'x', 0)
    expect(plainCreate(logged(t, e).checks, logged(t, e).ops)).toEqual({ token: t, entries: [e] })
    expect(plainCreate(logged(t, e, e).checks, logged(t, e, e).ops)).toBeNull()
    expect(plainCreate(logged(t, entry('U', 'x', 0)).checks, logged(t, entry('U', 'x', 0)).ops)).toBeNull()
    const logFirst: Op[] = [{ op: 'log.put', entry: e }, ...plain(t).ops]
    expect(plainCreate(plain(t).checks, logFirst)).toBeNull()
    const unlocked: Check = { check: 'token.unlocked', tenant_id: 'T', id: 'x', now: NOW }
    expect(plainCreate([...plain(t).checks, unlocked], plain(t).ops)).toBeNull()
    expect(plainCreate([], plain(t).ops)).toBeNull()
    expect(plainCreate(plain(t).checks, [...plain(t).ops, ...plain(token('T', 'y')).ops])).toBeNull()
    expect(plainCreate(plain(token('T', 'other')).checks, plain(t).ops)).toBeNull()
    expect(plainCreate(plain(token('U', 'x')).checks, plain(t).ops)).toBeNull()
  })
})

describe('LockKeys.sharedKeys', () => {
  it('gives the keys order gives for shared locks on the same names: ascending, each once', () => {
    const names = ['fingerprint\u0000T\u0000b', 'fingerprint\u0000T\u0000a', 'fingerprint\u0000T\u0000b']
    const keys = new LockKeys('s').sharedKeys(names)
    expect(keys).toEqual(new LockKeys('s').order(names.map((n) => [n, 'shared'] as const)).keys)
    expect(keys).toHaveLength(2)
    expect(BigInt(keys[0]!) < BigInt(keys[1]!)).toBe(true)
    // The key of one name is the one a deduplicating create's exclusive lock takes.
    expect(new LockKeys('s').sharedKeys([names[1]!])).toEqual([new LockKeys('s').key(names[1]!)])
    expect(new LockKeys('other').sharedKeys([names[1]!])).not.toEqual(
      new LockKeys('s').sharedKeys([names[1]!]),
    )
    expect(new LockKeys('s').sharedKeys([])).toEqual([])
  })
})

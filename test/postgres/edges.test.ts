import type pg from 'pg'
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { postgresStore } from '../../adapters/postgres/index.js'
import type { StoredFormula, StoredToken, StoredTransaction } from '../../src/kernel/types.js'
import type { Store, TokenTerm } from '../../src/store/contract.js'
import type { Op } from '../../src/store/index.js'
import { FORMULA_NAMES, TIMES } from '../../testing/store/arbitraries.js'
import { expectSameAsModel, type Step } from '../../testing/store/observe.js'
import { describePostgres, dropSchemas, freshSchema, testPool, truncateAll } from './database.js'

const NOW = TIMES[0]!
const token = (id: string, extra: Partial<StoredToken> = {}): Op => ({
  op: 'token.put',
  token: {
    id,
    tenant_id: 'T',
    type: 'x',
    data: null,
    containers: [],
    metadata: {},
    created_by: 'a',
    created_at: NOW,
    ...extra,
  },
})
const tx = (id: string, extra: Partial<StoredTransaction> = {}): Op => ({
  op: 'transaction.put',
  transaction: {
    id,
    tenant_id: 'T',
    created_at: NOW,
    created_by: 'a',
    expires_at: TIMES[2]!,
    state: 'open',
    version: 0,
    ...extra,
  },
})
const formula = (id: string, name: string, tenant: string | null = 'T'): Op => {
  const f: StoredFormula = {
    id,
    tenant_id: tenant,
    name,
    type: 'private',
    status: 'verified',
    code: '',
    configuration: [],
    request_parameters: [],
  }
  return { op: 'formula.put', formula: f }
}
const batch = (...ops: Op[]): Step => ({ batch: { checks: [], ops } })

describePostgres('postgres store edge cases, against MemoryState', (url) => {
  let pool: pg.Pool
  let store: Store
  const schema = freshSchema()
  beforeAll(async () => {
    pool = testPool(url)
    store = await postgresStore({ pool, schema })
  })
  beforeEach(() => truncateAll(pool, schema))
  afterAll(async () => {
    await store?.close()
    await dropSchemas(pool, [schema])
    await pool.end()
  })

  it('puts staged records once each (a put again replaces), deletes them, and keeps each transaction apart', async () => {
    const staged = (txId: string, id: string, seq: number): Op => ({
      op: 'staged.put',
      staged: { tenant_id: 'T', transaction_id: txId, token_id: id, seq, token: null },
    })
    const unstaged = (txId: string, id: string): Op => ({
      op: 'staged.delete',
      tenant_id: 'T',
      transaction_id: txId,
      token_id: id,
    })
    await expectSameAsModel(store, [
      batch(
        tx('t1', { version: 1 }),
        staged('t1', 'a', 1),
        staged('t1', 'a', 1),
        staged('t1', 'c', 1),
        tx('t2'),
      ),
      batch(tx('t1', { version: 2 }), staged('t1', 'b', 2), unstaged('t1', 'a'), staged('t1', 'c', 2)),
      batch(tx('t2', { version: 1 }), staged('t2', 'b', 1)),
      batch(tx('t1', { state: 'committed', version: 2 }), unstaged('t1', 'b'), unstaged('t1', 'c')),
    ])
    expect((await store.getTransaction('T', 't1'))?.state).toBe('committed')
    expect((await store.listStaged('T', 't2', { limit: 10 })).map((w) => w.token_id)).toEqual(['b'])
  })

  it('a create guarded token.absent inserts once; a second put of it in the batch replaces it; the guard failing writes nothing', async () => {
    const absent = (id: string, tenant = 'T') => ({ check: 'token.absent' as const, tenant_id: tenant, id })
    await expectSameAsModel(store, [
      // The first put of a is a plain insert under its guard; the second put of a replaces it.
      {
        batch: {
          checks: [absent('a'), absent('b')],
          ops: [token('a', { type: 'first' }), token('b'), token('a', { type: 'second' })],
        },
      },
      // The guard names a token of another tenant: the put of T's a is an upsert (a is there).
      { batch: { checks: [absent('a', 'U')], ops: [token('a', { type: 'third' })] } },
      // a exists: the guard fails and nothing is written.
      { batch: { checks: [absent('c'), absent('a')], ops: [token('c'), token('a', { type: 'lost' })] } },
    ])
    expect((await store.getToken('T', 'a'))?.type).toBe('third')
    expect(await store.getToken('T', 'c')).toBeNull()
  })

  it('a first token.absent left to its put answers as if read first: a later failing guard loses to it, and nothing is written', async () => {
    const absent = (id: string) => ({ check: 'token.absent' as const, tenant_id: 'T', id })
    const unlocked = (id: string) => ({ check: 'token.unlocked' as const, tenant_id: 'T', id, now: NOW })
    const lock: Op = {
      op: 'lock.put',
      lock: { tenant_id: 'T', token_id: 'l', transaction_id: 'x', expires_at: TIMES[2]! },
    }
    await expectSameAsModel(store, [
      batch(token('a'), lock),
      // a exists: the put meets its row, and the put of z before it is rolled back with the call.
      { batch: { checks: [absent('a'), unlocked('a')], ops: [token('z'), token('a', { type: 'lost' })] } },
      // Both fail: the first is answered, though the second is the one read before the ops.
      { batch: { checks: [absent('a'), unlocked('l')], ops: [token('a', { type: 'lost' })] } },
      // The lock alone fails: the second is answered.
      { batch: { checks: [absent('l'), unlocked('l')], ops: [token('l')] } },
      // The first op on a deletes it: the guard is read before the ops, and fails.
      {
        batch: {
          checks: [absent('a')],
          ops: [{ op: 'token.delete', tenant_id: 'T', id: 'a' }, token('a', { type: 'lost' })],
        },
      },
      // The guard holds: the first put inserts, the second replaces.
      { batch: { checks: [absent('m'), unlocked('m')], ops: [token('m'), token('m', { type: 'second' })] } },
    ])
    expect(await store.getToken('T', 'z')).toBeNull()
    expect(await store.getToken('T', 'l')).toBeNull()
    expect((await store.getToken('T', 'a'))?.type).toBe('x')
    expect((await store.getToken('T', 'm'))?.type).toBe('second')
  })

  it('a create of a token that is there fails its token.absent, whichever row its insert meets first', async () => {
    // One container and no other term: the token, its count and its term go in one statement, whose
    // parts run in no set order; the term's primary key may refuse before the token's does.
    const absent = { check: 'token.absent' as const, tenant_id: 'T', id: 'a' }
    for (const extra of [{ containers: ['/general/'] }, { containers: ['/a/', '/b/'] }, {}]) {
      await truncateAll(pool, schema)
      await expectSameAsModel(store, [
        { batch: { checks: [absent], ops: [token('a', extra)] } },
        { batch: { checks: [absent], ops: [token('a', { ...extra, type: 'lost' })] } },
      ])
      expect((await store.getToken('T', 'a'))?.type).toBe('x')
    }
  })

  it('indexes a token whose terms repeat once each, and again once each after a put that changes them', async () => {
    const find = (term: TokenTerm) => store.findTokenIds('T', { term, limit: 10 })
    const repeated = token('a', {
      containers: ['/a/', '/a/', '/b/'],
      search_index_hashes: ['h1', 'h1', 'h2'],
      metadata: { k: 'V', j: 'v' },
    })
    expect(
      await store.write({ checks: [{ check: 'token.absent', tenant_id: 'T', id: 'a' }], ops: [repeated] }),
    ).toEqual({
      ok: true,
    })
    expect(await find({ kind: 'container', value: '/a/' })).toEqual(['a'])
    expect(await find({ kind: 'search_index', value: 'h1' })).toEqual(['a'])
    expect(await find({ kind: 'metadata', key: 'j', value: 'v' })).toEqual(['a'])
    await store.write({
      ops: [token('a', { containers: ['/b/', '/c/', '/c/'], search_index_hashes: ['h2', 'h2'] })],
    })
    expect(await find({ kind: 'container', value: '/a/' })).toEqual([])
    expect(await find({ kind: 'container', value: '/c/' })).toEqual(['a'])
    expect(await find({ kind: 'search_index', value: 'h2' })).toEqual(['a'])
    expect(await find({ kind: 'metadata', key: 'j', value: 'v' })).toEqual([])
  })

  it('orders names by UTF-16 code units and matches them like nameMatcher', async () => {
    const ops = FORMULA_NAMES.map((name, i) => formula(`f${i}`, name, i % 2 ? 'T' : null))
    const filters = ['%', '_', '\\', 'i', 'İ', '*😀*', 'c*p', '*', '**', '100%*', '*_d*', 'X', '\uff01*']
    await expectSameAsModel(store, [batch(...ops)], filters)
    const names = (await store.listFormulas('T', { offset: 0, limit: 20 })).items.map((f) => f.name)
    expect(names.indexOf('😀 emoji')).toBeLessThan(names.indexOf('\uff01bang'))
  })

  it('keeps key and nonce indexes exactly as MemoryState does when records share them', async () => {
    const app = (id: string, key_hash: string): Op => ({
      op: 'application.put',
      application: {
        id,
        tenant_id: 'T',
        name: id,
        type: 'private',
        permissions: [],
        created_at: NOW,
        key_hash,
      },
    })
    const session = (id: string, key_hash: string, nonce_hash: string): Op => ({
      op: 'session.put',
      session: {
        id,
        tenant_id: 'T',
        application_id: 'p',
        key_hash,
        nonce_hash,
        state: 'created',
        permissions: [],
        created_at: NOW,
        expires_at: TIMES[1]!,
      },
    })
    // Records sharing a hash never happen (hashes of random secrets), and the contract model refuses
    // them: here the store is compared with MemoryState's indexes instead.
    const memory = memoryStore()
    await expectSameAsModel(
      store,
      [
        batch(app('a1', 'k1'), session('s1', 'k1', 'n1'), session('s2', 'k2', 'n1')),
        batch(app('a1', 'k2'), { op: 'session.delete', tenant_id: 'T', id: 's1' }),
        batch(session('s2', 'k3', 'n2'), app('a2', 'k3')),
        { purge: TIMES[1]! },
      ],
      [],
      undefined,
      4,
      memory,
    )
    for (const hash of ['k1', 'k2', 'k3'])
      expect(await store.findKey(hash)).toEqual(await memory.findKey(hash))
    for (const nonce of ['n1', 'n2'])
      expect(await store.getSessionByNonce('T', nonce)).toEqual(await memory.getSessionByNonce('T', nonce))
  })

  it('round-trips values exactly, optional fields absent', async () => {
    const data = {
      s: 'é😀\n"\\',
      n: [0, -1.5, 1e21, 2 ** 53 + 2, 1e-7],
      nested: { z: null, a: [true, false, {}] },
    }
    await store.write({ ops: [token('v', { data, mask: 'm' })] })
    const got = await store.getToken('T', 'v')
    expect(got).toEqual({
      id: 'v',
      tenant_id: 'T',
      type: 'x',
      data,
      mask: 'm',
      containers: [],
      metadata: {},
      created_by: 'a',
      created_at: NOW,
    })
    expect(Object.keys(got!)).not.toContain('expires_at')
  })
})

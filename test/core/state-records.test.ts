import { describe, expect, it } from 'vitest'
import { MemoryState, type StateRecords } from '../../adapters/memory/state.js'
import type { StoredToken, StoredTransaction } from '../../src/kernel/types.js'
import type { Check, Op } from '../../src/store/index.js'
import { LATER, NOW, T, tx as txRecord, U } from '../records.js'

const SOON = '2030-01-01T00:10:00.000Z'

const put = (id: string, extra: Partial<StoredToken> = {}, tenant = T): Op => ({
  op: 'token.put',
  token: {
    id,
    tenant_id: tenant,
    type: 'token',
    data: { value: id },
    containers: ['/general/high/'],
    metadata: {},
    created_by: 'app-1',
    created_at: NOW,
    ...extra,
  },
})
const link = (parent: string, child: string, tenant = T): Op => ({
  op: 'association.put',
  association: { tenant_id: tenant, parent_id: parent, child_id: child, created_at: NOW },
})
const unlink = (parent: string, child: string): Op => ({
  op: 'association.delete',
  tenant_id: T,
  parent_id: parent,
  child_id: child,
})
const tx = (id: string, extra: Partial<StoredTransaction> = {}): Op => ({
  op: 'transaction.put',
  transaction: txRecord(id, extra),
})
/** Stages `token` (null: a delete) over token `id` in transaction `txId`, with its lock (expiring at `expires`). */
const stage = (
  txId: string,
  id: string,
  token: StoredToken | null,
  expires = txRecord(txId).expires_at,
): Op[] => [
  {
    op: 'staged.put',
    staged: { tenant_id: T, transaction_id: txId, token_id: id, seq: 1, token },
  },
  { op: 'lock.put', lock: { tenant_id: T, token_id: id, transaction_id: txId, expires_at: expires } },
]
/** Ends transaction `txId` (read as `tx(txId)`) as `state`, clearing the staged records and locks of `ids`. */
const end = (txId: string, state: StoredTransaction['state'], ids: string[]): Op[] => [
  tx(txId, { state }),
  ...ids.flatMap((id): Op[] => [
    { op: 'staged.delete', tenant_id: T, transaction_id: txId, token_id: id },
    { op: 'lock.delete', tenant_id: T, token_id: id },
  ]),
]
const tokenOf = (op: Op): StoredToken => (op.op === 'token.put' ? op.token : (undefined as never))
const session = (id: string, state: 'created' | 'authorized' = 'created'): Op => ({
  op: 'session.put',
  session: {
    id,
    tenant_id: T,
    application_id: 'pub-1',
    key_hash: `key-${id}`,
    nonce_hash: `nonce-${id}`,
    state,
    permissions: ['token:read'],
    created_at: NOW,
    expires_at: SOON,
  },
})
const formula = (id: string, tenant: string | null): Op => ({
  op: 'formula.put',
  formula: {
    id,
    tenant_id: tenant,
    name: `formula ${id}`,
    type: tenant === null ? 'official' : 'private',
    status: 'verified',
    code: 'module.exports = async () => ({})',
    configuration: [],
    request_parameters: [],
  },
})
const reactor = (id: string, formulaId: string): Op => ({
  op: 'reactor.put',
  reactor: {
    id,
    tenant_id: T,
    name: id,
    formula_id: formulaId,
    configuration: { region: 'eu' },
    created_at: NOW,
    created_by: 'app-1',
  },
})

/** A state with every kind of record, links out of id order, and locks that moved between transactions. */
function seeded(): MemoryState {
  const state = new MemoryState()
  const write = (...ops: Op[]) => expect(state.write({ ops })).toEqual({ ok: true })
  write(
    { op: 'tenant.put', tenant: { id: T, name: 'a', created_at: NOW } },
    { op: 'tenant.put', tenant: { id: U, name: 'b', created_at: NOW } },
    {
      op: 'application.put',
      application: {
        id: 'app-1',
        tenant_id: T,
        name: 'one',
        type: 'private',
        permissions: ['token:read'],
        created_at: NOW,
        key_hash: 'key-app-1',
      },
    },
  )
  write(...['p', 'q', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'x', 'y', 'z'].map((id) => put(id)))
  write(put('e', { expires_at: SOON, type: 'card' }), put('p', {}, U), put('c1', {}, U))
  write(put('v', { type: 'card', cvc_expires_at: SOON }), put('w2', { type: 'card', cvc_expires_at: SOON }))
  write(put('w2', { type: 'card' }))
  write(
    link('p', 'c3'),
    link('p', 'c1'),
    link('p', 'c5'),
    link('p', 'e'),
    link('q', 'c1'),
    link('p', 'c1', U),
  )
  // A re-link after an unlink goes to the end; a deleted token leaves its parents' lists.
  write(link('p', 'c6'), unlink('p', 'c1'), link('p', 'c4'), link('p', 'c1'), link('p', 'c2'))
  write({ op: 'token.delete', tenant_id: T, id: 'c6' }, unlink('p', 'c6'), link('q', 'c5'), link('q', 'c3'))
  // `a` stages x and y, then expires; `b` and `c` take them over; `b` commits, releasing x only.
  write(tx('a', { expires_at: SOON }), ...stage('a', 'x', null, SOON), ...stage('a', 'y', null, SOON))
  write(tx('b'), ...stage('b', 'x', null), tx('c'), ...stage('c', 'y', null), ...end('b', 'committed', ['x']))
  // `d` is open with staged writes and locks; `done` committed long ago.
  write(
    tx('d', { version: 2 }),
    ...stage('d', 'w', tokenOf(put('w'))),
    ...stage('d', 'z', tokenOf(put('z', { type: 'z2' }))),
  )
  write(tx('done', { state: 'committed' }))
  write(session('s1'), session('s2', 'authorized'), session('s3'), {
    op: 'session.delete',
    tenant_id: T,
    id: 's3',
  })
  write(formula('f1', null), formula('f2', T), formula('f3', T), reactor('r1', 'f1'), reactor('r2', 'f2'))
  write(reactor('r2', 'f1'))
  return state
}

/** Everything a state answers: its dump, child lists in every mode, and every check that could differ. */
function answers(state: MemoryState) {
  const children = (
    tenant: string,
    parent: string,
    query: { ids?: string[]; types?: string[]; now?: string } = {},
  ) =>
    state
      .listChildren(tenant, parent, { offset: 0, limit: 100, now: NOW, ...query })
      .items.map((t) => `${t.id}:${t.type}`)
  const tokens = ['p', 'q', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'e', 'w', 'x', 'y', 'z', 'none']
  const txs = ['a', 'b', 'c', 'd', 'done', 'none']
  const checks: Check[] = []
  for (const id of tokens) {
    for (const now of [NOW, LATER]) {
      for (const except of [undefined, ...txs]) {
        checks.push({ check: 'token.unlocked', tenant_id: T, id, now, ...(except ? { except } : {}) })
      }
    }
    checks.push({ check: 'token.present', tenant_id: T, id }, { check: 'token.present', tenant_id: U, id })
    for (const parent of ['p', 'q'])
      checks.push({ check: 'association.present', tenant_id: T, parent_id: parent, child_id: id })
  }
  for (const id of ['s1', 's2', 's3']) {
    for (const put of [session(id), session(id, 'authorized')]) {
      if (put.op === 'session.put')
        checks.push({ check: 'session.unchanged', tenant_id: T, id, session: put.session })
    }
  }
  for (const id of ['f1', 'f2', 'f3', 'f4']) {
    checks.push(
      { check: 'formula.present', tenant_id: T, id },
      { check: 'formula.present', tenant_id: U, id },
    )
    checks.push({ check: 'formula.unused', id })
  }
  for (const id of ['app-1', 'r1', 'r2', 'none'])
    checks.push(
      { check: 'application.present', tenant_id: T, id },
      { check: 'reactor.present', tenant_id: T, id },
    )
  return {
    dump: state.dump(),
    children: [
      children(T, 'p'),
      children(T, 'p', { now: LATER }),
      children(T, 'p', { ids: ['c2', 'c1', 'c3', 'e', 'c4', 'none'] }),
      children(T, 'p', { types: ['token'] }),
      children(T, 'q'),
      children(T, 'q', { ids: ['c3', 'c1'] }),
      children(U, 'p'),
    ],
    checks: checks.map((c) => state.failedCheck([c]) === null),
    keys: ['key-app-1', 'key-s1', 'key-s2', 'key-s3', 'none'].map((hash) => state.findKey(hash)),
    sessions: ['s1', 's2', 's3'].map((id) => state.getSessionByNonce(T, `nonce-${id}`)),
    formulas: state.listFormulas(T, { offset: 0, limit: 10 }),
    expired: [NOW, LATER].map((before) =>
      (
        ['token', 'token.cvc', 'session', 'application', 'transaction.open', 'transaction.ended'] as const
      ).map((kind) => state.listExpired({ kind, before, limit: 100 })),
    ),
  }
}

/** Records as the file store hands them over: serialised, then parsed. */
const roundTrip = (records: StateRecords): StateRecords => JSON.parse(JSON.stringify(records))

describe('MemoryState records', () => {
  it('hands out the records as stored, links in per-parent link order, and every lock with its holder', () => {
    const state = seeded()
    const records = state.records()
    const ofParent = (tenant: string, parent: string) =>
      records.associations
        .filter((a) => a.tenant_id === tenant && a.parent_id === parent)
        .map((a) => a.child_id)
    expect(ofParent(T, 'p')).toEqual(['c3', 'c5', 'e', 'c4', 'c1', 'c2'])
    expect(ofParent(T, 'q')).toEqual(['c1', 'c5', 'c3'])
    expect(ofParent(U, 'p')).toEqual(['c1'])
    expect(records.associations).toHaveLength(10)
    expect([...records.locks].sort()).toEqual([
      [T, 'w', 'd'],
      [T, 'y', 'c'],
      [T, 'z', 'd'],
    ])
    // `a` still has its staged records of x and y, though it holds neither lock.
    expect(records.staged.filter((w) => w.transaction_id === 'a').map((w) => w.token_id)).toEqual(['x', 'y'])
    // Not copies: a state rebuilt from them hands out the very same objects.
    const again = MemoryState.fromRecords(records).records()
    for (const kind of Object.keys(records) as (keyof StateRecords)[]) {
      const before = records[kind] ?? []
      const after = again[kind] ?? []
      expect(after).toHaveLength(before.length)
      if (kind === 'locks') expect(again.locks).toEqual(records.locks)
      else for (const [i, record] of after.entries()) expect(record).toBe(before[i])
    }
  })

  it('fromRecords(records()) answers every read and check as the original', () => {
    const state = seeded()
    const expected = answers(state)
    expect(expected.children[0]).toEqual([
      'c3:token',
      'c5:token',
      'e:card',
      'c4:token',
      'c1:token',
      'c2:token',
    ])
    expect(expected.children[2]).toEqual(['c3:token', 'e:card', 'c4:token', 'c1:token', 'c2:token'])
    expect(answers(MemoryState.fromRecords(state.records()))).toEqual(expected)
    expect(answers(MemoryState.fromRecords(roundTrip(state.records())))).toEqual(expected)
    expect(answers(state)).toEqual(expected)
  })

  it('a rebuilt state goes on to apply ops as the original does', () => {
    const original = seeded()
    const restored = MemoryState.fromRecords(roundTrip(original.records()))
    const batches: Op[][] = [
      [unlink('p', 'c3'), link('p', 'c3'), link('q', 'c4')],
      [...stage('d', 'c2', tokenOf(put('c2', { type: 'staged' }))), ...stage('c', 'x', null)],
      [{ op: 'token.delete', tenant_id: T, id: 'c5' }, put('e', { type: 'card' })],
      [
        put('w'),
        put('z', { type: 'z2' }),
        put('c2', { type: 'staged' }),
        ...end('d', 'committed', ['w', 'z', 'c2']),
      ],
      [tx('a', { state: 'rolled_back' }), { op: 'transaction.delete', tenant_id: T, id: 'c' }],
      [
        { op: 'reactor.delete', tenant_id: T, id: 'r2' },
        { op: 'session.delete', tenant_id: T, id: 's1' },
      ],
    ]
    for (const ops of batches) {
      original.write({ ops })
      restored.write({ ops })
      expect(answers(restored)).toEqual(answers(original))
      expect(roundTrip(restored.records())).toEqual(roundTrip(original.records()))
    }
  })

  it('round-trips an empty state', () => {
    const records = new MemoryState().records()
    expect(Object.values(records).every((list) => list.length === 0)).toBe(true)
    expect(MemoryState.fromRecords(roundTrip(records)).dump()).toEqual(new MemoryState().dump())
  })
})

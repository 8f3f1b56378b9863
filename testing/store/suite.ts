import { describe, expect, it } from 'vitest'
import type { Store } from '../../src/store/contract.js'
import type { Op, StoredToken } from '../../src/types.js'
import { expiryTests } from './expiry.js'
import { guardTests } from './guards.js'
import { app, formula, LATER, NOW, session, T, token, tx, U } from './records.js'
import { serviceTests } from './service.js'

/** How a suite run gets a fresh store, and how it disposes of it. */
export interface StoreHarness {
  name: string
  /** A new, empty store, isolated from every other test's. */
  open(): Promise<Store>
  /** Closes and reopens the same store (persistent adapters only): what it acknowledged must still be there. */
  reopen?(store: Store): Promise<Store>
}

const put = (t: StoredToken): Op => ({ op: 'token.put', token: t })
const link = (parent: string, child: string, tenant = T): Op => ({
  op: 'association.put',
  association: { tenant_id: tenant, parent_id: parent, child_id: child, created_at: NOW },
})
/** The one suite every Store adapter must pass, unchanged. */
export function storeContract(harness: StoreHarness): void {
  const fresh = async () => harness.open()

  describe(`Store contract: ${harness.name}`, () => {
    it('tells whether it holds any tenant', async () => {
      const store = await fresh()
      expect(await store.hasTenants()).toBe(false)
      await store.write({ ops: [{ op: 'tenant.put', tenant: { id: T, name: 'a', created_at: NOW } }] })
      expect(await store.hasTenants()).toBe(true)
      expect(await store.getTenant(T)).toEqual({ id: T, name: 'a', created_at: NOW })
      expect(await store.getTenant(U)).toBeNull()
      await store.close()
    })

    it('writes tokens and reads back copies scoped by tenant', async () => {
      const store = await fresh()
      expect(await store.write({ ops: [put(token('a'))] })).toEqual({ ok: true })
      const got = await store.getToken(T, 'a')
      expect(got).toEqual(token('a'))
      ;(got!.data as { value: string }).value = 'mutated'
      expect((await store.getToken(T, 'a'))!.data).toEqual({ value: 'a' })
      expect(await store.getToken(U, 'a')).toBeNull()
      expect(await store.getToken(T, 'missing')).toBeNull()
      await store.close()
    })

    it('refuses a whole batch when one check fails, and writes nothing', async () => {
      const store = await fresh()
      await store.write({ ops: [put(token('a'))] })
      const before = await store.dump()
      const result = await store.write({
        checks: [
          { check: 'token.absent', tenant_id: T, id: 'b' },
          { check: 'token.absent', tenant_id: T, id: 'a' },
        ],
        ops: [put(token('b')), put(token('c'))],
      })
      expect(result).toEqual({ ok: false, failed: { check: 'token.absent', tenant_id: T, id: 'a' } })
      expect(await store.dump()).toEqual(before)
      await store.close()
    })

    it('evaluates token and association checks', async () => {
      const store = await fresh()
      await store.write({ ops: [put(token('p')), put(token('c')), link('p', 'c')] })
      const ok = async (check: Parameters<Store['write']>[0]['checks']) =>
        (await store.write({ checks: check ?? [], ops: [] })).ok
      expect(await ok([{ check: 'token.present', tenant_id: T, id: 'p' }])).toBe(true)
      expect(await ok([{ check: 'token.present', tenant_id: U, id: 'p' }])).toBe(false)
      expect(await ok([{ check: 'association.present', tenant_id: T, parent_id: 'p', child_id: 'c' }])).toBe(
        true,
      )
      expect(await ok([{ check: 'association.present', tenant_id: T, parent_id: 'c', child_id: 'p' }])).toBe(
        false,
      )
      expect(await ok([{ check: 'association.absent', tenant_id: T, parent_id: 'p', child_id: 'c' }])).toBe(
        false,
      )
      expect(await store.hasAssociation(T, 'p', 'c')).toBe(true)
      expect(await store.hasAssociation(U, 'p', 'c')).toBe(false)
      await store.close()
    })

    it('token.unchanged holds only for the token exactly as stored', async () => {
      const store = await fresh()
      const t = token('a', { metadata: { k: 'v' }, data: { x: [1, { y: 'z' }] } })
      await store.write({ ops: [put(t)] })
      const holds = async (candidate: StoredToken, tenant = T) =>
        (
          await store.write({
            checks: [{ check: 'token.unchanged', tenant_id: tenant, id: 'a', token: candidate }],
            ops: [],
          })
        ).ok
      expect(await holds(t)).toBe(true)
      expect(await holds({ ...t, data: { x: [1, { y: 'z' }] }, metadata: { k: 'v' } })).toBe(true)
      expect(await holds({ ...t, metadata: { k: 'w' } })).toBe(false)
      expect(await holds({ ...t, data: { x: [1, { y: 'z' }], extra: 1 } })).toBe(false)
      expect(await holds(t, U)).toBe(false)
      await store.write({ ops: [put({ ...t, modified_at: LATER })] })
      expect(await holds(t)).toBe(false)
      await store.write({ ops: [{ op: 'token.delete', tenant_id: T, id: 'a' }] })
      expect(await holds(t)).toBe(false)
      await store.close()
    })

    it('deleting a token removes its associations both ways', async () => {
      const store = await fresh()
      await store.write({
        ops: [
          put(token('a')),
          put(token('b')),
          put(token('c')),
          link('a', 'b'),
          link('b', 'c'),
          link('a', 'c'),
        ],
      })
      await store.write({ ops: [{ op: 'token.delete', tenant_id: T, id: 'b' }] })
      expect(await store.hasAssociation(T, 'a', 'b')).toBe(false)
      expect(await store.hasAssociation(T, 'b', 'c')).toBe(false)
      expect(await store.hasAssociation(T, 'a', 'c')).toBe(true)
      // A re-created token with the same id has no links.
      await store.write({ ops: [put(token('b'))] })
      expect((await store.listChildren(T, 'b', { offset: 0, limit: 10, now: NOW })).total).toBe(0)
      expect((await store.dump()).associations).toHaveLength(1)
      await store.close()
    })

    it('skips an association whose tokens are absent', async () => {
      const store = await fresh()
      await store.write({ ops: [put(token('a')), link('a', 'ghost'), link('ghost', 'a')] })
      expect((await store.dump()).associations).toEqual([])
      await store.close()
    })

    it('lists children in link order with id and type filters, paging and expiry', async () => {
      const store = await fresh()
      const ops: Op[] = [put(token('p'))]
      for (let i = 0; i < 7; i++) {
        ops.push(put(token(`c${i}`, { type: i % 2 ? 'odd' : 'even' })), link('p', `c${i}`))
      }
      ops.push(put(token('old', { expires_at: NOW })), link('p', 'old'))
      await store.write({ ops })
      const list = (q: { ids?: string[]; types?: string[]; offset?: number; limit?: number }) =>
        store.listChildren(T, 'p', { offset: 0, limit: 100, now: NOW, ...q })
      const all = await list({})
      expect(all.total).toBe(7)
      expect(all.items.map((t) => t.id)).toEqual(['c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6'])
      const page = await list({ offset: 2, limit: 3 })
      expect(page).toMatchObject({ total: 7 })
      expect(page.items.map((t) => t.id)).toEqual(['c2', 'c3', 'c4'])
      expect((await list({ types: ['odd'] })).items.map((t) => t.id)).toEqual(['c1', 'c3', 'c5'])
      const byId = await list({ ids: ['c4', 'c1', 'nope', 'old'] })
      expect(byId.items.map((t) => t.id)).toEqual(['c1', 'c4'])
      expect((await list({ ids: ['c1', 'c2'], types: ['even'] })).items.map((t) => t.id)).toEqual(['c2'])
      expect((await store.listChildren(U, 'p', { offset: 0, limit: 10, now: NOW })).total).toBe(0)
      // Not yet expired one millisecond earlier.
      const before = await store.listChildren(T, 'p', {
        offset: 0,
        limit: 100,
        now: '2029-12-31T23:59:59.999Z',
      })
      expect(before.total).toBe(8)
      await store.close()
    })

    it('honours an expiry given to a child after it was linked, and one taken away', async () => {
      const store = await fresh()
      await store.write({
        ops: [put(token('p')), put(token('a')), put(token('b')), link('p', 'a'), link('p', 'b')],
      })
      const ids = async () =>
        (await store.listChildren(T, 'p', { offset: 0, limit: 10, now: NOW })).items.map((t) => t.id)
      await store.write({ ops: [put(token('a', { expires_at: NOW }))] })
      expect(await ids()).toEqual(['b'])
      expect((await store.listChildren(T, 'p', { offset: 0, limit: 10, now: NOW })).total).toBe(1)
      await store.write({ ops: [put(token('a'))] })
      expect(await ids()).toEqual(['a', 'b'])
      await store.write({
        ops: [put(token('b', { expires_at: NOW })), { op: 'token.delete', tenant_id: T, id: 'b' }],
      })
      expect(await ids()).toEqual(['a'])
      expect((await store.listChildren(T, 'p', { offset: 0, limit: 10, now: NOW })).total).toBe(1)
      await store.close()
    })

    it('finds applications and sessions by key hash; deleting drops the key', async () => {
      const store = await fresh()
      await store.write({ ops: [{ op: 'application.put', application: app('a1') }] })
      await store.write({ ops: [{ op: 'session.put', session: session('s1') }] })
      expect(await store.findKey('hash-a1')).toEqual({ kind: 'application', application: app('a1') })
      expect(await store.findKey('key-s1')).toEqual({ kind: 'session', session: session('s1') })
      expect(await store.findKey('nope')).toBeNull()
      // Re-keying an application drops the old hash.
      await store.write({
        ops: [{ op: 'application.put', application: { ...app('a1'), key_hash: 'hash-new' } }],
      })
      expect(await store.findKey('hash-a1')).toBeNull()
      expect((await store.findKey('hash-new'))?.kind).toBe('application')
      await store.write({ ops: [{ op: 'application.delete', tenant_id: T, id: 'a1' }] })
      await store.write({ ops: [{ op: 'session.delete', tenant_id: T, id: 's1' }] })
      expect(await store.findKey('hash-new')).toBeNull()
      expect(await store.findKey('key-s1')).toBeNull()
      expect(await store.getSessionByNonce(T, 'nonce-s1')).toBeNull()
      await store.close()
    })

    it('lists applications of one tenant in creation order, paged', async () => {
      const store = await fresh()
      const ops: Op[] = []
      for (let i = 0; i < 5; i++) {
        ops.push({
          op: 'application.put',
          application: { ...app(`a${i}`), created_at: `2030-01-0${i + 1}T00:00:00.000Z` },
        })
      }
      ops.push({ op: 'application.put', application: app('other', U) })
      await store.write({ ops })
      const page = await store.listApplications(T, { offset: 1, limit: 2 })
      expect(page.total).toBe(5)
      expect(page.items.map((a) => a.id)).toEqual(['a1', 'a2'])
      expect(await store.getApplication(U, 'a1')).toBeNull()
      expect((await store.getApplication(T, 'a1'))?.id).toBe('a1')
      await store.close()
    })

    it('locks the tokens an open, unexpired transaction lists, and releases them when it ends', async () => {
      const store = await fresh()
      const open = tx('t1')
      await store.write({ ops: [{ op: 'transaction.put', transaction: open }] })
      const staged = await store.write({
        checks: [
          { check: 'transaction.open', tenant_id: T, id: 't1', now: NOW },
          { check: 'transaction.unchanged', tenant_id: T, id: 't1', transaction: open },
        ],
        ops: [{ op: 'transaction.put', transaction: { ...open, writes: [put(token('x'))], locks: ['x'] } }],
      })
      expect(staged.ok).toBe(true)
      const unlocked = (now: string, except?: string, id = 'x') =>
        store
          .write({
            checks: [{ check: 'token.unlocked', tenant_id: T, id, now, ...(except ? { except } : {}) }],
            ops: [],
          })
          .then((r) => r.ok)
      expect(await unlocked(NOW)).toBe(false)
      expect(await unlocked(NOW, 't1')).toBe(true)
      expect(await unlocked(LATER)).toBe(true) // expired transactions hold no lock
      expect(await store.getToken(T, 'x')).toBeNull() // staged, not applied
      const stored = await store.getTransaction(T, 't1')
      expect(stored?.writes).toEqual([put(token('x'))])
      expect(stored?.locks).toEqual(['x'])
      expect(await store.getTransaction(U, 't1')).toBeNull()
      // A put that no longer lists a lock releases it; one that lists another takes it.
      await store.write({ ops: [{ op: 'transaction.put', transaction: { ...stored!, locks: ['y'] } }] })
      expect(await unlocked(NOW)).toBe(true)
      expect(await unlocked(NOW, undefined, 'y')).toBe(false)
      // Ending the transaction releases its locks.
      await store.write({ ops: [{ op: 'transaction.put', transaction: tx('t1', { state: 'rolled_back' }) }] })
      expect(await unlocked(NOW, undefined, 'y')).toBe(true)
      await store.close()
    })

    it('commits as the core does: staged writes and the end in one write guarded on the transaction read', async () => {
      const store = await fresh()
      await store.write({ ops: [put(token('p')), { op: 'transaction.put', transaction: tx('t1') }] })
      /** Stages like the core: read, append, put guarded on unchanged; start over on a conflict. */
      const stage = async (writes: Op[], locks: string[]) => {
        for (;;) {
          const current = (await store.getTransaction(T, 't1'))!
          const result = await store.write({
            checks: [
              { check: 'transaction.open', tenant_id: T, id: 't1', now: NOW },
              { check: 'transaction.unchanged', tenant_id: T, id: 't1', transaction: current },
            ],
            ops: [
              {
                op: 'transaction.put',
                transaction: {
                  ...current,
                  writes: [...current.writes, ...writes],
                  locks: [...new Set([...current.locks, ...locks])],
                },
              },
            ],
          })
          if (result.ok || result.failed.check !== 'transaction.unchanged') return result
        }
      }
      await stage([put(token('c'))], ['c'])
      await stage([link('p', 'c')], [])
      await stage([put(token('c', { metadata: { v: '2' } }))], ['c'])
      const read = (await store.getTransaction(T, 't1'))!
      const commit = (seen = read) =>
        store.write({
          checks: [
            { check: 'transaction.open', tenant_id: T, id: 't1', now: NOW },
            { check: 'transaction.unchanged', tenant_id: T, id: 't1', transaction: seen },
          ],
          ops: [
            ...seen.writes,
            { op: 'transaction.put', transaction: { ...seen, state: 'committed', writes: [], locks: [] } },
          ],
        })
      // A commit built on an earlier read fails its guard and writes nothing.
      const stale = await commit({ ...read, writes: read.writes.slice(0, 1) })
      expect(stale).toMatchObject({ ok: false, failed: { check: 'transaction.unchanged' } })
      expect(await store.getToken(T, 'c')).toBeNull()
      expect((await commit()).ok).toBe(true)
      expect((await store.getToken(T, 'c'))?.metadata).toEqual({ v: '2' })
      expect(await store.hasAssociation(T, 'p', 'c')).toBe(true)
      expect(await store.getTransaction(T, 't1')).toMatchObject({ state: 'committed', writes: [], locks: [] })
      const unlocked = await store.write({
        checks: [{ check: 'token.unlocked', tenant_id: T, id: 'c', now: NOW }],
        ops: [],
      })
      expect(unlocked.ok).toBe(true)
      expect((await commit()).ok).toBe(false)
      expect((await stage([put(token('late'))], ['late'])).ok).toBe(false)
      expect(await store.getToken(T, 'late')).toBeNull()
      await store.close()
    })

    it('lets exactly one of 100 concurrent commits of one transaction win', async () => {
      const store = await fresh()
      const open = tx('t1', { writes: [put(token('x'))], locks: ['x'] })
      await store.write({ ops: [{ op: 'transaction.put', transaction: open }] })
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          store.write({
            checks: [
              { check: 'transaction.open', tenant_id: T, id: 't1', now: NOW },
              { check: 'transaction.unchanged', tenant_id: T, id: 't1', transaction: open },
            ],
            ops: [
              ...open.writes,
              { op: 'transaction.put', transaction: { ...open, state: 'committed', writes: [], locks: [] } },
              put(token(`w${i}`)),
            ],
          }),
        ),
      )
      expect(results.filter((r) => r.ok)).toHaveLength(1)
      expect((await store.getTransaction(T, 't1'))?.state).toBe('committed')
      expect(await store.getToken(T, 'x')).not.toBeNull()
      expect((await store.dump()).tokens.filter((t) => t.id.startsWith('w'))).toHaveLength(1)
      await store.close()
    })

    it('of 100 concurrent compare-and-set puts of one token exactly one wins', async () => {
      const store = await fresh()
      const t = token('cas')
      await store.write({ ops: [put(t)] })
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          store.write({
            checks: [{ check: 'token.unchanged', tenant_id: T, id: 'cas', token: t }],
            ops: [put(token('cas', { metadata: { by: String(i) } }))],
          }),
        ),
      )
      const winners = results.flatMap((r, i) => (r.ok ? [i] : []))
      expect(winners).toHaveLength(1)
      expect((await store.getToken(T, 'cas'))?.metadata).toEqual({ by: String(winners[0]) })
      await store.close()
    })

    it('lets exactly one of 100 concurrent authorizations of one nonce win', async () => {
      const store = await fresh()
      await store.write({ ops: [{ op: 'session.put', session: session('s1') }] })
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          store.write({
            checks: [{ check: 'session.pending', tenant_id: T, nonce_hash: 'nonce-s1', now: NOW }],
            ops: [
              {
                op: 'session.put',
                session: session('s1', {
                  state: 'authorized',
                  permissions: ['token:read'],
                  authorized_by: `a${i}`,
                }),
              },
            ],
          }),
        ),
      )
      expect(results.filter((r) => r.ok)).toHaveLength(1)
      const winner = await store.getSessionByNonce(T, 'nonce-s1')
      expect(winner?.state).toBe('authorized')
      const pending = await store.write({
        checks: [{ check: 'session.pending', tenant_id: T, nonce_hash: 'nonce-s1', now: NOW }],
        ops: [],
      })
      expect(pending.ok).toBe(false)
      await store.close()
    })

    it('does not treat an expired session as pending', async () => {
      const store = await fresh()
      await store.write({ ops: [{ op: 'session.put', session: session('s1') }] })
      const result = await store.write({
        checks: [
          { check: 'session.pending', tenant_id: T, nonce_hash: 'nonce-s1', now: '2030-01-01T00:03:00.000Z' },
        ],
        ops: [],
      })
      expect(result.ok).toBe(false)
      expect(
        (
          await store.write({
            checks: [{ check: 'session.pending', tenant_id: U, nonce_hash: 'nonce-s1', now: NOW }],
            ops: [],
          })
        ).ok,
      ).toBe(false)
      await store.close()
    })

    it('shows tenants official formulas and their own, filtered by name and paged', async () => {
      const store = await fresh()
      await store.write({
        ops: [
          { op: 'formula.put', formula: formula('f1', 'Card Lookup', null) },
          { op: 'formula.put', formula: formula('f2', 'card enrich') },
          { op: 'formula.put', formula: formula('f3', 'Bank Verify') },
          { op: 'formula.put', formula: formula('f4', 'Card Secret', U) },
        ],
      })
      const names = async (name?: string, offset = 0, limit = 10) =>
        (await store.listFormulas(T, { offset, limit, ...(name === undefined ? {} : { name }) })).items.map(
          (f) => f.name,
        )
      expect(await names()).toEqual(['Bank Verify', 'Card Lookup', 'card enrich'])
      expect(await names('CARD')).toEqual(['Card Lookup', 'card enrich'])
      expect(await names('card*')).toEqual(['Card Lookup', 'card enrich'])
      expect(await names('*verify')).toEqual(['Bank Verify'])
      expect(await names('c*k*p')).toEqual(['Card Lookup'])
      expect(await names('.*')).toEqual([])
      expect(await names(undefined, 1, 1)).toEqual(['Card Lookup'])
      expect((await store.listFormulas(T, { offset: 0, limit: 1 })).total).toBe(3)
      expect((await store.getFormula(T, 'f1'))?.type).toBe('official')
      expect(await store.getFormula(T, 'f4')).toBeNull()
      expect((await store.getFormula(U, 'f4'))?.name).toBe('Card Secret')
      expect(await store.getFormula(null, 'f2')).toBeNull()
      await store.close()
    })

    it('tracks whether a formula is in use by reactors of any tenant', async () => {
      const store = await fresh()
      const reactor = (id: string, formulaId: string, tenant = T) => ({
        id,
        tenant_id: tenant,
        name: id,
        formula_id: formulaId,
        configuration: { a: 1 },
        created_at: NOW,
        created_by: 'app-1',
      })
      await store.write({ ops: [{ op: 'formula.put', formula: formula('f1', 'One', null) }] })
      const unused = async () =>
        (await store.write({ checks: [{ check: 'formula.unused', id: 'f1' }], ops: [] })).ok
      expect(await unused()).toBe(true)
      await store.write({ ops: [{ op: 'reactor.put', reactor: reactor('r1', 'f1') }] })
      await store.write({ ops: [{ op: 'reactor.put', reactor: reactor('r2', 'f1', U) }] })
      expect(await unused()).toBe(false)
      expect((await store.listReactors(T, { offset: 0, limit: 10 })).items.map((r) => r.id)).toEqual(['r1'])
      expect(await store.getReactor(U, 'r1')).toBeNull()
      await store.write({ ops: [{ op: 'reactor.delete', tenant_id: T, id: 'r1' }] })
      expect(await unused()).toBe(false)
      await store.write({ ops: [{ op: 'reactor.put', reactor: { ...reactor('r2', 'f2', U) } }] })
      expect(await unused()).toBe(true)
      const present = (tenant: string, id: string) =>
        store
          .write({ checks: [{ check: 'reactor.present', tenant_id: tenant, id }], ops: [] })
          .then((r) => r.ok)
      expect(await present(U, 'r2')).toBe(true)
      expect(await present(T, 'r2')).toBe(false)
      await store.close()
    })

    guardTests(fresh)
    expiryTests(fresh)
    serviceTests(fresh)

    if (harness.reopen) {
      const reopen = harness.reopen
      it('keeps every acknowledged write across a reopen', async () => {
        const store = await fresh()
        await store.write({ ops: [put(token('p')), put(token('c')), link('p', 'c')] })
        await store.write({ ops: [{ op: 'session.put', session: session('s1') }] })
        await store.write({ ops: [{ op: 'transaction.put', transaction: tx('t1') }] })
        await store.write({
          ops: [
            { op: 'transaction.put', transaction: tx('t1', { writes: [put(token('x'))], locks: ['x'] }) },
          ],
        })
        await store.write({ ops: [{ op: 'token.delete', tenant_id: T, id: 'c' }] })
        const before = await store.dump()
        const again = await reopen(store)
        expect(await again.dump()).toEqual(before)
        expect((await again.findKey('key-s1'))?.kind).toBe('session')
        const locked = await again.write({
          checks: [{ check: 'token.unlocked', tenant_id: T, id: 'x', now: NOW }],
          ops: [],
        })
        expect(locked.ok).toBe(false)
        await again.close()
      })
    }
  })
}

export { token }

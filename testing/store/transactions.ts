import { expect, it } from 'vitest'
import type { Check, Op } from '../../src/kernel/types.js'
import type { Store } from '../../src/store/contract.js'
import { LATER, link, lock, NOW, put, T, token, tx, U, unlock } from './records.js'

/**
 * Transactions as the core runs them: lock records, staging and commit as guarded puts, 100-way
 * commit races. Registered inside the store suite's `describe`.
 */
export function transactionsTests(fresh: () => Promise<Store>): void {
  it('locks a token by its lock record: held until deleted or expired, by no one else', async () => {
    const store = await fresh()
    const open = tx('t1')
    await store.write({ ops: [{ op: 'transaction.put', transaction: open }] })
    const unlocked = (now: string, except?: string, id = 'x') =>
      store
        .write({
          checks: [{ check: 'token.unlocked', tenant_id: T, id, now, ...(except ? { except } : {}) }],
          ops: [],
        })
        .then((r) => r.ok)
    const held = (id: string, transactionId: string) =>
      store
        .write({
          checks: [{ check: 'lock.held', tenant_id: T, token_id: id, transaction_id: transactionId }],
          ops: [],
        })
        .then((r) => r.ok)
    // A transaction that lists a token holds no lock on it: only a lock record does.
    await store.write({ ops: [{ op: 'transaction.put', transaction: { ...open, locks: ['x'] } }] })
    expect(await unlocked(NOW)).toBe(true)
    expect(await held('x', 't1')).toBe(false)
    const staged = await store.write({
      checks: [
        { check: 'transaction.unchanged', tenant_id: T, id: 't1', transaction: { ...open, locks: ['x'] } },
        { check: 'token.unlocked', tenant_id: T, id: 'x', now: NOW, except: 't1' },
      ],
      ops: [
        { op: 'transaction.put', transaction: { ...open, writes: [put(token('x'))], locks: ['x'] } },
        lock('x', 't1'),
      ],
    })
    expect(staged.ok).toBe(true)
    expect(await unlocked(NOW)).toBe(false)
    expect(await unlocked(NOW, 't1')).toBe(true)
    expect(await unlocked(NOW, 't2')).toBe(false)
    expect(await unlocked('2030-01-01T01:00:00.000Z')).toBe(true) // at expires_at it is over
    expect(await unlocked(LATER)).toBe(true)
    expect(await unlocked(NOW, undefined, 'y')).toBe(true)
    expect(await held('x', 't1')).toBe(true)
    expect(await held('x', 't2')).toBe(false)
    expect(await held('y', 't1')).toBe(false)
    // Another tenant's token of the same id is not locked.
    const other = await store.write({
      checks: [{ check: 'token.unlocked', tenant_id: U, id: 'x', now: NOW }],
      ops: [],
    })
    expect(other.ok).toBe(true)
    expect(await store.getToken(T, 'x')).toBeNull() // staged, not applied
    const stored = await store.getTransaction(T, 't1')
    expect(stored?.writes).toEqual([put(token('x'))])
    expect(stored?.locks).toEqual(['x'])
    expect(await store.getTransaction(U, 't1')).toBeNull()
    // A put of the record naming another transaction passes the lock on.
    await store.write({ ops: [lock('x', 't2', LATER)] })
    expect(await held('x', 't1')).toBe(false)
    expect(await held('x', 't2')).toBe(true)
    expect(await unlocked(LATER)).toBe(true)
    expect(await unlocked('2030-01-01T01:30:00.000Z')).toBe(false)
    // Ending or deleting a transaction releases nothing by itself: the lock record goes by its delete.
    await store.write({ ops: [{ op: 'transaction.put', transaction: tx('t2', { state: 'rolled_back' }) }] })
    await store.write({ ops: [{ op: 'transaction.delete', tenant_id: T, id: 't1' }] })
    expect(await unlocked(NOW)).toBe(false)
    await store.write({ ops: [unlock('x'), unlock('never-locked')] })
    expect(await unlocked(NOW)).toBe(true)
    expect(await held('x', 't2')).toBe(false)
    await store.close()
  })

  it('lock.held refuses the write that would release a lock another transaction took over', async () => {
    const store = await fresh()
    const a = tx('a', { expires_at: NOW, locks: ['x', 'y'] })
    await store.write({
      ops: [{ op: 'transaction.put', transaction: a }, lock('x', 'a', NOW), lock('y', 'a', NOW)],
    })
    // `a` expired at NOW; `b` takes x over, guarded on x being unlocked for it.
    const taken = await store.write({
      checks: [{ check: 'token.unlocked', tenant_id: T, id: 'x', now: NOW, except: 'b' }],
      ops: [{ op: 'transaction.put', transaction: tx('b', { locks: ['x'] }) }, lock('x', 'b')],
    })
    expect(taken.ok).toBe(true)
    const end = (tokens: string[]) =>
      store.write({
        checks: [
          { check: 'transaction.unchanged', tenant_id: T, id: 'a', transaction: a },
          ...tokens.map(
            (id): Check => ({ check: 'lock.held', tenant_id: T, token_id: id, transaction_id: 'a' }),
          ),
        ],
        ops: [
          { op: 'transaction.put', transaction: { ...a, state: 'expired', locks: [] } },
          ...tokens.map((id) => unlock(id)),
        ],
      })
    const refused = await end(['x', 'y'])
    expect(refused).toEqual({
      ok: false,
      failed: { check: 'lock.held', tenant_id: T, token_id: 'x', transaction_id: 'a' },
    })
    expect((await store.getTransaction(T, 'a'))?.state).toBe('open')
    expect((await end(['y'])).ok).toBe(true)
    const unlocked = async (id: string) =>
      (await store.write({ checks: [{ check: 'token.unlocked', tenant_id: T, id, now: NOW }], ops: [] })).ok
    expect(await unlocked('x')).toBe(false) // still b's
    expect(await unlocked('y')).toBe(true)
    await store.close()
  })

  it('commits as the core does: staged writes and the end in one write guarded on the transaction read', async () => {
    const store = await fresh()
    await store.write({ ops: [put(token('p')), { op: 'transaction.put', transaction: tx('t1') }] })
    /** Stages like the core: read, check open, append, lock, put guarded on unchanged; start over on a conflict. */
    const stage = async (writes: Op[], locks: string[]) => {
      for (;;) {
        const current = (await store.getTransaction(T, 't1'))!
        // The core stages only into a transaction it read as open and unexpired.
        if (current.state !== 'open' || current.expires_at <= NOW) return { ok: false }
        const result = await store.write({
          checks: [
            { check: 'transaction.unchanged', tenant_id: T, id: 't1', transaction: current },
            ...locks.map(
              (id): Check => ({ check: 'token.unlocked', tenant_id: T, id, now: NOW, except: 't1' }),
            ),
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
            ...locks.map((id) => lock(id, 't1')),
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
          { check: 'transaction.unchanged', tenant_id: T, id: 't1', transaction: seen },
          ...seen.locks.map(
            (id): Check => ({ check: 'lock.held', tenant_id: T, token_id: id, transaction_id: 't1' }),
          ),
        ],
        ops: [
          ...seen.writes,
          { op: 'transaction.put', transaction: { ...seen, state: 'committed', writes: [], locks: [] } },
          ...seen.locks.map((id) => unlock(id)),
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
          checks: [{ check: 'transaction.unchanged', tenant_id: T, id: 't1', transaction: open }],
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

  it('a transaction of 2 000 staged writes commits all in one write, rolls back all, or expires with none applied', async () => {
    const ids = Array.from({ length: 2000 }, (_, i) => `big-${String(i).padStart(4, '0')}`)
    const writes = ids.map((id) => put(token(id, { type: 'bulk', metadata: { n: id } })))
    for (const end of ['committed', 'rolled_back', 'expired'] as const) {
      const store = await fresh()
      const open = tx('t-big', { writes, locks: ids })
      const staged = await store.write({
        ops: [{ op: 'transaction.put', transaction: open }, ...ids.map((id) => lock(id, 't-big'))],
      })
      expect(staged.ok).toBe(true)
      expect(await store.findTokenIds(T, { limit: 10 })).toEqual([])
      const ended = { ...open, state: end, writes: [], locks: [], ended_at: NOW }
      const result = await store.write({
        checks: [
          { check: 'transaction.unchanged', tenant_id: T, id: 't-big', transaction: open },
          ...ids.map(
            (id): Check => ({ check: 'lock.held', tenant_id: T, token_id: id, transaction_id: 't-big' }),
          ),
        ],
        ops: [
          ...(end === 'committed' ? writes : []),
          { op: 'transaction.put', transaction: ended },
          ...ids.map((id) => unlock(id)),
        ],
      })
      expect(result.ok, end).toBe(true)
      const applied = end === 'committed' ? ids : []
      expect(
        (await store.findTokenIds(T, { limit: 5000, term: { kind: 'type', value: 'bulk' } })).length,
        end,
      ).toBe(applied.length)
      expect(
        (await store.getTokens(T, [ids[0]!, ids[1999]!])).map((t) => t.id),
        end,
      ).toEqual(end === 'committed' ? [ids[0], ids[1999]] : [])
      expect((await store.getTransaction(T, 't-big'))?.state).toBe(end)
      // Every lock is released: another transaction may write each token.
      const free = await store.write({
        checks: ids.map((id): Check => ({ check: 'token.unlocked', tenant_id: T, id, now: NOW })),
        ops: [],
      })
      expect(free.ok, end).toBe(true)
      await store.close()
    }
  }, 60_000)
}

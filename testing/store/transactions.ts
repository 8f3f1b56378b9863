import { expect, it } from 'vitest'
import type { Store } from '../../src/store/contract.js'
import type { Op } from '../../src/types.js'
import { LATER, link, NOW, put, T, token, tx, U } from './records.js'

/** Transactions as the core runs them: locks, staging and commit as guarded puts, 100-way commit races. Registered inside the store suite's `describe`. */
export function transactionsTests(fresh: () => Promise<Store>): void {
  it('locks the tokens an open, unexpired transaction lists, and releases them when it ends', async () => {
    const store = await fresh()
    const open = tx('t1')
    await store.write({ ops: [{ op: 'transaction.put', transaction: open }] })
    const staged = await store.write({
      checks: [{ check: 'transaction.unchanged', tenant_id: T, id: 't1', transaction: open }],
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
    /** Stages like the core: read, check open, append, put guarded on unchanged; start over on a conflict. */
    const stage = async (writes: Op[], locks: string[]) => {
      for (;;) {
        const current = (await store.getTransaction(T, 't1'))!
        // The core stages only into a transaction it read as open and unexpired.
        if (current.state !== 'open' || current.expires_at <= NOW) return { ok: false }
        const result = await store.write({
          checks: [{ check: 'transaction.unchanged', tenant_id: T, id: 't1', transaction: current }],
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
        checks: [{ check: 'transaction.unchanged', tenant_id: T, id: 't1', transaction: seen }],
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
}

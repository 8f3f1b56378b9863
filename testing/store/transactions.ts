import { expect, it } from 'vitest'
import type { StoredToken } from '../../src/kernel/index.js'
import type { Check, Op, Store } from '../../src/store/index.js'
import { LATER, lock, NOW, put, stage, T, token, tx, U, unlock, unstage } from './records.js'

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
    // A staged record holds no lock on its token: only a lock record does.
    await store.write({ ops: [stage('t1', 'x', token('x'))] })
    expect(await unlocked(NOW)).toBe(true)
    expect(await held('x', 't1')).toBe(false)
    const staged = await store.write({
      checks: [
        { check: 'transaction.unchanged', tenant_id: T, id: 't1', transaction: open },
        { check: 'token.unlocked', tenant_id: T, id: 'x', now: NOW, except: 't1' },
      ],
      ops: [
        { op: 'transaction.put', transaction: { ...open, version: 1 } },
        lock('x', 't1'),
        stage('t1', 'x', token('x')),
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
    expect(await store.getTransaction(T, 't1')).toEqual({ ...open, version: 1 })
    expect(await store.getStaged(T, 't1', ['x'])).toEqual([
      { tenant_id: T, transaction_id: 't1', token_id: 'x', seq: 1, token: token('x') },
    ])
    expect(await store.getTransaction(U, 't1')).toBeNull()
    expect(await store.getStaged(U, 't1', ['x'])).toEqual([])
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
    const a = tx('a', { expires_at: NOW })
    await store.write({
      ops: [{ op: 'transaction.put', transaction: a }, lock('x', 'a', NOW), lock('y', 'a', NOW)],
    })
    // `a` expired at NOW; `b` takes x over, guarded on x being unlocked for it.
    const taken = await store.write({
      checks: [{ check: 'token.unlocked', tenant_id: T, id: 'x', now: NOW, except: 'b' }],
      ops: [{ op: 'transaction.put', transaction: tx('b') }, lock('x', 'b')],
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
          { op: 'transaction.put', transaction: { ...a, state: 'expired' } },
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

  it('keeps staged records by tenant, transaction and token: read by key, listed in token id order', async () => {
    const store = await fresh()
    // A record may say the token is new to the store (`creates`): kept as put, staged deleted or not.
    const created = (op: Op): Op =>
      op.op === 'staged.put' ? { ...op, staged: { ...op.staged, creates: true } } : op
    await store.write({
      ops: [
        stage('t1', 'b', token('b'), 2),
        created(stage('t1', 'a', token('a'), 1)),
        created(stage('t1', 'c', null, 3)),
        stage('t2', 'a', token('a', { type: 'other' })),
        stage('t1', 'a', token('a'), 1, U),
      ],
    })
    const ids = async (txId: string, query: { after?: string; limit: number }, tenant = T) =>
      (await store.listStaged(tenant, txId, query)).map((w) => w.token_id)
    expect(await ids('t1', { limit: 10 })).toEqual(['a', 'b', 'c'])
    expect(await ids('t1', { limit: 2 })).toEqual(['a', 'b'])
    expect(await ids('t1', { after: 'a', limit: 10 })).toEqual(['b', 'c'])
    expect(await ids('t1', { after: 'c', limit: 10 })).toEqual([])
    expect(await ids('t1', { limit: 0 })).toEqual([])
    expect(await ids('t2', { limit: 10 })).toEqual(['a'])
    expect(await ids('t1', { limit: 10 }, U)).toEqual(['a'])
    expect(await ids('t3', { limit: 10 })).toEqual([])
    const got = await store.getStaged(T, 't1', ['c', 'zz', 'a', 'c'])
    expect(got).toEqual([
      { tenant_id: T, transaction_id: 't1', token_id: 'c', seq: 3, token: null, creates: true },
      { tenant_id: T, transaction_id: 't1', token_id: 'a', seq: 1, token: token('a'), creates: true },
    ])
    expect(await store.listStaged(T, 't1', { limit: 10 })).toEqual([
      { tenant_id: T, transaction_id: 't1', token_id: 'a', seq: 1, token: token('a'), creates: true },
      { tenant_id: T, transaction_id: 't1', token_id: 'b', seq: 2, token: token('b') },
      { tenant_id: T, transaction_id: 't1', token_id: 'c', seq: 3, token: null, creates: true },
    ])
    // A put replaces the record (its `creates` too); a delete removes it (a missing one: nothing).
    await store.write({ ops: [stage('t1', 'a', null, 4), unstage('t1', 'b'), unstage('t1', 'never')] })
    expect(await store.listStaged(T, 't1', { limit: 10 })).toEqual([
      { tenant_id: T, transaction_id: 't1', token_id: 'a', seq: 4, token: null },
      { tenant_id: T, transaction_id: 't1', token_id: 'c', seq: 3, token: null, creates: true },
    ])
    expect(
      (await store.dump()).staged.map((w) => `${w.tenant_id}/${w.transaction_id}/${w.token_id}`),
    ).toEqual([`${T}/t1/a`, `${T}/t1/c`, `${T}/t2/a`, `${U}/t1/a`])
    await store.close()
  })

  it('commits as the core does: staged records applied and cleared in one write guarded on the transaction read', async () => {
    const store = await fresh()
    await store.write({ ops: [put(token('p')), { op: 'transaction.put', transaction: tx('t1') }] })
    /** Stages like the core: read, check open, put the record and lock, bump the version guarded on unchanged. */
    const stageAs = async (id: string, t: StoredToken | null) => {
      for (;;) {
        const current = (await store.getTransaction(T, 't1'))!
        // The core stages only into a transaction it read as open and unexpired.
        if (current.state !== 'open' || current.expires_at <= NOW) return { ok: false }
        const version = current.version + 1
        const result = await store.write({
          checks: [
            { check: 'transaction.unchanged', tenant_id: T, id: 't1', transaction: current },
            { check: 'token.unlocked', tenant_id: T, id, now: NOW, except: 't1' },
          ],
          ops: [
            { op: 'transaction.put', transaction: { ...current, version } },
            lock(id, 't1'),
            stage('t1', id, t, version),
          ],
        })
        if (result.ok || result.failed.check !== 'transaction.unchanged') return result
      }
    }
    await stageAs('c', token('c'))
    await stageAs('p', null)
    await stageAs('c', token('c', { metadata: { v: '2' } }))
    const read = (await store.getTransaction(T, 't1'))!
    expect(read.version).toBe(3)
    const commit = async (seen = read) => {
      const staged = await store.listStaged(T, 't1', { limit: 100 })
      return store.write({
        checks: [
          { check: 'transaction.unchanged', tenant_id: T, id: 't1', transaction: seen },
          ...staged.map(
            (w): Check => ({ check: 'lock.held', tenant_id: T, token_id: w.token_id, transaction_id: 't1' }),
          ),
        ],
        ops: [
          ...staged.map(
            (w): Op => (w.token ? put(w.token) : { op: 'token.delete', tenant_id: T, id: w.token_id }),
          ),
          { op: 'transaction.put', transaction: { ...seen, state: 'committed' } },
          ...staged.map((w) => unstage('t1', w.token_id)),
          ...staged.map((w) => unlock(w.token_id)),
        ],
      })
    }
    // A commit built on an earlier read fails its guard and writes nothing.
    const stale = await commit({ ...read, version: 2 })
    expect(stale).toMatchObject({ ok: false, failed: { check: 'transaction.unchanged' } })
    expect(await store.getToken(T, 'c')).toBeNull()
    expect((await commit()).ok).toBe(true)
    expect((await store.getToken(T, 'c'))?.metadata).toEqual({ v: '2' })
    expect(await store.getToken(T, 'p')).toBeNull()
    expect(await store.getTransaction(T, 't1')).toMatchObject({ state: 'committed', version: 3 })
    expect(await store.listStaged(T, 't1', { limit: 10 })).toEqual([])
    const unlocked = await store.write({
      checks: [{ check: 'token.unlocked', tenant_id: T, id: 'c', now: NOW }],
      ops: [],
    })
    expect(unlocked.ok).toBe(true)
    expect((await commit()).ok).toBe(false)
    expect((await stageAs('late', token('late'))).ok).toBe(false)
    expect(await store.getStaged(T, 't1', ['late'])).toEqual([])
    await store.close()
  })

  it('lets exactly one of 100 concurrent commits of one transaction win', async () => {
    const store = await fresh()
    const open = tx('t1', { version: 1 })
    await store.write({
      ops: [{ op: 'transaction.put', transaction: open }, stage('t1', 'x', token('x')), lock('x', 't1')],
    })
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        store.write({
          checks: [{ check: 'transaction.unchanged', tenant_id: T, id: 't1', transaction: open }],
          ops: [
            put(token('x')),
            { op: 'transaction.put', transaction: { ...open, state: 'committed' } },
            unstage('t1', 'x'),
            unlock('x'),
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

  it('a transaction of 2 000 staged records commits all in one write, rolls back all, or expires with none applied', async () => {
    const ids = Array.from({ length: 2000 }, (_, i) => `big-${String(i).padStart(4, '0')}`)
    const staged = (id: string, i: number) => token(id, { type: 'bulk', metadata: { n: String(i) } })
    for (const end of ['committed', 'rolled_back', 'expired'] as const) {
      const store = await fresh()
      let open = tx('t-big')
      await store.write({ ops: [{ op: 'transaction.put', transaction: open }] })
      // Staged as the core stages a request of many tokens: each write puts 100 records and their
      // locks beside a version bump, guarded on the transaction read.
      for (let from = 0; from < ids.length; from += 100) {
        const next = { ...open, version: open.version + 1 }
        const batch = ids.slice(from, from + 100)
        const result = await store.write({
          checks: [
            { check: 'transaction.unchanged', tenant_id: T, id: 't-big', transaction: open },
            ...batch.map(
              (id): Check => ({ check: 'token.unlocked', tenant_id: T, id, now: NOW, except: 't-big' }),
            ),
          ],
          ops: [
            { op: 'transaction.put', transaction: next },
            ...batch.flatMap((id, i) => [
              lock(id, 't-big'),
              stage('t-big', id, staged(id, from + i), next.version),
            ]),
          ],
        })
        if (!result.ok) throw new Error(`staging from ${batch[0]} failed`)
        open = next
      }
      expect(await store.findTokenIds(T, { limit: 10 })).toEqual([])
      const listed = [
        ...(await store.listStaged(T, 't-big', { limit: 1000 })),
        ...(await store.listStaged(T, 't-big', { after: ids[999]!, limit: 1000 })),
      ]
      expect(listed.map((w) => w.token_id)).toEqual(ids)
      expect(await store.listStaged(T, 't-big', { after: ids[1999]!, limit: 1000 })).toEqual([])
      const result = await store.write({
        checks: [
          { check: 'transaction.unchanged', tenant_id: T, id: 't-big', transaction: open },
          ...ids.map(
            (id): Check => ({ check: 'lock.held', tenant_id: T, token_id: id, transaction_id: 't-big' }),
          ),
        ],
        ops: [
          ...(end === 'committed' ? listed.map((w) => put(w.token!)) : []),
          { op: 'transaction.put', transaction: { ...open, state: end, ended_at: NOW } },
          ...ids.map((id) => unstage('t-big', id)),
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
      expect(await store.listStaged(T, 't-big', { limit: 10 }), end).toEqual([])
      expect((await store.dump()).staged, end).toEqual([])
      // Every lock is released: another transaction may write each token.
      const free = await store.write({
        checks: ids.map((id): Check => ({ check: 'token.unlocked', tenant_id: T, id, now: NOW })),
        ops: [],
      })
      expect(free.ok, end).toBe(true)
      await store.close()
    }
  }, 60_000)

  it("lists a tenant's transactions by id in keyset pages, in any state, never another tenant's", async () => {
    const store = await fresh()
    await store.write({
      ops: [
        { op: 'transaction.put', transaction: tx('t2') },
        { op: 'transaction.put', transaction: tx('T9', { state: 'committed', ended_at: NOW }) },
        { op: 'transaction.put', transaction: tx('t10', { version: 3 }) },
        { op: 'transaction.put', transaction: tx('t1', { state: 'expired', ended_at: LATER }) },
        { op: 'transaction.put', transaction: tx('t0', { tenant_id: U }) },
      ],
    })
    const page = async (after: string | undefined, limit: number) =>
      (await store.listTransactions(T, { ...(after === undefined ? {} : { after }), limit })).map((t) => t.id)
    expect(await page(undefined, 10)).toEqual(['T9', 't1', 't10', 't2'])
    expect(await page(undefined, 3)).toEqual(['T9', 't1', 't10'])
    expect(await page('t10', 3)).toEqual(['t2'])
    expect(await page('t2', 3)).toEqual([])
    expect(await page(undefined, 0)).toEqual([])
    expect(await store.listTransactions(T, { after: 't1', limit: 1 })).toEqual([tx('t10', { version: 3 })])
    expect((await store.listTransactions(U, { limit: 10 })).map((t) => t.id)).toEqual(['t0'])
    await store.write({ ops: [{ op: 'transaction.delete', tenant_id: T, id: 't1' }] })
    expect(await page(undefined, 10)).toEqual(['T9', 't10', 't2'])
    await store.close()
  })
}

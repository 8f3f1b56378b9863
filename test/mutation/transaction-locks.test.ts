/**
 * Transactions' locks and the end of a transaction (`src/transactions/locks.ts`), from what
 * docs/transactions.md promises: a staged write locks its token against every other writer until
 * the transaction ends or expires; commit applies every staged write, rollback and expiry discard
 * them, and each end deletes the transaction's staged records and the locks it still holds (never a
 * lock another transaction took over once it expired); a commit or rollback within the bounds is
 * one store write; a transaction stored past the bounds (staged before they existed) is read only
 * up to the page that passes them, and is still rolled back or expired whole.
 *
 * Lock records are not in `dump()`: a ledger replays the lock ops of every write the store
 * accepted, so a test sees which locks the core left behind.
 */
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import type { StoredTransaction } from '../../src/kernel/types.js'
import type { Store } from '../../src/store/contract.js'
import { delegatingStore } from '../../src/store/delegate.js'
import type { Op, WriteBatch } from '../../src/store/index.js'
import { failure, setup } from '../core/setup.js'

const HOUR = 60 * 60_000

/** A test vault over a memory store that counts writes and staged records read, and keeps a lock ledger. */
async function world() {
  const base = memoryStore()
  const seen = {
    writes: 0,
    /** The most ops one write held. */
    maxOps: 0,
    stagedReads: 0,
    stagedRecords: 0,
    /** token id → the transaction whose lock record the store holds for it. */
    locks: new Map<string, string>(),
    /** Runs once before the next write whose batch it matches reaches the store. */
    before: undefined as undefined | { when: (batch: WriteBatch) => boolean; run: () => Promise<void> },
  }
  const store: Store = delegatingStore(base, {
    async listStaged(tenantId, transactionId, page) {
      const out = await base.listStaged(tenantId, transactionId, page)
      seen.stagedReads++
      seen.stagedRecords += out.length
      return out
    },
    async write(batch) {
      const hook = seen.before
      if (hook?.when(batch)) {
        seen.before = undefined
        await hook.run()
      }
      seen.writes++
      seen.maxOps = Math.max(seen.maxOps, batch.ops.length)
      const result = await base.write(batch)
      if (result.ok)
        for (const op of batch.ops) {
          if (op.op === 'lock.put')
            seen.locks.set(`${op.lock.tenant_id}/${op.lock.token_id}`, op.lock.transaction_id)
          if (op.op === 'lock.delete') seen.locks.delete(`${op.tenant_id}/${op.token_id}`)
        }
      return result
    },
  })
  const s = await setup({ store })
  const tenant = s.tenant.id
  const inTx = (id: string) => s.service.connect(s.full.key, { transactionId: id })
  const stored = async (id: string) => (await base.getTransaction(tenant, id)) as StoredTransaction
  /** The tokens whose lock record names transaction `txId`. */
  const locksOf = (txId: string) =>
    [...seen.locks]
      .filter(([, holder]) => holder === txId)
      .map(([key]) => key.slice(tenant.length + 1))
      .sort()
  /** `n` committed tokens, made by tokenize (100 a call), their ids in order. */
  const tokens = async (n: number): Promise<string[]> => {
    const ids: string[] = []
    for (let from = 0; from < n; from += 100) {
      const values = Object.fromEntries(
        Array.from({ length: Math.min(100, n - from) }, (_, i) => [`v${from + i}`, `value ${from + i}`]),
      )
      ids.push(...Object.values((await s.client.tokens.tokenize(values)) as Record<string, string>))
    }
    return ids
  }
  /**
   * Stages a delete of each of `ids` in a new transaction straight in the store, each with its lock,
   * as a version of the vault would have: with its totals (`staged_writes`, `staged_chars`), or
   * without them (`legacy`: staged before the bounds existed).
   */
  const stageDirect = async (ids: readonly string[], legacy = false) => {
    const tx = await s.client.transactions.create()
    const { staged_writes: _w, staged_chars: _c, ...record } = await stored(tx.id)
    const ops: Op[] = [
      {
        op: 'transaction.put',
        transaction: {
          ...record,
          version: ids.length,
          ...(legacy ? {} : { staged_writes: ids.length, staged_chars: 0 }),
        },
      },
    ]
    ids.forEach((id, i) => {
      ops.push({
        op: 'staged.put',
        staged: { tenant_id: tenant, transaction_id: tx.id, token_id: id, seq: i + 1, token: null },
      })
      ops.push({
        op: 'lock.put',
        lock: { tenant_id: tenant, token_id: id, transaction_id: tx.id, expires_at: record.expires_at },
      })
    })
    expect((await store.write({ ops })).ok).toBe(true)
    return tx
  }
  const stagedOf = async (txId: string) =>
    (await base.dump()).staged.filter((r) => r.transaction_id === txId).map((r) => r.token_id)
  return { ...s, base, seen, inTx, stored, locksOf, tokens, stageDirect, stagedOf }
}

const names = (n: number, prefix = 't') =>
  Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(4, '0')}`)

describe('a staged write locks its token', () => {
  it('with a lock naming the transaction and expiring with it: 409 to others 1 ms before, free at its expiry', async () => {
    const w = await world()
    const [a, b] = await w.tokens(2)
    const tx = await w.client.transactions.create()
    await w.inTx(tx.id).tokens.update(a!, { data: 'in tx' })
    // Its own writes pass its lock, again and again.
    await w.inTx(tx.id).tokens.update(a!, { data: 'in tx again' })
    await w.inTx(tx.id).tokens.delete(a!)
    expect(w.locksOf(tx.id)).toEqual([a])
    const other = await w.client.transactions.create()
    w.clock.advance(HOUR - 1)
    expect((await failure(w.client.tokens.update(a!, { data: 'outside' }))).code).toBe('conflict')
    expect((await failure(w.inTx(other.id).tokens.update(a!, { data: 'other' }))).code).toBe('conflict')
    await w.client.tokens.update(b!, { data: 'b outside' })
    w.clock.advance(1)
    await w.client.tokens.update(a!, { data: 'outside' })
    expect((await w.client.tokens.get(a!)).data).toBe('outside')
  })
})

describe('each end deletes the staged records and the locks the transaction holds', () => {
  it('commit: every staged write applied, the transaction committed at the time of the commit, nothing of it left', async () => {
    const w = await world()
    const [a, b] = await w.tokens(2)
    const tx = await w.client.transactions.create()
    const inTx = w.inTx(tx.id)
    await inTx.tokens.update(a!, { data: 'a2' })
    await inTx.tokens.delete(b!)
    const made = await inTx.tokens.create({ type: 'token', data: 'new' })
    expect(w.locksOf(tx.id)).toEqual([a, b, made.id].sort())
    w.clock.advance(1234)
    await w.client.transactions.commit(tx.id)
    expect(await w.stored(tx.id)).toMatchObject({ state: 'committed', ended_at: '2030-01-01T00:00:01.234Z' })
    expect(await w.stagedOf(tx.id)).toEqual([])
    expect(w.locksOf(tx.id)).toEqual([])
    expect((await w.client.tokens.get(a!)).data).toBe('a2')
    expect((await failure(w.client.tokens.get(b!))).code).toBe('not_found')
    expect((await w.client.tokens.get(made.id)).data).toBe('new')
    // Free at once, long before the transaction would have expired.
    await w.client.tokens.update(a!, { data: 'a3' })
    await w.client.tokens.update(made.id, { data: 'new2' })
  })

  it('rollback: nothing applied, the transaction rolled back at the time of the rollback, nothing of it left', async () => {
    const w = await world()
    const [a, b] = await w.tokens(2)
    const tx = await w.client.transactions.create()
    await w.inTx(tx.id).tokens.update(a!, { data: 'a2' })
    await w.inTx(tx.id).tokens.delete(b!)
    w.clock.advance(5)
    await w.client.transactions.rollback(tx.id)
    expect(await w.stored(tx.id)).toMatchObject({
      state: 'rolled_back',
      ended_at: '2030-01-01T00:00:00.005Z',
    })
    expect(await w.stagedOf(tx.id)).toEqual([])
    expect(w.locksOf(tx.id)).toEqual([])
    expect((await w.client.tokens.get(a!)).data).toBe('value 0')
    await w.client.tokens.update(b!, { data: 'b2' })
  })

  it('expiry (a commit that finds it expired, and the sweep): ended as expired at its expiry, nothing applied, nothing of it left', async () => {
    const w = await world()
    const [a, b] = await w.tokens(2)
    const first = await w.client.transactions.create()
    w.clock.advance(10)
    const second = await w.client.transactions.create()
    await w.inTx(first.id).tokens.update(a!, { data: 'first' })
    await w.inTx(second.id).tokens.update(b!, { data: 'second' })
    w.clock.advance(2 * HOUR)
    expect((await failure(w.client.transactions.commit(first.id))).code).toBe('conflict')
    expect(await w.stored(first.id)).toMatchObject({ state: 'expired', ended_at: first.expires_at })
    expect((await w.service.admin.sweep()).transactions).toBe(1)
    expect(await w.stored(second.id)).toMatchObject({ state: 'expired', ended_at: second.expires_at })
    for (const tx of [first, second]) {
      expect(await w.stagedOf(tx.id)).toEqual([])
      expect(w.locksOf(tx.id)).toEqual([])
    }
    expect((await w.client.tokens.get(a!)).data).toBe('value 0')
    expect((await w.client.tokens.get(b!)).data).toBe('value 1')
  })

  it('a write staged while a commit is on its way lands with that commit, never lost', async () => {
    const w = await world()
    const [a, b] = await w.tokens(2)
    const tx = await w.client.transactions.create()
    const inTx = w.inTx(tx.id)
    await inTx.tokens.update(a!, { data: 'a2' })
    w.seen.before = {
      when: (batch) =>
        batch.ops.some((op) => op.op === 'transaction.put' && op.transaction.state === 'committed'),
      run: async () => {
        await inTx.tokens.update(b!, { data: 'b2' })
      },
    }
    await w.client.transactions.commit(tx.id)
    expect(w.seen.before).toBeUndefined()
    expect((await w.client.tokens.get(a!)).data).toBe('a2')
    expect((await w.client.tokens.get(b!)).data).toBe('b2')
    expect(await w.stagedOf(tx.id)).toEqual([])
    expect(w.locksOf(tx.id)).toEqual([])
  })

  it('a write staged while a rollback is on its way is discarded with it', async () => {
    const w = await world()
    const [a, b] = await w.tokens(2)
    const tx = await w.client.transactions.create()
    const inTx = w.inTx(tx.id)
    await inTx.tokens.update(a!, { data: 'a2' })
    w.seen.before = {
      when: (batch) =>
        batch.ops.some((op) => op.op === 'transaction.put' && op.transaction.state === 'rolled_back'),
      run: async () => {
        await inTx.tokens.update(b!, { data: 'b2' })
      },
    }
    await w.client.transactions.rollback(tx.id)
    expect(w.seen.before).toBeUndefined()
    expect(await w.stored(tx.id)).toMatchObject({ state: 'rolled_back' })
    expect(await w.stagedOf(tx.id)).toEqual([])
    expect(w.locksOf(tx.id)).toEqual([])
    await w.client.tokens.update(b!, { data: 'b outside' })
    expect((await w.client.tokens.get(a!)).data).toBe('value 0')
  })
})

describe('a lock another transaction took over once the first expired', () => {
  it.each([
    ['a commit that finds the first expired', 'commit'],
    ['a rollback that finds the first expired', 'rollback'],
    ['the sweep', 'sweep'],
  ] as const)(
    'stays with its new holder when %s ends it; the rest of what the first staged goes (128 staged)',
    async (_name, how) => {
      const w = await world()
      const ids = await w.tokens(128)
      const first = await w.client.transactions.create()
      const inFirst = w.inTx(first.id)
      for (const id of ids) await inFirst.tokens.update(id, { data: 'first' })
      w.clock.advance(HOUR)
      const taker = await w.client.transactions.create()
      // One lock in each chunk of 64 the end clears.
      const taken = [ids[3]!, ids[70]!]
      for (const id of taken) await w.inTx(taker.id).tokens.update(id, { data: 'taker' })
      if (how === 'sweep') expect((await w.service.admin.sweep()).transactions).toBe(1)
      else expect((await failure(w.client.transactions[how](first.id))).code).toBe('conflict')
      expect(await w.stored(first.id)).toMatchObject({ state: 'expired', ended_at: first.expires_at })
      expect(await w.stagedOf(first.id)).toEqual([])
      expect(w.locksOf(first.id)).toEqual([])
      expect(w.locksOf(taker.id)).toEqual([...taken].sort())
      expect(await w.stagedOf(taker.id)).toEqual([...taken].sort())
      for (const id of taken)
        expect((await failure(w.client.tokens.update(id, { data: 'outside' }))).code).toBe('conflict')
      await w.client.tokens.update(ids[0]!, { data: 'outside' })
      await w.client.transactions.commit(taker.id)
      for (const id of taken) expect((await w.client.tokens.get(id)).data).toBe('taker')
      expect((await w.client.tokens.get(ids[127]!)).data).toBe('value 127')
    },
  )
})

describe('within the bounds, an end is one store write', () => {
  it('of a transaction that staged nothing: commit and rollback read no staged record', async () => {
    const w = await world()
    for (const end of ['commit', 'rollback'] as const) {
      const tx = await w.client.transactions.create()
      w.seen.writes = 0
      w.seen.stagedReads = 0
      await w.client.transactions[end](tx.id)
      expect(w.seen.writes).toBe(1)
      expect(w.seen.stagedReads).toBe(0)
      expect(await w.stored(tx.id)).toMatchObject({ state: end === 'commit' ? 'committed' : 'rolled_back' })
    }
  })

  it('exactly 16 MiB of staged token JSON and a staged delete commit: a delete stages no token JSON', async () => {
    const w = await world()
    const [gone] = await w.tokens(1)
    const tx = await w.client.transactions.create()
    const inTx = w.inTx(tx.id)
    const MiB = 1024 * 1024
    const chars = async () => (await w.stored(tx.id)).staged_chars ?? 0
    await inTx.tokens.delete(gone!)
    await inTx.tokens.create({ type: 'token', data: 'x'.repeat(MiB) })
    const overhead = (await chars()) - MiB
    for (let i = 0; i < 14; i++) await inTx.tokens.create({ type: 'token', data: 'x'.repeat(MiB) })
    await inTx.tokens.create({ type: 'token', data: 'x'.repeat(16 * MiB - (await chars()) - overhead) })
    expect(await chars()).toBe(16 * MiB)
    await w.client.transactions.commit(tx.id)
    expect((await w.client.tokens.list({ size: 1 })).pagination.total_items).toBe(16)
    expect((await failure(w.client.tokens.get(gone!))).code).toBe('not_found')
  })

  it("an open transaction's admin view lists the tokens it locks", async () => {
    const w = await world()
    const [a, b] = await w.tokens(2)
    const tx = await w.client.transactions.create()
    await w.inTx(tx.id).tokens.update(a!, { data: 'a2' })
    await w.inTx(tx.id).tokens.delete(b!)
    const view = await w.service.admin.view.transactions(w.tenant.id)
    expect(view.data).toMatchObject([{ id: tx.id, locks: [a, b].sort(), staged: 2 }])
  })

  it('a rollback of 1000 staged writes (the bound) is one write; the commit of 999 reads them in one store call', async () => {
    const w = await world()
    const tx = await w.stageDirect(names(1000))
    w.seen.writes = 0
    await w.client.transactions.rollback(tx.id)
    expect(w.seen.writes).toBe(1)
    expect(await w.stagedOf(tx.id)).toEqual([])
    expect(w.locksOf(tx.id)).toEqual([])
    const committed = await w.stageDirect(names(999, 'c'))
    w.seen.stagedReads = 0
    w.seen.writes = 0
    await w.client.transactions.commit(committed.id)
    expect(w.seen.stagedReads).toBe(1)
    expect(w.seen.writes).toBe(1)
    expect(w.locksOf(committed.id)).toEqual([])
  })

  it('an expired transaction of 1000 staged writes is ended in one write', async () => {
    const w = await world()
    const tx = await w.stageDirect(names(1000))
    w.clock.advance(HOUR)
    w.seen.writes = 0
    expect((await failure(w.client.transactions.commit(tx.id))).code).toBe('conflict')
    expect(w.seen.writes).toBe(1)
    expect(await w.stored(tx.id)).toMatchObject({ state: 'expired' })
    expect(w.locksOf(tx.id)).toEqual([])
  })
})

describe('a transaction staged before the bounds existed (no totals kept)', () => {
  it('of 128 staged writes commits them all, and of 1000 rolls back in one write', async () => {
    const w = await world()
    const ids = await w.tokens(128)
    const tx = await w.stageDirect(ids, true)
    await w.client.transactions.commit(tx.id)
    for (const id of [ids[0]!, ids[63]!, ids[64]!, ids[127]!])
      expect((await failure(w.client.tokens.get(id))).code).toBe('not_found')
    expect((await w.client.tokens.list({ size: 1 })).pagination.total_items).toBe(0)
    expect(w.locksOf(tx.id)).toEqual([])
    const big = await w.stageDirect(names(1000), true)
    w.seen.writes = 0
    await w.client.transactions.rollback(big.id)
    expect(w.seen.writes).toBe(1)
    expect(await w.stagedOf(big.id)).toEqual([])
    expect(w.locksOf(big.id)).toEqual([])
  })

  it('of 2100 staged writes is refused at commit having read at most one page of 64 past 1000 records', async () => {
    const w = await world()
    const tx = await w.stageDirect(names(2100), true)
    w.seen.stagedRecords = 0
    const refused = await failure(w.client.transactions.commit(tx.id))
    expect(refused.code).toBe('validation_failed')
    expect(refused.message).toContain('1000')
    expect(w.seen.stagedRecords).toBeGreaterThan(1000)
    expect(w.seen.stagedRecords).toBeLessThanOrEqual(1000 + 64)
    expect(await w.stored(tx.id)).toMatchObject({ state: 'open' })
  })

  it.each([
    ['rolled back', 1001],
    ['rolled back', 1088],
    ['expired', 1001],
  ] as const)(
    '%s with %i staged writes: ended, then every staged record and lock deleted',
    async (state, n) => {
      const w = await world()
      const tx = await w.stageDirect(names(n), true)
      w.seen.writes = 0
      w.seen.maxOps = 0
      if (state === 'expired') {
        w.clock.advance(HOUR)
        expect((await w.service.admin.sweep()).transactions).toBe(1)
      } else {
        await w.client.transactions.rollback(tx.id)
        // The end, then 64 staged records and their locks a write.
        expect(w.seen.writes).toBeLessThanOrEqual(1 + Math.ceil(n / 64))
      }
      // No write holds more than the 1000 staged records (and their locks) a commit may apply.
      expect(w.seen.maxOps).toBeLessThanOrEqual(1 + 2 * 1000)
      expect(await w.stored(tx.id)).toMatchObject({ state: state === 'expired' ? 'expired' : 'rolled_back' })
      expect(await w.stagedOf(tx.id)).toEqual([])
      expect(w.locksOf(tx.id)).toEqual([])
    },
  )

  it('of 65 tokens of 256 KiB (past 16 MiB) is refused at commit having read one page of 64, and rolls back whole', async () => {
    const w = await world()
    const tx = await w.client.transactions.create()
    const inTx = w.inTx(tx.id)
    // Two stretches, each within the bound as staged, the totals then dropped as a version before
    // the bounds would have kept none.
    for (const n of [40, 25]) {
      for (let i = 0; i < n; i++) await inTx.tokens.create({ type: 'token', data: 'x'.repeat(256 * 1024) })
      const { staged_writes: _w, staged_chars: _c, ...legacy } = await w.stored(tx.id)
      expect((await w.base.write({ ops: [{ op: 'transaction.put', transaction: legacy }] })).ok).toBe(true)
    }
    w.seen.stagedRecords = 0
    const refused = await failure(w.client.transactions.commit(tx.id))
    expect(refused.code).toBe('validation_failed')
    expect(refused.message).toContain('16777216')
    expect(w.seen.stagedRecords).toBe(64)
    expect((await w.client.tokens.list({ size: 1 })).pagination.total_items).toBe(0)
    await w.client.transactions.rollback(tx.id)
    expect(await w.stored(tx.id)).toMatchObject({ state: 'rolled_back' })
    expect(await w.stagedOf(tx.id)).toEqual([])
    expect(w.locksOf(tx.id)).toEqual([])
  })

  it('with exactly 16 MiB of token JSON in its first 64 staged records and a delete after them, commits all 65', async () => {
    const w = await world()
    const gone = await w.client.tokens.create({ id: 'z-gone', type: 'token', data: 'gone' })
    const tx = await w.client.transactions.create()
    const inTx = w.inTx(tx.id)
    const chars = async () => (await w.stored(tx.id)).staged_chars ?? 0
    const KiB = 1024
    const id = (i: number) => `p${String(i).padStart(2, '0')}`
    await inTx.tokens.create({ id: id(0), type: 'token', data: 'x'.repeat(256 * KiB) })
    const overhead = (await chars()) - 256 * KiB
    for (let i = 1; i < 63; i++)
      await inTx.tokens.create({ id: id(i), type: 'token', data: 'x'.repeat(256 * KiB) })
    await inTx.tokens.create({
      id: id(63),
      type: 'token',
      data: 'x'.repeat(16 * 1024 * KiB - (await chars()) - overhead),
    })
    expect(await chars()).toBe(16 * 1024 * KiB)
    await inTx.tokens.delete(gone.id)
    const { staged_writes: _w, staged_chars: _c, ...legacy } = await w.stored(tx.id)
    expect((await w.base.write({ ops: [{ op: 'transaction.put', transaction: legacy }] })).ok).toBe(true)
    await w.client.transactions.commit(tx.id)
    expect((await w.client.tokens.list({ size: 1 })).pagination.total_items).toBe(64)
    expect((await failure(w.client.tokens.get(gone.id))).code).toBe('not_found')
  })

  it('a write staged while its rollback is on its way is discarded with it, and the end is of the transaction as last written', async () => {
    const w = await world()
    const [a] = await w.tokens(1)
    const tx = await w.stageDirect(names(1001), true)
    const inTx = w.inTx(tx.id)
    w.seen.before = {
      when: (batch) =>
        !batch.ops.some((op) => op.op === 'staged.delete') &&
        batch.ops.some((op) => op.op === 'transaction.put' && op.transaction.state === 'rolled_back'),
      run: async () => {
        await inTx.tokens.update(a!, { data: 'raced' })
      },
    }
    await w.client.transactions.rollback(tx.id)
    expect(w.seen.before).toBeUndefined()
    expect(await w.stored(tx.id)).toMatchObject({ state: 'rolled_back', version: 1002, staged_writes: 1 })
    expect(await w.stagedOf(tx.id)).toEqual([])
    expect(w.locksOf(tx.id)).toEqual([])
    await w.client.tokens.update(a!, { data: 'outside' })
  })

  it('a commit landing between a rollback whose end a staged write failed and its retry is refused, and the rollback ends it once', async () => {
    const w = await world()
    const [a] = await w.tokens(1)
    const tx = await w.stageDirect(names(1001), true)
    const inTx = w.inTx(tx.id)
    const rolledBack = (batch: WriteBatch) =>
      !batch.ops.some((op) => op.op === 'staged.delete') &&
      batch.ops.some((op) => op.op === 'transaction.put' && op.transaction.state === 'rolled_back')
    let commit: ReturnType<typeof failure> | undefined
    // The end written alone fails on the write staged before it; the commit then runs before the
    // next end the rollback writes (its retry), with every staged record still there.
    w.seen.before = {
      when: rolledBack,
      run: async () => {
        await inTx.tokens.update(a!, { data: 'raced' })
        w.seen.before = {
          when: (batch) => batch.ops.some((op) => op.op === 'transaction.put'),
          run: async () => {
            commit = failure(w.client.transactions.commit(tx.id))
            await commit
          },
        }
      },
    }
    await w.client.transactions.rollback(tx.id)
    expect(w.seen.before).toBeUndefined()
    // Past the bounds, the commit is refused whole: none of what the rollback is to discard lands.
    expect((await commit)?.code).toBe('validation_failed')
    expect(await w.stored(tx.id)).toMatchObject({ state: 'rolled_back', version: 1002 })
    expect(await w.stagedOf(tx.id)).toEqual([])
    expect(w.locksOf(tx.id)).toEqual([])
    expect((await w.client.tokens.get(a!)).data).toBe('value 0')
  })
})

/**
 * Reads and writes through a transaction (`src/transactions/view.ts`), from what
 * docs/transactions.md promises: a call with the transaction header reads committed state plus
 * that transaction's staged writes, and its token create, update and delete are staged there,
 * locked, until commit; the transaction belongs to its creator (anyone else, or an unknown id:
 * 404), and an ended or expired one answers 409, to the millisecond of its expiry; a token is
 * read only until its own expiry, staged or committed; outside a transaction a write is refused
 * (409) over a token an open transaction locked, and a write that loses a race is made again.
 */
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import type { Store } from '../../src/store/contract.js'
import { delegatingStore } from '../../src/store/delegate.js'
import type { Check, WriteBatch } from '../../src/store/index.js'
import { ALL_TOKEN, failure, setup } from '../core/setup.js'

const HOUR = 60 * 60_000

/** A test vault over a memory store that keeps the batches written and can run a step before one. */
async function world() {
  const base = memoryStore()
  const seen = {
    batches: [] as WriteBatch[],
    stagedReads: 0,
    before: undefined as undefined | { when: (batch: WriteBatch) => boolean; run: () => Promise<void> },
  }
  const store: Store = delegatingStore(base, {
    async getStaged(tenantId, transactionId, ids) {
      seen.stagedReads++
      return base.getStaged(tenantId, transactionId, ids)
    },
    async write(batch) {
      const hook = seen.before
      if (hook?.when(batch)) {
        seen.before = undefined
        await hook.run()
      }
      seen.batches.push(batch)
      return base.write(batch)
    },
  })
  const s = await setup({ store })
  const inTx = (id: string, key = s.full.key) => s.service.connect(key, { transactionId: id })
  const stored = async (id: string) => base.getTransaction(s.tenant.id, id)
  return { ...s, base, seen, inTx, stored }
}

/** The last batch written that puts or stages a token. */
const lastTokenWrite = (batches: WriteBatch[]) =>
  batches.findLast((batch) => batch.ops.some((op) => op.op === 'token.put' || op.op === 'staged.put'))

const checksOf = (batch: WriteBatch | undefined, kind: Check['check']) =>
  (batch?.checks ?? []).filter((c) => c.check === kind)

describe('whose transaction, and while it is open', () => {
  it("another application's, another tenant's or an unknown transaction answers 404 to reads and writes through it, and nothing is staged", async () => {
    const w = await world()
    const a = await w.client.tokens.create({ type: 'token', data: 'a' })
    const tx = await w.client.transactions.create()
    const other = await w.keyFor('private', ALL_TOKEN)
    const tenant2 = await w.service.admin.createTenant({ name: 'other' })
    const foreign = await w.keyFor('private', ALL_TOKEN, undefined, tenant2.id)
    const before = await w.base.dump()
    const callers = [
      w.inTx(tx.id, other.key),
      w.inTx(tx.id, foreign.key),
      w.inTx('00000000-0000-4000-8000-000000000000'),
    ]
    for (const c of callers) {
      expect(await failure(c.tokens.get(a.id))).toMatchObject({
        code: 'not_found',
        message: expect.stringContaining('transaction not found'),
      })
      expect((await failure(c.tokens.update(a.id, { data: 'x' }))).code).toBe('not_found')
      expect((await failure(c.tokens.delete(a.id))).code).toBe('not_found')
      expect((await failure(c.tokens.create({ type: 'token', data: 'x' }))).code).toBe('not_found')
    }
    expect((await w.base.dump()).staged).toEqual(before.staged)
    expect(await w.stored(tx.id)).toMatchObject({ version: 0 })
    // Its creator reads and writes through it.
    await w.inTx(tx.id).tokens.update(a.id, { data: 'mine' })
    expect((await w.inTx(tx.id).tokens.get(a.id)).data).toBe('mine')
  })

  it('open until its expiry: 1 ms before, reads and writes go through it; at its expiry, 409 and nothing staged', async () => {
    const w = await world()
    const a = await w.client.tokens.create({ type: 'token', data: 'a' })
    const b = await w.client.tokens.create({ type: 'token', data: 'b' })
    const tx = await w.client.transactions.create()
    const inTx = w.inTx(tx.id)
    w.clock.advance(HOUR - 1)
    await inTx.tokens.update(a.id, { data: 'a in tx' })
    expect((await inTx.tokens.get(a.id)).data).toBe('a in tx')
    const version = (await w.stored(tx.id))?.version
    w.clock.advance(1)
    expect(await failure(inTx.tokens.get(a.id))).toMatchObject({
      code: 'conflict',
      message: expect.stringContaining('not open'),
    })
    expect((await failure(inTx.tokens.update(b.id, { data: 'late' }))).code).toBe('conflict')
    expect((await failure(inTx.tokens.delete(b.id))).code).toBe('conflict')
    expect((await failure(inTx.tokens.create({ type: 'token', data: 'late' }))).code).toBe('conflict')
    expect((await w.stored(tx.id))?.version).toBe(version)
  })

  it.each(['commit', 'rollback'] as const)(
    'after %s, reads and writes through it answer 409',
    async (end) => {
      const w = await world()
      const a = await w.client.tokens.create({ type: 'token', data: 'a' })
      const tx = await w.client.transactions.create()
      await w.inTx(tx.id).tokens.update(a.id, { data: 'staged' })
      await w.client.transactions[end](tx.id)
      expect((await failure(w.inTx(tx.id).tokens.get(a.id))).code).toBe('conflict')
      expect((await failure(w.inTx(tx.id).tokens.update(a.id, { data: 'again' }))).code).toBe('conflict')
      expect((await failure(w.inTx(tx.id).tokens.delete(a.id))).code).toBe('conflict')
      expect((await w.client.tokens.get(a.id)).data).toBe(end === 'commit' ? 'staged' : 'a')
    },
  )
})

describe('a read through a transaction', () => {
  it('sees committed tokens before it stages anything, without reading staged records', async () => {
    const w = await world()
    const a = await w.client.tokens.create({ type: 'token', data: 'a' })
    const tx = await w.client.transactions.create()
    w.seen.stagedReads = 0
    expect((await w.inTx(tx.id).tokens.get(a.id)).data).toBe('a')
    await w.inTx(tx.id).tokens.create({ id: 'first', type: 'token', data: 'first' })
    expect(w.seen.stagedReads).toBe(0)
  })

  it('sees its staged create, update and delete, and committed state for what it did not touch; outside sees committed state', async () => {
    const w = await world()
    const a = await w.client.tokens.create({ type: 'token', data: 'a' })
    const b = await w.client.tokens.create({ type: 'token', data: 'b' })
    const c = await w.client.tokens.create({ type: 'token', data: 'c' })
    const tx = await w.client.transactions.create()
    const inTx = w.inTx(tx.id)
    await inTx.tokens.update(a.id, { data: 'a staged' })
    await inTx.tokens.delete(b.id)
    const made = await inTx.tokens.create({ type: 'token', data: 'made' })
    expect((await inTx.tokens.get(a.id)).data).toBe('a staged')
    expect(await failure(inTx.tokens.get(b.id))).toMatchObject({
      code: 'not_found',
      message: expect.stringContaining('token not found'),
    })
    expect((await failure(inTx.tokens.update(b.id, { data: 'gone' }))).code).toBe('not_found')
    expect((await inTx.tokens.get(c.id)).data).toBe('c')
    expect((await inTx.tokens.get(made.id)).data).toBe('made')
    expect((await w.client.tokens.get(a.id)).data).toBe('a')
    expect((await w.client.tokens.get(b.id)).data).toBe('b')
    expect((await failure(w.client.tokens.get(made.id))).code).toBe('not_found')
    // Updated again in the transaction: the newest staged write is what it reads, and commits.
    await inTx.tokens.update(a.id, { data: 'a staged twice' })
    expect((await inTx.tokens.get(a.id)).data).toBe('a staged twice')
    await w.client.transactions.commit(tx.id)
    expect((await w.client.tokens.get(a.id)).data).toBe('a staged twice')
    expect((await failure(w.client.tokens.get(b.id))).code).toBe('not_found')
  })

  it('reads a token until its expiry, committed or staged: 1 ms before it is there, at its expiry 404', async () => {
    const w = await world()
    const expires_at = '2030-01-01T00:10:00.000Z'
    const committed = await w.client.tokens.create({ type: 'token', data: 'c', expires_at })
    const tx = await w.client.transactions.create()
    const inTx = w.inTx(tx.id)
    const staged = await inTx.tokens.create({ type: 'token', data: 's', expires_at })
    const updated = await w.client.tokens.create({ type: 'token', data: 'u' })
    await inTx.tokens.update(updated.id, { expires_at })
    w.clock.advance(10 * 60_000 - 1)
    for (const id of [committed.id, staged.id, updated.id]) await inTx.tokens.get(id)
    await w.client.tokens.get(committed.id)
    await w.client.tokens.get(updated.id)
    w.clock.advance(1)
    for (const id of [committed.id, staged.id, updated.id])
      expect((await failure(inTx.tokens.get(id))).code).toBe('not_found')
    expect((await failure(w.client.tokens.get(committed.id))).code).toBe('not_found')
    // Outside, the committed record of the updated token has no expiry.
    expect((await w.client.tokens.get(updated.id)).data).toBe('u')
  })

  it('links tokens only while both are present and unexpired: 1 ms before expiry linked, at it 404', async () => {
    const w = await world()
    const parent = await w.client.tokens.create({ type: 'token', data: 'p' })
    const early = await w.client.tokens.create({
      type: 'token',
      data: 'e',
      expires_at: '2030-01-01T00:00:01.000Z',
    })
    const late = await w.client.tokens.create({
      type: 'token',
      data: 'l',
      expires_at: '2030-01-01T00:00:02.000Z',
    })
    w.clock.advance(999)
    await w.client.tokens.children.link(parent.id, early.id)
    w.clock.advance(1)
    expect((await failure(w.client.tokens.children.link(parent.id, early.id))).code).toBe('not_found')
    expect((await failure(w.client.tokens.children.link(early.id, late.id))).code).toBe('not_found')
    expect((await failure(w.client.tokens.children.link(late.id, early.id))).code).toBe('not_found')
    expect(await failure(w.client.tokens.children.link(parent.id, 'absent'))).toMatchObject({
      code: 'not_found',
      message: expect.stringContaining('token not found'),
    })
    expect((await failure(w.client.tokens.children.link('absent', parent.id))).code).toBe('not_found')
    await w.client.tokens.children.link(parent.id, late.id)
    expect((await w.client.tokens.children.list(parent.id)).data.map((t) => t.id)).toEqual([late.id])
  })
})

describe('a write through a transaction', () => {
  it('is staged, not applied: its token locked, the transaction one version on, committed state untouched', async () => {
    const w = await world()
    const a = await w.client.tokens.create({ type: 'token', data: 'a' })
    const b = await w.client.tokens.create({ type: 'token', data: 'b' })
    const tx = await w.client.transactions.create()
    const inTx = w.inTx(tx.id)
    const tokensBefore = (await w.base.dump()).tokens
    await inTx.tokens.update(a.id, { data: 'a2' })
    await inTx.tokens.delete(b.id)
    expect((await w.base.dump()).tokens).toEqual(tokensBefore)
    const staged = (await w.base.dump()).staged
    expect(staged.map((s) => [s.token_id, s.seq, s.token === null])).toEqual(
      [
        [a.id, 1, false],
        [b.id, 2, true],
      ].sort((x, y) => ((x[0] as string) < (y[0] as string) ? -1 : 1)),
    )
    expect(staged.every((s) => s.transaction_id === tx.id && s.tenant_id === w.tenant.id)).toBe(true)
    expect(await w.stored(tx.id)).toMatchObject({ state: 'open', version: 2, staged_writes: 2 })
    expect((await failure(w.client.tokens.update(a.id, { data: 'out' }))).code).toBe('conflict')
    expect((await failure(w.client.tokens.delete(b.id))).code).toBe('conflict')
    // The staging write is guarded on the transaction as read, and on each token's lock.
    const last = w.seen.batches.findLast((batch) =>
      batch.ops.some((op) => op.op === 'staged.put' && op.staged.token_id === b.id),
    )
    expect(checksOf(last, 'transaction.unchanged')).toMatchObject([{ id: tx.id, tenant_id: w.tenant.id }])
    expect(checksOf(last, 'token.unlocked')).toMatchObject([
      { id: b.id, except: tx.id, tenant_id: w.tenant.id },
    ])
  })

  it("takes over the lock of an expired transaction at its expiry, not 1 ms before; the first one's commit then fails", async () => {
    const w = await world()
    const a = await w.client.tokens.create({ type: 'token', data: 'a' })
    const first = await w.client.transactions.create()
    await w.inTx(first.id).tokens.update(a.id, { data: 'first' })
    w.clock.advance(HOUR / 2)
    const second = await w.client.transactions.create()
    w.clock.advance(HOUR / 2 - 1)
    expect((await failure(w.inTx(second.id).tokens.update(a.id, { data: 'second' }))).code).toBe('conflict')
    expect((await failure(w.inTx(second.id).tokens.delete(a.id))).code).toBe('conflict')
    w.clock.advance(1)
    await w.inTx(second.id).tokens.update(a.id, { data: 'second' })
    expect((await failure(w.client.transactions.commit(first.id))).code).toBe('conflict')
    await w.client.transactions.commit(second.id)
    expect((await w.client.tokens.get(a.id)).data).toBe('second')
  })

  it('two deletes staged at once in one transaction both land (the one that lost the race is made again)', async () => {
    const w = await world()
    const a = await w.client.tokens.create({ type: 'token', data: 'a' })
    const b = await w.client.tokens.create({ type: 'token', data: 'b' })
    const tx = await w.client.transactions.create()
    const inTx = w.inTx(tx.id)
    w.seen.before = {
      when: (batch) => batch.ops.some((op) => op.op === 'staged.put' && op.staged.token_id === a.id),
      run: async () => {
        await inTx.tokens.delete(b.id)
      },
    }
    await inTx.tokens.delete(a.id)
    expect(w.seen.before).toBeUndefined()
    await w.client.transactions.commit(tx.id)
    expect((await failure(w.client.tokens.get(a.id))).code).toBe('not_found')
    expect((await failure(w.client.tokens.get(b.id))).code).toBe('not_found')
  })

  it('outside a transaction, a delete that a new link overtook is made again and takes that link too', async () => {
    const w = await world()
    const a = await w.client.tokens.create({ type: 'token', data: 'a' })
    const kid = await w.client.tokens.create({ type: 'token', data: 'kid' })
    w.seen.before = {
      when: (batch) => batch.ops.some((op) => op.op === 'token.delete' && op.id === a.id),
      run: async () => {
        await w.client.tokens.children.link(a.id, kid.id)
      },
    }
    await w.client.tokens.delete(a.id)
    expect(w.seen.before).toBeUndefined()
    expect((await failure(w.client.tokens.get(a.id))).code).toBe('not_found')
    expect((await w.base.dump()).associations).toEqual([])
    expect((await w.client.tokens.get(kid.id)).data).toBe('kid')
  })

  it('a delete that loses the race every time answers 409 once the tries are spent, staging nothing', async () => {
    const w = await world()
    const a = await w.client.tokens.create({ type: 'token', data: 'a' })
    const tx = await w.client.transactions.create()
    const inTx = w.inTx(tx.id)
    let raced = 0
    const race = {
      when: (batch: WriteBatch) =>
        batch.ops.some((op) => op.op === 'staged.put' && op.staged.token_id === a.id),
      run: async () => {
        raced++
        // Another write into the same transaction lands first, every time.
        await w.base.write({
          ops: [
            { op: 'transaction.put', transaction: { ...(await w.stored(tx.id))!, version: 1000 + raced } },
          ],
        })
        w.seen.before = race
      },
    }
    w.seen.before = race
    expect((await failure(inTx.tokens.delete(a.id))).code).toBe('conflict')
    w.seen.before = undefined
    expect(raced).toBeGreaterThan(1)
    expect((await w.base.dump()).staged).toEqual([])
    expect((await w.client.tokens.get(a.id)).data).toBe('a')
  })

  it('outside a transaction, a delete refused for a reason other than a race answers it (409 locked), changing nothing', async () => {
    const w = await world()
    const a = await w.client.tokens.create({ type: 'token', data: 'a' })
    const tx = await w.client.transactions.create()
    await w.inTx(tx.id).tokens.update(a.id, { data: 'locked' })
    const before = await w.base.dump()
    const tries = () => w.seen.batches.filter((b) => b.ops.some((op) => op.op === 'token.delete')).length
    expect((await failure(w.client.tokens.delete(a.id))).code).toBe('conflict')
    expect(await w.base.dump()).toEqual(before)
    // Answered on the first refusal: a lock is no race to try again.
    expect(tries()).toBe(1)
  })

  it('outside a transaction, a create is guarded against locks for the id its caller gave, not for one it made', async () => {
    const w = await world()
    await w.client.tokens.create({ type: 'token', data: 'made' })
    expect(checksOf(lastTokenWrite(w.seen.batches), 'token.unlocked')).toEqual([])
    await w.client.tokens.create({ id: 'given', type: 'token', data: 'given' })
    expect(checksOf(lastTokenWrite(w.seen.batches), 'token.unlocked')).toMatchObject([{ id: 'given' }])
    const tx = await w.client.transactions.create()
    await w.inTx(tx.id).tokens.create({ type: 'token', data: 'made in tx' })
    // Inside a transaction every id is locked, the ones it made too.
    expect(checksOf(lastTokenWrite(w.seen.batches), 'token.unlocked')).toHaveLength(1)
  })
})

import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import type { Store } from '../../src/store/contract.js'
import { failure, setup } from './setup.js'

async function withTx() {
  const s = await setup()
  const tx = await s.client.transactions.create()
  const inTx = s.service.connect(s.full.key, { transactionId: tx.id })
  return { ...s, tx, inTx }
}

describe('transactions', () => {
  it('creates a transaction that expires after an hour', async () => {
    const { tx, full } = await withTx()
    expect(tx).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      created_at: '2030-01-01T00:00:00.000Z',
      created_by: full.application.id,
      expires_at: '2030-01-01T01:00:00.000Z',
    })
  })

  it('token create is invisible outside until commit, visible inside', async () => {
    const { client, inTx, tx } = await withTx()
    const t = await inTx.tokens.create({ type: 'x', data: 'new' })
    expect((await inTx.tokens.get(t.id)).data).toBe('new')
    expect((await failure(client.tokens.get(t.id))).code).toBe('not_found')
    await client.transactions.commit(tx.id)
    expect((await client.tokens.get(t.id)).data).toBe('new')
  })

  it('token update and delete are invisible outside until commit', async () => {
    const { client, inTx, tx } = await withTx()
    const a = await client.tokens.create({ type: 'x', data: 'a' })
    const b = await client.tokens.create({ type: 'x', data: 'b' })
    await inTx.tokens.update(a.id, { data: 'a2' })
    await inTx.tokens.delete(b.id)
    expect((await inTx.tokens.get(a.id)).data).toBe('a2')
    expect((await failure(inTx.tokens.get(b.id))).code).toBe('not_found')
    expect((await client.tokens.get(a.id)).data).toBe('a')
    expect((await client.tokens.get(b.id)).data).toBe('b')
    await client.transactions.commit(tx.id)
    expect((await client.tokens.get(a.id)).data).toBe('a2')
    expect((await failure(client.tokens.get(b.id))).code).toBe('not_found')
  })

  // The reference (docs/concepts/transactions.mdx of Basis-Theory/developers.basistheory.com):
  // "The following endpoints support transactions: Create Token, Update Token, Delete Token,
  // Tokenize". Every other endpoint ignores the header, so association create and delete and child
  // create apply at once and survive a rollback; reads with the header still read through it.
  it('link, unlink and child create ignore the transaction: they apply at once and survive a rollback (docs/concepts/transactions.mdx)', async () => {
    const { client, inTx, tx } = await withTx()
    const p = await client.tokens.create({ type: 'x', data: 'p' })
    const a = await client.tokens.create({ type: 'x', data: 'a' })
    const b = await client.tokens.create({ type: 'x', data: 'b' })
    await client.tokens.children.link(p.id, b.id)
    await inTx.tokens.children.link(p.id, a.id)
    await inTx.tokens.children.unlink(p.id, b.id)
    const child = await inTx.tokens.children.create(p.id, { type: 'kid', data: 'k' })
    const ids = async (c: typeof client) => (await c.tokens.children.list(p.id)).data.map((t) => t.id)
    expect(await ids(client)).toEqual([a.id, child.id])
    expect(await ids(inTx)).toEqual([a.id, child.id])
    expect((await client.tokens.get(child.id)).data).toBe('k')
    // Nothing was staged: the transaction holds no write and no lock.
    await client.tokens.update(child.id, { data: 'k2' })
    await client.transactions.rollback(tx.id)
    expect(await ids(client)).toEqual([a.id, child.id])
    expect((await client.tokens.get(child.id)).data).toBe('k2')
  })

  it('association endpoints read committed tokens, not the staged ones; reads with the header see the staged ones (docs/concepts/transactions.mdx)', async () => {
    const { client, inTx, tx } = await withTx()
    const p = await client.tokens.create({ type: 'x', data: 'p' })
    const staged = await inTx.tokens.create({ type: 'x', data: 'staged' })
    // The staged token does not exist outside the transaction, and linking ignores the transaction.
    expect((await failure(inTx.tokens.children.link(p.id, staged.id))).code).toBe('not_found')
    expect((await failure(inTx.tokens.children.create(staged.id, { type: 'x', data: 1 }))).code).toBe(
      'not_found',
    )
    const kid = await client.tokens.create({ type: 'x', data: 'kid' })
    await client.tokens.children.link(p.id, kid.id)
    await inTx.tokens.update(kid.id, { data: 'kid in tx' })
    await inTx.tokens.delete(p.id)
    // Reads with the header read through the transaction: the parent is deleted there.
    expect((await failure(inTx.tokens.children.list(p.id))).code).toBe('not_found')
    expect((await client.tokens.children.list(p.id)).data.map((t) => t.data)).toEqual(['kid'])
    await client.transactions.commit(tx.id)
    expect((await failure(client.tokens.children.list(p.id))).code).toBe('not_found')
  })

  it('a header naming an unknown or closed transaction is ignored by the association endpoints', async () => {
    const { client, service, full, tx } = await withTx()
    await client.transactions.rollback(tx.id)
    const p = await client.tokens.create({ type: 'x', data: 'p' })
    const a = await client.tokens.create({ type: 'x', data: 'a' })
    for (const transactionId of [tx.id, '00000000-0000-4000-8000-000000000000']) {
      const c = service.connect(full.key, { transactionId })
      await c.tokens.children.link(p.id, a.id)
      const kid = await c.tokens.children.create(p.id, { type: 'x', data: 1 })
      await c.tokens.children.unlink(p.id, a.id)
      expect((await client.tokens.children.list(p.id)).data.map((t) => t.id)).toContain(kid.id)
    }
  })

  it('locks a written token against other transactions and outside writes until it ends', async () => {
    const { client, inTx, tx, service, full } = await withTx()
    const a = await client.tokens.create({ type: 'x', data: 'a' })
    await inTx.tokens.update(a.id, { data: 'tx' })
    const other = await client.transactions.create()
    const inOther = service.connect(full.key, { transactionId: other.id })
    expect((await failure(inOther.tokens.update(a.id, { data: 'other' }))).code).toBe('conflict')
    expect((await failure(inOther.tokens.delete(a.id))).code).toBe('conflict')
    expect((await failure(client.tokens.update(a.id, { data: 'outside' }))).code).toBe('conflict')
    expect((await failure(client.tokens.delete(a.id))).code).toBe('conflict')
    // A token id created inside is locked too.
    await inTx.tokens.create({ id: 'fresh', type: 'x', data: 1 })
    expect((await failure(client.tokens.create({ id: 'fresh', type: 'x', data: 2 }))).code).toBe('conflict')
    // Reads are not blocked.
    expect((await client.tokens.get(a.id)).data).toBe('a')
    await client.transactions.rollback(tx.id)
    await client.tokens.update(a.id, { data: 'outside' })
    await inOther.tokens.delete(a.id)
  })

  it('outside a transaction, a create guards against locks only the ids its caller gave: an id it made no transaction can hold', async () => {
    const inner = memoryStore()
    const unlockedGuards: string[][] = []
    const recording: Store = {
      ...inner,
      async write(batch) {
        if (batch.ops.some((op) => op.op === 'token.put' || op.op === 'staged.put'))
          unlockedGuards.push(
            (batch.checks ?? []).flatMap((c) => (c.check === 'token.unlocked' ? [c.id] : [])),
          )
        return inner.write(batch)
      },
    }
    const { client, service, full } = await setup({ store: recording })
    const made = await client.tokens.create({ type: 'x', data: 1 })
    await client.tokens.create({ id: 'given', type: 'x', data: 2 })
    const tree = (await client.tokens.tokenize({
      a: { type: 'x', data: 3 },
      b: 'plain',
      c: { id: 'given-in-tree', type: 'x', data: 4 },
    })) as { a: { id: string } }
    await client.tokens.children.create(made.id, { type: 'x', data: 5 })
    await client.tokens.children.create(made.id, { id: 'given-child', type: 'x', data: 6 })
    expect(tree.a.id).toMatch(/^[0-9a-f-]{36}$/)
    expect(unlockedGuards).toEqual([[], ['given'], ['given-in-tree'], [], ['given-child']])

    // A given id a transaction's staged create locked is still refused, on every path.
    const tx = await client.transactions.create()
    const inTx = service.connect(full.key, { transactionId: tx.id })
    for (const id of ['held', 'held-in-tree', 'held-child'])
      await inTx.tokens.create({ id, type: 'x', data: 0 })
    expect((await failure(client.tokens.create({ id: 'held', type: 'x', data: 7 }))).code).toBe('conflict')
    expect(
      (await failure(client.tokens.tokenize({ t: { id: 'held-in-tree', type: 'x', data: 8 } }))).code,
    ).toBe('conflict')
    expect(
      (await failure(client.tokens.children.create(made.id, { id: 'held-child', type: 'x', data: 9 }))).code,
    ).toBe('conflict')
    // Inside a transaction an id it made is guarded and locked as any other.
    unlockedGuards.length = 0
    const staged = await inTx.tokens.create({ type: 'x', data: 10 })
    expect(unlockedGuards).toEqual([[staged.id]])
    expect((await failure(client.tokens.create({ id: staged.id, type: 'x', data: 11 }))).code).toBe(
      'conflict',
    )
  })

  it('rollback leaves tokens and associations exactly as before', async () => {
    const { client, inTx, tx, store } = await withTx()
    const p = await client.tokens.create({ type: 'x', data: 'p' })
    const a = await client.tokens.create({ type: 'x', data: 'a' })
    await client.tokens.children.link(p.id, a.id)
    const before = await store.dump()
    await inTx.tokens.update(p.id, { data: 'changed' })
    await inTx.tokens.delete(a.id)
    await inTx.tokens.create({ type: 'x', data: 'n' })
    await client.transactions.rollback(tx.id)
    const after = await store.dump()
    const { transactions: _b, ...restBefore } = before
    const { transactions: afterTx, ...restAfter } = after
    expect(JSON.stringify(restAfter)).toBe(JSON.stringify(restBefore))
    // The staged records went with the rollback (restAfter.staged equals the empty restBefore.staged).
    expect(afterTx).toMatchObject([{ id: tx.id, state: 'rolled_back' }])
    expect(after.staged).toEqual([])
  })

  it('commit and rollback answer 409 when not open, 404 when unknown or foreign, 403 for another application', async () => {
    const { client, tx, keyFor, service } = await withTx()
    await client.transactions.commit(tx.id)
    expect((await failure(client.transactions.commit(tx.id))).code).toBe('conflict')
    expect((await failure(client.transactions.rollback(tx.id))).code).toBe('conflict')
    expect((await failure(client.transactions.commit('00000000-0000-4000-8000-000000000000'))).code).toBe(
      'not_found',
    )
    const t2 = await client.transactions.create()
    const sibling = await keyFor('private', ['token:read'])
    expect((await failure(sibling.client.transactions.commit(t2.id))).code).toBe('forbidden')
    const other = await service.admin.createTenant({ name: 'other' })
    const foreign = await keyFor('private', ['token:read'], undefined, other.id)
    expect((await failure(foreign.client.transactions.rollback(t2.id))).code).toBe('not_found')
  })

  it('writes enlisted in an unknown, foreign, closed or expired transaction are refused and write nothing', async () => {
    const { client, service, full, keyFor, store, clock, tx } = await withTx()
    const unknown = service.connect(full.key, { transactionId: 'nope' })
    expect((await failure(unknown.tokens.create({ type: 'x', data: 1 }))).code).toBe('not_found')
    const other = await service.admin.createTenant({ name: 'other' })
    const foreign = await keyFor('private', ['token:create'], undefined, other.id)
    const foreignTx = service.connect(foreign.key, { transactionId: tx.id })
    expect((await failure(foreignTx.tokens.create({ type: 'x', data: 1 }))).code).toBe('not_found')
    const closed = await client.transactions.create()
    await client.transactions.rollback(closed.id)
    const inClosed = service.connect(full.key, { transactionId: closed.id })
    expect((await failure(inClosed.tokens.create({ type: 'x', data: 1 }))).code).toBe('conflict')
    clock.advance(60 * 60_000)
    const inExpired = service.connect(full.key, { transactionId: tx.id })
    const before = await store.dump()
    expect((await failure(inExpired.tokens.create({ type: 'x', data: 1 }))).code).toBe('conflict')
    expect(await store.dump()).toEqual(before)
  })

  it('expiry releases locks; the expired transaction answers 409 and applies nothing', async () => {
    const { client, inTx, tx, clock, service, store } = await withTx()
    const a = await client.tokens.create({ type: 'x', data: 'a' })
    await inTx.tokens.update(a.id, { data: 'tx' })
    expect((await failure(client.tokens.update(a.id, { data: 'out' }))).code).toBe('conflict')
    clock.advance(60 * 60_000)
    await client.tokens.update(a.id, { data: 'out' })
    expect((await failure(client.transactions.commit(tx.id))).code).toBe('conflict')
    expect((await client.tokens.get(a.id)).data).toBe('out')
    expect((await store.dump()).transactions).toMatchObject([{ state: 'expired' }])
    expect((await store.dump()).staged).toEqual([])
    const t2 = await client.transactions.create()
    clock.advance(60 * 60_000)
    expect(await service.admin.sweep()).toEqual({
      sessions: 0,
      applications: 0,
      transactions: 1,
      tokens: 0,
      cvcs: 0,
      endedTransactions: 0,
      idempotency: 0,
      tokenIntents: 0,
    })
    expect((await failure(client.transactions.rollback(t2.id))).code).toBe('conflict')
  })

  it('a lock taken over from an expired transaction stays with its new holder when the old one is ended', async () => {
    const { client, inTx, tx, clock, service, full } = await withTx()
    const a = await client.tokens.create({ type: 'x', data: 'a' })
    const b = await client.tokens.create({ type: 'x', data: 'b' })
    const swept = await client.transactions.create()
    const inSwept = service.connect(full.key, { transactionId: swept.id })
    await inTx.tokens.update(a.id, { data: 'old' })
    await inSwept.tokens.update(b.id, { data: 'old' })
    clock.advance(60 * 60_000)
    const taker = await client.transactions.create()
    const inTaker = service.connect(full.key, { transactionId: taker.id })
    await inTaker.tokens.update(a.id, { data: 'new' })
    await inTaker.tokens.update(b.id, { data: 'new' })
    // Ending the expired ones (a commit that finds it expired, and the sweep) leaves the taker's locks.
    expect((await failure(client.transactions.commit(tx.id))).code).toBe('conflict')
    expect((await service.admin.sweep()).transactions).toBe(1)
    expect((await failure(client.tokens.update(a.id, { data: 'outside' }))).code).toBe('conflict')
    expect((await failure(client.tokens.update(b.id, { data: 'outside' }))).code).toBe('conflict')
    await client.transactions.commit(taker.id)
    expect((await client.tokens.get(a.id)).data).toBe('new')
    expect((await client.tokens.get(b.id)).data).toBe('new')
    await client.tokens.update(a.id, { data: 'outside' })
    await client.tokens.update(b.id, { data: 'outside' })
  })

  it('of two concurrent commits of one transaction exactly one succeeds, the other 409', async () => {
    const { client, inTx, tx } = await withTx()
    await inTx.tokens.create({ type: 'x', data: 1 })
    const results = await Promise.allSettled([
      client.transactions.commit(tx.id),
      client.transactions.commit(tx.id),
    ])
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected'])
    const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult
    expect(rejected.reason.code).toBe('conflict')
  })

  it('a commit of N writes is all-or-nothing when the store fails in the middle', async () => {
    let failCommit = true
    const inner = memoryStore()
    const failing: Store = {
      ...inner,
      async write(batch) {
        if (
          failCommit &&
          batch.ops.some((op) => op.op === 'transaction.put' && op.transaction.state === 'committed')
        ) {
          // The store takes the batch partly in hand, then fails: nothing may be applied.
          await inner.write({ checks: batch.checks ?? [], ops: [] })
          throw new Error('disk on fire')
        }
        return inner.write(batch)
      },
    }
    const { client, service, full, store } = await setup({ store: failing })
    const tx = await client.transactions.create()
    const inTx = service.connect(full.key, { transactionId: tx.id })
    for (let i = 0; i < 10; i++) await inTx.tokens.create({ id: `t${i}`, type: 'x', data: i })
    const before = await store.dump()
    await expect(client.transactions.commit(tx.id)).rejects.toThrow('disk on fire')
    expect((await store.dump()).tokens).toEqual(before.tokens)
    failCommit = false
    await client.transactions.commit(tx.id)
    expect((await store.dump()).tokens.filter((t) => t.id.startsWith('t'))).toHaveLength(10)
  })

  it('a commit that would bring back a token expired while the transaction held it is a 409; the token goes once the transaction ends', async () => {
    const { client, inTx, tx, clock, service, store } = await withTx()
    const expiresAt = new Date(clock.now().getTime() + 60_000).toISOString()
    const a = await client.tokens.create({ type: 'x', data: 'expiring', expires_at: expiresAt })
    const b = await client.tokens.create({ type: 'x', data: 'kept' })
    await inTx.tokens.update(a.id, { expires_at: null } as never)
    await inTx.tokens.update(b.id, { data: 'changed' })
    clock.advance(120_000)
    expect((await failure(client.tokens.get(a.id))).code).toBe('not_found')
    const refused = await failure(client.transactions.commit(tx.id))
    expect([refused.code, refused.message]).toEqual([
      'conflict',
      `token ${a.id} expired while the transaction held it: roll the transaction back`,
    ])
    // Nothing landed: the other staged write neither.
    expect((await client.tokens.get(b.id)).data).toBe('kept')
    expect((await failure(client.tokens.get(a.id))).code).toBe('not_found')
    await client.transactions.rollback(tx.id)
    await service.admin.sweep()
    expect((await failure(client.tokens.get(a.id))).code).toBe('not_found')
    expect((await store.dump()).tokens.map((t) => t.id)).not.toContain(a.id)
  })

  it("a write outside a transaction that passes an expired lock takes it: the transaction can't commit over it later, whatever its server's clock says", async () => {
    const { client, inTx, tx, clock } = await withTx()
    const a = await client.tokens.create({ type: 'x', data: 'a' })
    const b = await client.tokens.create({ type: 'x', data: 'b' })
    await inTx.tokens.update(a.id, { data: 'staged' })
    await inTx.tokens.update(b.id, { data: 'staged' })
    // A server whose clock is past the transaction's expiry writes a token it held, and acknowledges it.
    clock.advance(60 * 60_000)
    await client.tokens.update(a.id, { data: 'acknowledged' })
    // The server that opened it, its clock a second behind the expiry, commits: refused, nothing lands.
    clock.advance(-1000)
    const refused = await failure(client.transactions.commit(tx.id))
    expect([refused.code, refused.message]).toEqual(['conflict', 'the transaction has expired'])
    expect((await client.tokens.get(a.id)).data).toBe('acknowledged')
    expect((await client.tokens.get(b.id)).data).toBe('b')
  })

  it('a transaction whose lock a write outside it took cannot stage that token again to take the lock back', async () => {
    const { client, inTx, tx, clock } = await withTx()
    const a = await client.tokens.create({ type: 'x', data: 'a' })
    const b = await client.tokens.create({ type: 'x', data: 'b' })
    await inTx.tokens.update(a.id, { data: 'staged' })
    clock.advance(60 * 60_000)
    await client.tokens.update(a.id, { data: 'acknowledged' })
    clock.advance(-1000)
    const restaged = await failure(inTx.tokens.update(a.id, { metadata: { again: 'yes' } }))
    expect([restaged.code, restaged.message]).toEqual([
      'conflict',
      `the transaction has expired: another write took token ${a.id}`,
    ])
    // A token it never staged it may still stage (its clock says it is open); its commit is refused.
    await inTx.tokens.update(b.id, { data: 'staged' })
    const refused = await failure(client.transactions.commit(tx.id))
    expect([refused.code, refused.message]).toEqual(['conflict', 'the transaction has expired'])
    expect((await client.tokens.get(a.id)).data).toBe('acknowledged')
    expect((await client.tokens.get(b.id)).data).toBe('b')
  })

  it('a transaction lives no longer than the session that opened it: then the tokens it held are free', async () => {
    const { keyFor, client, service, clock } = await setup()
    const token = await client.tokens.create({ type: 'x', data: 'a' })
    const pub = await keyFor('public', ['token:create'])
    const s = await pub.client.sessions.create()
    const sessionEnds = new Date(clock.now().getTime() + 120_000).toISOString()
    await client.sessions.authorize({
      nonce: s.nonce,
      permissions: ['token:update'],
      expires_at: sessionEnds,
    })
    const tx = await service.connect(s.session_key).transactions.create()
    expect(tx.expires_at).toBe(sessionEnds)
    await service.connect(s.session_key, { transactionId: tx.id }).tokens.update(token.id, { data: 'staged' })
    expect((await failure(client.tokens.update(token.id, { data: 'out' }))).code).toBe('conflict')
    clock.advance(120_000)
    await client.tokens.update(token.id, { data: 'out' })
    expect((await client.tokens.get(token.id)).data).toBe('out')
  })

  it('pending sessions cannot open transactions; authorized ones can', async () => {
    const { keyFor, client, service } = await setup()
    const pub = await keyFor('public', ['token:create'])
    const s = await pub.client.sessions.create()
    const session = service.connect(s.session_key)
    expect((await failure(session.transactions.create())).code).toBe('forbidden')
    await client.sessions.authorize({ nonce: s.nonce, permissions: ['token:create'] })
    const tx = await session.transactions.create()
    await service.connect(s.session_key, { transactionId: tx.id }).tokens.create({ type: 'x', data: 1 })
    await session.transactions.commit(tx.id)
  })

  it('staging, reads and writes in a transaction of 300 staged writes read the staged records of the tokens they touch, not the rest; commit applies all 300', async () => {
    const inner = memoryStore()
    let handed = 0
    let listed = 0
    const counting: Store = {
      ...inner,
      async getStaged(tenantId, transactionId, ids) {
        const found = await inner.getStaged(tenantId, transactionId, ids)
        handed += found.length
        return found
      },
      async listStaged(tenantId, transactionId, query) {
        const found = await inner.listStaged(tenantId, transactionId, query)
        listed += found.length
        return found
      },
    }
    const { client, service, full, store } = await setup({ store: counting })
    const tx = await client.transactions.create()
    const inTx = service.connect(full.key, { transactionId: tx.id })
    const created: string[] = []
    for (let i = 0; i < 300; i++) created.push((await inTx.tokens.create({ type: 'x', data: `d${i}` })).id)
    expect(listed).toBe(0)
    handed = 0
    const last = await inTx.tokens.create({ type: 'x', data: 'last' })
    expect((await inTx.tokens.get(created[150]!)).data).toBe('d150')
    await inTx.tokens.update(created[7]!, { data: 'seven' })
    await inTx.tokens.delete(created[8]!)
    // Each call read the staged record of its own token (update and delete: three times, the last
    // to guard that the transaction still holds its lock), none other.
    expect(handed).toBeLessThanOrEqual(8)
    expect(listed).toBe(0)
    expect((await store.dump()).staged).toHaveLength(301)
    await client.transactions.commit(tx.id)
    expect((await store.dump()).staged).toEqual([])
    const tokens = (await store.dump()).tokens.filter((t) => t.type === 'x')
    expect(tokens).toHaveLength(300)
    expect((await client.tokens.get(last.id)).data).toBe('last')
    expect((await client.tokens.get(created[7]!)).data).toBe('seven')
    expect((await failure(client.tokens.get(created[8]!))).code).toBe('not_found')
  })

  it("a transaction's view pages through 300 committed and 300 staged tokens in id order, staged updates and deletes applied, each token once", async () => {
    const { client, inTx, tx } = await withTx()
    const pad = (n: number) => String(n).padStart(3, '0')
    for (let i = 0; i < 300; i += 100)
      await client.tokens.tokenize(
        Array.from({ length: 100 }, (_, j) => ({ id: `t-${pad(i + j)}-a`, type: 'x', data: 'committed' })),
      )
    for (let i = 0; i < 300; i++) await inTx.tokens.create({ id: `t-${pad(i)}-b`, type: 'x', data: 'staged' })
    await inTx.tokens.update('t-007-a', { data: 'updated' })
    await inTx.tokens.delete('t-008-a')
    await inTx.tokens.delete('t-009-b')
    const seen: { id: string; data: unknown }[] = []
    let start: string | undefined
    do {
      const page = await inTx.tokens.listV2({ size: 100, ...(start ? { start } : {}) })
      seen.push(...page.data.map((t) => ({ id: t.id, data: t.data })))
      start = page.pagination.next
    } while (start)
    const expected = Array.from({ length: 300 }, (_, i) => [`t-${pad(i)}-a`, `t-${pad(i)}-b`])
      .flat()
      .filter((id) => id !== 't-008-a' && id !== 't-009-b')
    expect(seen.map((t) => t.id)).toEqual(expected)
    expect(seen.find((t) => t.id === 't-007-a')?.data).toBe('updated')
    expect(seen.find((t) => t.id === 't-150-b')?.data).toBe('staged')
    // Outside the transaction: the committed tokens only, as they were.
    const outside = await client.tokens.list({ size: 100, page: 1 })
    expect(outside.pagination.total_items).toBe(300)
    await client.transactions.rollback(tx.id)
  })
})

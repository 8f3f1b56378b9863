/**
 * A transaction belongs to the application that made it: another application of the tenant can
 * neither read through it nor write into it (404, as for an unknown one), in process and over HTTP.
 * And one transaction the store can't end never stops the sweep for anyone else.
 */
import { describe, expect, it } from 'vitest'
import { createHttpHandler } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import type { Store } from '../../src/store/contract.js'
import { delegatingStore } from '../../src/store/delegate.js'
import { StoreError } from '../../src/store/error.js'
import { failure, setup } from '../core/setup.js'

describe("another application's transaction", () => {
  it('reading through it or enlisting in it answers 404 in process, as an unknown one does, and stages nothing', async () => {
    const { client, service, full, keyFor, store } = await setup()
    const tx = await client.transactions.create()
    const inTx = service.connect(full.key, { transactionId: tx.id })
    const committed = await client.tokens.create({ type: 'token', data: 'committed' })
    const staged = await inTx.tokens.create({ type: 'token', data: 'staged secret' })
    await inTx.tokens.update(committed.id, { data: 'updated secret' })
    const sibling = await keyFor(
      'private',
      ['token:create', 'token:read', 'token:update', 'token:delete'],
      [
        {
          description: 'all',
          priority: 1,
          container: '/',
          transform: 'reveal',
          permissions: ['token:read', 'token:create', 'token:update', 'token:delete'],
        },
      ],
    )
    const unknown = service.connect(sibling.key, { transactionId: '00000000-0000-4000-8000-000000000000' })
    const through = service.connect(sibling.key, { transactionId: tx.id })
    for (const c of [through, unknown]) {
      expect((await failure(c.tokens.get(staged.id))).code).toBe('not_found')
      expect((await failure(c.tokens.get(committed.id))).code).toBe('not_found')
      expect((await failure(c.tokens.list())).code).toBe('not_found')
    }
    const before = await store.dump()
    expect((await failure(through.tokens.create({ type: 'token', data: 'planted' }))).code).toBe('not_found')
    expect((await failure(through.tokens.update(committed.id, { data: 'planted' }))).code).toBe('not_found')
    expect((await failure(through.tokens.delete(committed.id))).code).toBe('not_found')
    expect((await failure(through.tokens.tokenize({ a: 'planted' }))).code).toBe('not_found')
    expect(await store.dump()).toEqual(before)
    // Its creator still reads and commits it as before.
    expect((await inTx.tokens.get(staged.id)).data).toBe('staged secret')
    await client.transactions.commit(tx.id)
    expect((await sibling.client.tokens.get(committed.id)).data).toBe('updated secret')
  })

  it.each(['SVC', 'BT'])(
    'over HTTP, %s-TRANSACTION-ID of another application answers 404 on read and write',
    async (prefix) => {
      const { client, service, full, keyFor } = await setup()
      const tx = await client.transactions.create()
      const staged = await service
        .connect(full.key, { transactionId: tx.id })
        .tokens.create({ type: 'token', data: 's' })
      const sibling = await keyFor('private', ['token:create', 'token:read'])
      const handler = createHttpHandler(service)
      const call = (path: string, init: RequestInit = {}) =>
        handler(
          new Request(`http://vault.test${path}`, {
            ...init,
            headers: {
              [`${prefix}-API-KEY`]: sibling.key,
              [`${prefix}-TRANSACTION-ID`]: tx.id,
              'content-type': 'application/json',
            },
          }),
        )
      expect((await call(`/tokens/${staged.id}`)).status).toBe(404)
      const created = await call('/tokens', {
        method: 'POST',
        body: JSON.stringify({ type: 'token', data: 'x' }),
      })
      expect(created.status).toBe(404)
      expect(await created.json()).toMatchObject({ status: 404 })
      expect((await client.tokens.list({ size: 1 })).pagination.total_items).toBe(0)
    },
  )
})

describe('the sweep isolates each step and each record', () => {
  /** `base`, whose writes throw (a store failure) for any write that ends the transaction `id()`. */
  const failingEndOf = (base: Store, id: () => string | undefined) =>
    delegatingStore(base, {
      write: (batch) => {
        const ends = batch.ops.some(
          (op) =>
            op.op === 'transaction.put' && op.transaction.id === id() && op.transaction.state !== 'open',
        )
        if (ends) return Promise.reject(new StoreError('unavailable', 'test: this write always fails'))
        return base.write(batch)
      },
    })

  it("a transaction whose end always fails is reported and skipped; another tenant's expired token and card cvc still go", async () => {
    let stuck: string | undefined
    const base = memoryStore()
    const { client, service, clock, full } = await setup({ store: failingEndOf(base, () => stuck) })
    const tx = await client.transactions.create()
    stuck = tx.id
    // It stages a write, so its end has work to do.
    const held = await client.tokens.create({ type: 'token', data: 'held' })
    await service.connect(full.key, { transactionId: tx.id }).tokens.update(held.id, { data: 'staged' })
    const other = await service.admin.createTenant({ name: 'other' })
    const { key } = await service.admin.createApplication({
      tenantId: other.id,
      name: 'other app',
      type: 'private',
      permissions: ['token:create', 'token:read'],
    })
    const otherClient = service.connect(key)
    const soon = new Date(clock.now().getTime() + 60_000).toISOString()
    const expiring = await otherClient.tokens.create({ type: 'token', data: 'gone soon', expires_at: soon })
    await otherClient.tokens.create({
      id: 'card',
      type: 'card',
      data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031, cvc: '123' },
    })
    clock.advance(2 * 60 * 60_000)
    const swept = await service.admin.sweep()
    expect(swept.tokens).toBe(1)
    expect(swept.cvcs).toBe(1)
    expect(swept.transactions).toBe(0)
    expect(swept.failed).toBe(1)
    expect(swept.failures).toEqual([
      {
        step: 'transaction.open',
        tenant_id: expect.any(String),
        id: tx.id,
        error: expect.stringContaining('unavailable'),
      },
    ])
    expect((await failure(otherClient.tokens.get(expiring.id))).code).toBe('not_found')
    expect((await base.getToken(other.id, 'card'))?.cvc_expires_at).toBeUndefined()
    // Once the store can end it, the next sweep does.
    stuck = undefined
    const again = await service.admin.sweep()
    expect(again.transactions).toBe(1)
    expect(again.failed).toBeUndefined()
  })

  it('a step whose listing fails is reported; the steps after it still run', async () => {
    const base = memoryStore()
    let broken = false
    const store = delegatingStore(base, {
      listExpired: (query) =>
        broken && query.kind === 'transaction.open'
          ? Promise.reject(new StoreError('unavailable', 'test: listing fails'))
          : base.listExpired(query),
    })
    const { client, service, clock } = await setup({ store })
    const soon = new Date(clock.now().getTime() + 60_000).toISOString()
    const t = await client.tokens.create({ type: 'token', data: 'x', expires_at: soon })
    clock.advance(2 * 60_000)
    broken = true
    const swept = await service.admin.sweep()
    expect(swept.tokens).toBe(1)
    expect(swept.failures).toEqual([
      { step: 'transaction.open', error: expect.stringContaining('listing fails') },
    ])
    expect((await failure(client.tokens.get(t.id))).code).toBe('not_found')
  })
})

import { expect, it } from 'vitest'
import type { StoredTokenIntent } from '../../src/kernel/index.js'
import type { Store } from '../../src/store/index.js'
import { NOW, T, U } from './records.js'

/** A token intent of tenant `tenant` named `id`, expiring `expiresAt`. */
export function tokenIntent(
  id: string,
  tenant = T,
  expiresAt = '2030-01-02T00:00:00.000Z',
): StoredTokenIntent {
  return {
    id,
    tenant_id: tenant,
    type: 'card',
    data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 },
    fingerprint: `fp-${id}`,
    card: { bin: '42424242', last4: '4242', brand: 'visa', funding: null, authentication: null },
    created_by: 'app-1',
    created_at: NOW,
    expires_at: expiresAt,
  }
}

/**
 * Token intents: every field kept as put, a put replaces, a delete removes, tenants never see each
 * other's, `listExpired` lists those due (at `expires_at` and before, never later) in bounded
 * batches, and the dump holds them. Registered inside the store suite's `describe`.
 */
export function tokenIntentsTests(fresh: () => Promise<Store>): void {
  const put = (store: Store, intent: StoredTokenIntent) =>
    store.write({ ops: [{ op: 'token_intent.put', intent }] })

  it('keeps every field of a token intent as put, and a put replaces the whole intent', async () => {
    const store = await fresh()
    const full = tokenIntent('i1')
    expect((await put(store, full)).ok).toBe(true)
    expect(await store.getTokenIntent(T, 'i1')).toEqual(full)
    const bank: StoredTokenIntent = {
      ...tokenIntent('i1'),
      type: 'bank',
      data: { routing_number: '110000000', account_number: '1234' },
      bank: { routing_number: '110000000', account_number_last4: '1234' },
    }
    delete bank.card
    await put(store, bank)
    expect(await store.getTokenIntent(T, 'i1')).toEqual(bank)
    expect((await store.dump()).token_intents).toEqual([bank])
    await store.close()
  })

  it("never answers another tenant's token intent, and a delete removes only its own", async () => {
    const store = await fresh()
    await put(store, tokenIntent('i1', T))
    await put(store, { ...tokenIntent('i1', U), type: 'bank' })
    expect((await store.getTokenIntent(U, 'i1'))?.type).toBe('bank')
    expect((await store.getTokenIntent(T, 'i1'))?.type).toBe('card')
    await store.write({ ops: [{ op: 'token_intent.delete', tenant_id: T, id: 'i1' }] })
    expect(await store.getTokenIntent(T, 'i1')).toBeNull()
    expect((await store.getTokenIntent(U, 'i1'))?.type).toBe('bank')
    expect(await store.getTokenIntent(T, 'missing')).toBeNull()
    await store.write({ ops: [{ op: 'token_intent.delete', tenant_id: T, id: 'missing' }] })
    expect((await store.dump()).token_intents.map((i) => i.tenant_id)).toEqual([U])
    await store.close()
  })

  it('guards a write on a token intent being there (token_intent.present), writing nothing when it is not', async () => {
    const store = await fresh()
    await put(store, tokenIntent('i1', T))
    const present = { check: 'token_intent.present' as const, tenant_id: T, id: 'i1' }
    const consume = { op: 'token_intent.delete' as const, tenant_id: T, id: 'i1' }
    expect(await store.write({ checks: [present], ops: [consume] })).toEqual({ ok: true })
    expect(await store.write({ checks: [present], ops: [consume] })).toEqual({ ok: false, failed: present })
    await put(store, tokenIntent('i1', U))
    expect((await store.write({ checks: [present], ops: [] })).ok).toBe(false)
    await store.close()
  })

  it('lists token intents due at or before a time, at most the limit, and none once deleted', async () => {
    const store = await fresh()
    await put(store, tokenIntent('a', T, '2030-01-02T00:00:00.000Z'))
    await put(store, tokenIntent('b', U, '2030-01-02T00:00:00.001Z'))
    await put(store, tokenIntent('c', T, '2030-01-03T00:00:00.000Z'))
    const keys = (before: string, limit = 10) =>
      store
        .listExpired({ kind: 'token_intent', before, limit })
        .then((list) => list.map((k) => `${k.tenant_id}/${k.id}`).sort())
    expect(await keys('2030-01-01T23:59:59.999Z')).toEqual([])
    expect(await keys('2030-01-02T00:00:00.000Z')).toEqual([`${T}/a`])
    expect(await keys('2030-01-02T00:00:00.001Z')).toEqual([`${T}/a`, `${U}/b`].sort())
    expect(await keys('2030-01-04T00:00:00.000Z', 2)).toHaveLength(2)
    expect(await keys('2030-01-04T00:00:00.000Z', 0)).toEqual([])
    await store.write({ ops: [{ op: 'token_intent.delete', tenant_id: T, id: 'a' }] })
    expect(await keys('2030-01-02T00:00:00.000Z')).toEqual([])
    // A put that moves an intent's expiry moves its place in the listing.
    await put(store, tokenIntent('c', T, '2030-01-01T12:00:00.000Z'))
    expect(await keys('2030-01-01T12:00:00.000Z')).toEqual([`${T}/c`])
    // Intents are not another kind's records.
    expect(await store.listExpired({ kind: 'token', before: '2031-01-01T00:00:00.000Z', limit: 10 })).toEqual(
      [],
    )
    await store.close()
  })

  it("lists a tenant's token intents by id in keyset pages, expired or not, never another tenant's", async () => {
    const store = await fresh()
    const ids = ['i2', 'I9', 'i10', 'i1']
    await store.write({
      ops: [
        ...ids.map((id) => ({
          op: 'token_intent.put' as const,
          intent: tokenIntent(id, T, id === 'i1' ? '2029-12-31T00:00:00.000Z' : undefined),
        })),
        { op: 'token_intent.put', intent: tokenIntent('i0', U) },
      ],
    })
    const page = async (after: string | undefined, limit: number) =>
      (await store.listTokenIntents(T, { ...(after === undefined ? {} : { after }), limit })).map((i) => i.id)
    expect(await page(undefined, 10)).toEqual(['I9', 'i1', 'i10', 'i2'])
    expect(await page(undefined, 2)).toEqual(['I9', 'i1'])
    expect(await page('i1', 2)).toEqual(['i10', 'i2'])
    expect(await page('i2', 2)).toEqual([])
    expect(await page(undefined, 0)).toEqual([])
    expect(await store.listTokenIntents(T, { after: 'i10', limit: 1 })).toEqual([tokenIntent('i2')])
    expect((await store.listTokenIntents(U, { limit: 10 })).map((i) => i.id)).toEqual(['i0'])
    await store.write({ ops: [{ op: 'token_intent.delete', tenant_id: T, id: 'i10' }] })
    expect(await page(undefined, 10)).toEqual(['I9', 'i1', 'i2'])
    await store.close()
  })
}

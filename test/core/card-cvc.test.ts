import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, localMasterKey, manualClock } from '../../entry/index.js'
import { Keyring, sealedStore } from '../../src/encryption/sealed-store.js'
import type { Json, Token } from '../../src/kernel/types.js'
import type { Store } from '../../src/store/contract.js'
import { setup } from './setup.js'

const VISA = '4242424242424242'
const CVC = '8317'
const card = { number: VISA, expiration_month: 12, expiration_year: 2031, cvc: CVC }
const { cvc: _cvc, ...noCvc } = card
/** docs/token-types.md: a cvc is deleted one hour after it was given. */
const HOUR = 60 * 60 * 1000

/**
 * The stored token opened with the test vault's master key, by a reader that applies no cvc rule: what the store really holds.
 */
async function stored(store: Store, tenantId: string, id: string) {
  const raw = sealedStore(store, new Keyring(store, [localMasterKey(Buffer.alloc(32, 0x54))]), {
    searchIndexPurpose: 'search-index',
    asRead: (token) => token,
  })
  return raw.getToken(tenantId, id)
}

const dataOf = (t: Token | undefined) => t?.data as Json

describe('card cvc retention: deleted one hour after it is given', () => {
  it('every read shows the cvc until 59:59 and the card without it from 60:00; the store still holds it until the sweep', async () => {
    const { client, clock, service, store, tenant } = await setup()
    await client.tokens.create({ id: 'c1', type: 'card', data: card })
    await client.tokens.create({ id: 'plain', type: 'token', data: { cvc: '123' } })
    const reads = async () => ({
      get: dataOf(await client.tokens.get('c1')),
      list: dataOf((await client.tokens.list({ type: ['card'] })).data[0]),
      listV2: dataOf((await client.tokens.listV2({ type: 'card' })).data[0]),
      search: dataOf((await client.tokens.search({ query: 'type:card' })).data[0]),
      detokenize: await client.tokens.detokenize({ c: '{{ c1 }}', t: '{{ token: c1 }}' }),
      exported: (await service.admin.exportState()).records.tokens.find((t) => t.id === 'c1')?.data,
    })
    clock.advance(HOUR - 1000)
    expect(await reads()).toEqual({
      get: card,
      list: card,
      listV2: card,
      search: card,
      detokenize: { c: card, t: expect.objectContaining({ id: 'c1', data: card }) },
      exported: card,
    })
    clock.advance(1000)
    expect(await reads()).toEqual({
      get: noCvc,
      list: noCvc,
      listV2: noCvc,
      search: noCvc,
      detokenize: { c: noCvc, t: expect.objectContaining({ id: 'c1', data: noCvc }) },
      exported: noCvc,
    })
    // The deadline is a stored field, never shown.
    expect(Object.keys(await client.tokens.get('c1'))).not.toContain('cvc_expires_at')
    // Only cards lose a `cvc`.
    expect((await client.tokens.get('plain')).data).toEqual({ cvc: '123' })
    // Until the sweep, the ciphertext still holds it.
    expect((await stored(store, tenant.id, 'c1'))?.data).toEqual(card)
  })

  it('the sweep rewrites the card without its cvc (sealed afresh), in guarded, bounded batches', async () => {
    const { client, clock, service, store, tenant } = await setup()
    for (let i = 0; i < 5; i++) {
      await client.tokens.create({
        id: `c${i}`,
        type: 'card',
        data: card,
        search_indexes: ['{{ data.cvc }}', '{{ data.expiration_year }}'],
      })
    }
    await client.tokens.create({ id: 'no-cvc', type: 'card', data: noCvc })
    const before = (await store.getToken(tenant.id, 'c0'))!
    expect(before.cvc_expires_at).toBe(new Date(Date.parse('2030-01-01T00:00:00.000Z') + HOUR).toISOString())
    expect((await store.getToken(tenant.id, 'no-cvc'))!.cvc_expires_at).toBeUndefined()
    clock.advance(HOUR - 1)
    expect((await service.admin.sweep()).cvcs).toBe(0)
    expect((await client.tokens.search({ query: `data.cvc:${CVC}` })).pagination.total_items).toBe(5)
    clock.advance(1)
    expect(
      await store.listExpired({ kind: 'token.cvc', before: clock.now().toISOString(), limit: 10 }),
    ).toHaveLength(5)
    expect((await service.admin.sweep()).cvcs).toBe(5)
    const after = (await store.getToken(tenant.id, 'c0'))!
    expect(after.cvc_expires_at).toBeUndefined()
    expect(after.data).not.toEqual(before.data)
    expect(after.search_index_hashes).not.toEqual(before.search_index_hashes)
    for (let i = 0; i < 5; i++) expect((await stored(store, tenant.id, `c${i}`))?.data).toEqual(noCvc)
    expect(await store.listExpired({ kind: 'token.cvc', before: '9999', limit: 10 })).toEqual([])
    // Search indexes were evaluated again on the data without the cvc.
    expect((await client.tokens.search({ query: `data.cvc:${CVC}` })).pagination.total_items).toBe(0)
    // An index that still renders still matches.
    expect((await client.tokens.search({ query: 'data.expiration_year:2031' })).pagination.total_items).toBe(
      5,
    )
    expect((await client.tokens.get('c0')).data).toEqual(noCvc)
    expect((await service.admin.sweep()).cvcs).toBe(0)
  })

  it('the sweep makes the fingerprint again: one that hashed the cvc no longer does', async () => {
    const { client, clock, service } = await setup()
    const fingerprint_expression = '{{ data.number }}/{{ data.cvc }}'
    const made = await client.tokens.create({ id: 'c1', type: 'card', data: card, fingerprint_expression })
    clock.advance(HOUR)
    await service.admin.sweep()
    const swept = await client.tokens.get('c1')
    expect(swept.fingerprint).not.toBe(made.fingerprint)
    const fresh = await client.tokens.create({ id: 'c2', type: 'card', data: noCvc, fingerprint_expression })
    expect(swept.fingerprint).toBe(fresh.fingerprint)
  })

  it('a card whose ciphertext fails its integrity check is left as it is; the sweep goes on', async () => {
    const { client, clock, service, store, tenant } = await setup()
    await client.tokens.create({ id: 'c1', type: 'card', data: card })
    await client.tokens.create({ id: 'c2', type: 'card', data: card })
    const raw1 = (await store.getToken(tenant.id, 'c1'))!
    const raw2 = (await store.getToken(tenant.id, 'c2'))!
    await store.write({ ops: [{ op: 'token.put', token: { ...raw1, data: raw2.data } }] })
    clock.advance(HOUR)
    expect((await service.admin.sweep()).cvcs).toBe(1)
    expect((await stored(store, tenant.id, 'c2'))?.data).toEqual(noCvc)
    expect((await store.getToken(tenant.id, 'c1'))?.data).toEqual(raw2.data)
  })

  it('the sweep works in batches of at most 256 listed keys until none is due', async () => {
    const store = memoryStore()
    const listed: number[] = []
    const listExpired = store.listExpired.bind(store)
    store.listExpired = async (query) => {
      const keys = await listExpired(query)
      if (query.kind === 'token.cvc') listed.push(keys.length)
      return keys
    }
    const { clock, service, tenant, client } = await setup({ store })
    const bodies = Array.from({ length: 300 }, (_, i) => ({ id: `k${i}`, type: 'card', data: card }))
    for (let i = 0; i < bodies.length; i += 100) await client.tokens.tokenize(bodies.slice(i, i + 100))
    clock.advance(HOUR)
    expect((await service.admin.sweep()).cvcs).toBe(300)
    expect(listed).toEqual([256, 44])
    expect((await stored(store, tenant.id, 'k299'))?.data).toEqual(noCvc)
  })

  it('an update giving a cvc restarts the hour; one without keeps the deadline; removing it drops it', async () => {
    const { client, clock, store, tenant } = await setup()
    await client.tokens.create({ id: 'c1', type: 'card', data: card })
    clock.advance(30 * 60_000)
    await client.tokens.update('c1', { metadata: { note: 'x' } })
    clock.advance(30 * 60_000)
    expect((await client.tokens.get('c1')).data).toEqual(noCvc)
    // A new cvc, an hour from now.
    await client.tokens.update('c1', { data: { cvc: '555' } })
    clock.advance(HOUR - 1)
    expect((await client.tokens.get('c1')).data).toEqual({ ...noCvc, cvc: '555' })
    await client.tokens.update('c1', { data: { cvc: '777' } })
    clock.advance(HOUR - 1)
    expect((await client.tokens.get('c1')).data).toEqual({ ...noCvc, cvc: '777' })
    clock.advance(1)
    expect((await client.tokens.get('c1')).data).toEqual(noCvc)
    await client.tokens.update('c1', { data: { cvc: '999' } })
    await client.tokens.update('c1', { data: { cvc: null } })
    expect((await client.tokens.get('c1')).data).toEqual(noCvc)
    expect((await store.getToken(tenant.id, 'c1'))!.cvc_expires_at).toBeUndefined()
  })

  it('tokenize and child creation start the hour too; the token itself and its other fields stay', async () => {
    const { client, clock } = await setup()
    await client.tokens.create({ id: 'parent', type: 'token', data: 'p' })
    await client.tokens.tokenize({ a: { id: 'tk', type: 'card', data: card, metadata: { m: '1' } } })
    await client.tokens.children.create('parent', { id: 'child', type: 'card', data: card })
    clock.advance(HOUR - 1)
    expect((await client.tokens.get('tk')).data).toEqual(card)
    expect((await client.tokens.get('child')).data).toEqual(card)
    clock.advance(1)
    const tk = await client.tokens.get('tk')
    expect(tk.data).toEqual(noCvc)
    expect(tk.metadata).toEqual({ m: '1' })
    expect((await client.tokens.get('child')).data).toEqual(noCvc)
    expect((await client.tokens.children.list('parent')).data.map((t) => t.data)).toEqual([noCvc])
  })

  it('a card staged in a transaction reads, and commits, without a cvc that came due', async () => {
    const { client, clock, full, service, store, tenant } = await setup({ transactionTtlMs: 2 * HOUR })
    const tx = await client.transactions.create()
    const inTx = service.connect(full.key, { transactionId: tx.id })
    await inTx.tokens.create({ id: 'staged', type: 'card', data: card })
    clock.advance(HOUR)
    expect((await inTx.tokens.get('staged')).data).toEqual(noCvc)
    await client.transactions.commit(tx.id)
    expect((await stored(store, tenant.id, 'staged'))?.data).toEqual(noCvc)
  })
})

describe('card cvc retention over a file store', () => {
  it('the deadline survives a restart; a service over the reopened store sweeps the cvc away', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tv-cvc-'))
    const masterKey = Buffer.alloc(32, 0x54)
    try {
      const first = await fileStore({ path: dir })
      const a = await setup({ store: first })
      await a.client.tokens.create({ id: 'c1', type: 'card', data: card })
      const tenantId = a.tenant.id
      await a.service.close()
      const second = await fileStore({ path: dir })
      expect((await stored(second, tenantId, 'c1'))?.data).toEqual(card)
      const due = (before: string) => second.listExpired({ kind: 'token.cvc', before, limit: 10 })
      expect(await due('2030-01-01T00:59:59.999Z')).toEqual([])
      expect(await due('2030-01-01T01:00:00.000Z')).toEqual([{ tenant_id: tenantId, id: 'c1' }])
      const clock = manualClock('2030-01-01T00:59:59.999Z')
      const service = createService({ store: second, clock, runner: null, masterKey })
      expect((await service.admin.sweep()).cvcs).toBe(0)
      clock.advance(1)
      expect((await service.admin.sweep()).cvcs).toBe(1)
      await service.close()
      const third = await fileStore({ path: dir })
      expect((await stored(third, tenantId, 'c1'))?.data).toEqual(noCvc)
      expect(await third.listExpired({ kind: 'token.cvc', before: '9999', limit: 10 })).toEqual([])
      await third.close()
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})

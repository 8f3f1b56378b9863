import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { type AccessRule, createService, manualClock } from '../../entry/index.js'
import { REVEAL_ALL, tenantWithClient } from '../support/tenants.js'
import { NOW } from './fixtures.js'
import { tempDir } from './helpers.js'

/**
 * Two services in test mode on one file store (as two `tokenvault serve --test-mode` processes on
 * one directory): a restore by one leaves what the other holds of the tenants' keys good. The
 * restore gave every tenant new keys, so the other service, holding the old ones unwrapped, failed
 * every read of a restored token ("fails its integrity check") and made fingerprints that matched
 * nothing, until it read the tenant again.
 */
describe('file store shared by two services in test mode: restore', () => {
  it('keeps the keys of the tenants the store holds: the other service reads, searches and dedups what is restored', async () => {
    const path = await tempDir()
    const make = async () =>
      createService({
        store: await fileStore({ path, durability: 'none' }),
        clock: manualClock(NOW),
        masterKey: Buffer.alloc(32, 7),
        runner: null,
        testMode: true,
      })
    const one = await make()
    const two = await make()
    const perms: AccessRule['permissions'] = ['token:create', 'token:read', 'token:search']
    const { key } = await tenantWithClient(one, 'shared', [{ ...REVEAL_ALL, permissions: perms }], perms)
    const token = await one.connect(key).tokens.create({
      type: 'token',
      data: 'kept-4242',
      deduplicate_token: true,
      search_indexes: ['{{ data }}'],
    })
    // The second service holds the tenant's keys unwrapped once it has read a token.
    expect((await two.connect(key).tokens.get(token.id)).data).toBe('kept-4242')
    const clean = await one.admin.exportState()
    await one.connect(key).tokens.create({ type: 'token', data: 'later' })
    await one.admin.importState(clean)

    expect((await two.connect(key).tokens.get(token.id)).data).toBe('kept-4242')
    const found = await two.connect(key).tokens.search({ query: 'data:kept-4242' })
    expect(found.data.map((t) => t.id)).toEqual([token.id])
    const again = await two
      .connect(key)
      .tokens.create({ type: 'token', data: 'kept-4242', deduplicate_token: true })
    expect(again.id).toBe(token.id)
    await one.close()
    await two.close()
  })

  it('gives a tenant new to the store new keys', async () => {
    const store = await fileStore({ path: await tempDir(), durability: 'none' })
    const service = createService({
      store,
      clock: manualClock(NOW),
      masterKey: Buffer.alloc(32, 7),
      runner: null,
      testMode: true,
    })
    const tenant = await service.admin.createTenant({ name: 'gone' })
    const snapshot = await service.admin.exportState()
    const wrapped = async () => (await store.getTenant(tenant.id))?.keys?.versions[0]?.wrapped
    const before = await wrapped()
    await service.admin.importState(snapshot)
    expect(await wrapped()).toBe(before)
    await service.admin.clearState()
    await service.admin.importState(snapshot)
    const after = await wrapped()
    expect(after).toBeTypeOf('string')
    expect(after).not.toBe(before)
    await service.close()
  })
})

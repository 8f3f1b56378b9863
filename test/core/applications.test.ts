/**
 * Application changes that race: an update and key changes are compare-and-sets on one record, so
 * none undoes another (docs/api/applications/applications, docs/api/applications/application-keys).
 */
import { describe, expect, it } from 'vitest'
import { failure, setup } from './setup.js'

describe('applications', () => {
  it('an update racing key creations keeps every key acknowledged', async () => {
    const { keyFor, service } = await setup()
    const admin = await keyFor('management', ['application:create', 'application:read', 'application:update'])
    const target = await keyFor('private', ['token:read'])
    const id = target.application.id
    const settled = await Promise.allSettled([
      ...Array.from({ length: 10 }, () => admin.client.applicationKeys.create(id)),
      ...Array.from({ length: 10 }, (_, i) =>
        admin.client.applications.update(id, { name: `renamed ${i}`, permissions: ['token:read'] }),
      ),
    ])
    const created = settled
      .slice(0, 10)
      .flatMap((s) => (s.status === 'fulfilled' ? [(s.value as { id: string }).id] : []))
    expect(created.length).toBeGreaterThan(0)
    // Every update succeeded (retried on conflict) and no acknowledged key was undone by one.
    expect(settled.slice(10).every((s) => s.status === 'fulfilled')).toBe(true)
    const held = (await admin.client.applicationKeys.list(id)).map((k) => k.id)
    for (const keyId of created) expect(held).toContain(keyId)
    expect((await admin.client.applications.get(id)).name).toMatch(/^renamed /)
    await expect(service.connect(target.key).tokens.get('missing')).rejects.toMatchObject({
      code: 'not_found',
    })
  })

  it('regenerateKey replaces every key by one new key; needs application:update', async () => {
    const { keyFor, service } = await setup()
    const admin = await keyFor('management', ['application:create', 'application:read', 'application:update'])
    const reader = await keyFor('management', ['application:read'])
    const target = await keyFor('private', ['token:read'])
    const id = target.application.id
    const second = await admin.client.applicationKeys.create(id)
    expect((await failure(reader.client.applications.regenerateKey(id))).code).toBe('forbidden')
    const regenerated = await admin.client.applications.regenerateKey(id)
    expect(regenerated.id).toBe(id)
    expect(regenerated).not.toHaveProperty('keys')
    for (const old of [target.key, second.key!]) {
      expect((await failure(service.connect(old).tokens.get('missing'))).code).toBe('unauthenticated')
    }
    expect((await failure(service.connect(regenerated.key).tokens.get('missing'))).code).toBe('not_found')
    expect(await admin.client.applicationKeys.list(id)).toHaveLength(1)
    expect((await failure(admin.client.applications.regenerateKey('nope'))).code).toBe('not_found')
  })
})

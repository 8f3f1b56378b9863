import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { localMasterKey, sealBytes, sealedVersion, tenantKey } from '../../src/encryption/keyring.js'
import type { DataKeyPolicy } from '../../src/encryption/tenant-keyring.js'
import type { StoredToken } from '../../src/kernel/types.js'
import type { Store } from '../../src/store/contract.js'

const REVEAL = {
  description: 'all',
  priority: 1,
  container: '/',
  transform: 'reveal' as const,
  permissions: ['token:create' as const, 'token:read' as const, 'token:update' as const],
}

/** A service over `store` with one tenant and a private key that reveals. */
async function vault(
  store: Store = memoryStore(),
  dataKeys: Partial<DataKeyPolicy> = {},
  masterKey = randomBytes(32),
) {
  const clock = manualClock('2030-01-01T00:00:00Z')
  const service = createService({ store, clock, runner: null, masterKey, dataKeys })
  const tenant = await service.admin.createTenant({ name: 't' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'app',
    type: 'private',
    permissions: ['token:create', 'token:read', 'token:update'],
    rules: [REVEAL],
  })
  return { service, tenant, key, clock, store, masterKey, client: service.connect(key) }
}

/** The data-key version a stored token's ciphertext names. */
async function versionOf(store: Store, tenantId: string, id: string): Promise<number> {
  const stored = await store.getToken(tenantId, id)
  return sealedVersion((stored!.data as { $sealed: string }).$sealed)
}

describe('versioned data keys', () => {
  it('a record sealed under v1 reads after rotation to v2 and v3; new seals use the newest', async () => {
    const { service, tenant, client, store } = await vault()
    const a = await client.tokens.create({ type: 'token', data: { n: 'a' } })
    expect(await versionOf(store, tenant.id, a.id)).toBe(1)
    expect((await service.admin.rotateDataKey({ tenantId: tenant.id })).current).toBe(2)
    const b = await client.tokens.create({ type: 'token', data: { n: 'b' } })
    expect(await versionOf(store, tenant.id, b.id)).toBe(2)
    const status = await service.admin.rotateDataKey({ tenantId: tenant.id })
    expect(status.current).toBe(3)
    expect(status.versions.map((v) => v.version)).toEqual([1, 2, 3])
    const c = await client.tokens.create({ type: 'token', data: { n: 'c' } })
    expect(await versionOf(store, tenant.id, c.id)).toBe(3)
    expect((await client.tokens.get(a.id)).data).toEqual({ n: 'a' })
    expect((await client.tokens.get(b.id)).data).toEqual({ n: 'b' })
    expect((await client.tokens.get(c.id)).data).toEqual({ n: 'c' })
  })

  it('a ciphertext relabelled with another version does not decrypt (the version is authenticated)', async () => {
    const { service, tenant, client, store } = await vault()
    const a = await client.tokens.create({ type: 'token', data: 'under-v1' })
    await service.admin.rotateDataKey({ tenantId: tenant.id })
    const stored = (await store.getToken(tenant.id, a.id))!
    const bytes = Buffer.from((stored.data as { $sealed: string }).$sealed, 'base64')
    bytes.writeUInt32BE(2, 4)
    expect(sealedVersion(bytes)).toBe(2)
    await store.write({
      ops: [{ op: 'token.put', token: { ...stored, data: { $sealed: bytes.toString('base64') } } }],
    })
    const error = await client.tokens.get(a.id).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'unreadable' })
    // Back to 1, it reads again: the relabelling alone broke it.
    bytes.writeUInt32BE(1, 4)
    await store.write({
      ops: [{ op: 'token.put', token: { ...stored, data: { $sealed: bytes.toString('base64') } } }],
    })
    expect((await client.tokens.get(a.id)).data).toBe('under-v1')
  })

  it('a tenant and a token written before versioned keys still read (as version 1), and rotate', async () => {
    const store = memoryStore()
    const master = randomBytes(32)
    const root = randomBytes(32)
    const tenantId = 'legacy-tenant'
    const wrapped = Buffer.from(await localMasterKey(master).wrap(root, tenantId)).toString('base64')
    const legacyKeyId = localMasterKey(master).keyId
    // The formats of before: the tenant holds only `data_key`; the ciphertext is IV ‖ body ‖ tag.
    const sealedLegacy = sealBytes(
      tenantKey(root).encryption,
      Buffer.from(JSON.stringify(['old secret']), 'utf8'),
      Buffer.from(`tokenvault:token:v1:${tenantId}:tok-1`, 'utf8'),
    ).toString('base64')
    const token: StoredToken = {
      id: 'tok-1',
      tenant_id: tenantId,
      type: 'token',
      data: { $sealed: sealedLegacy },
      containers: ['/general/high/'],
      metadata: {},
      created_by: 'x',
      created_at: '2029-01-01T00:00:00.000Z',
    } as StoredToken
    await store.write({
      ops: [
        {
          op: 'tenant.put',
          tenant: {
            id: tenantId,
            name: 'old',
            created_at: '2029-01-01T00:00:00.000Z',
            data_key: { key_id: legacyKeyId, wrapped },
          },
        },
        { op: 'token.put', token },
      ],
    })
    const service = createService({
      store,
      clock: manualClock('2030-01-01T00:00:00Z'),
      runner: null,
      masterKey: master,
    })
    const { key } = await service.admin.createApplication({
      tenantId,
      name: 'app',
      type: 'private',
      permissions: ['token:create', 'token:read'],
      rules: [REVEAL],
    })
    const client = service.connect(key)
    expect((await client.tokens.get('tok-1')).data).toBe('old secret')
    await service.admin.rotateDataKey({ tenantId })
    const b = await client.tokens.create({ type: 'token', data: 'new' })
    expect(await versionOf(store, tenantId, b.id)).toBe(2)
    expect((await client.tokens.get('tok-1')).data).toBe('old secret')
    await service.admin.reencrypt({ tenantId, onProgress: () => {} })
    expect(await versionOf(store, tenantId, 'tok-1')).toBe(2)
    expect((await client.tokens.get('tok-1')).data).toBe('old secret')
  })

  it('another process rotating is seen on read: a v2 ciphertext opens in a process that held only v1', async () => {
    const store = memoryStore()
    const first = await vault(store)
    const second = createService({ store, clock: first.clock, runner: null, masterKey: first.masterKey })
    const a = await first.client.tokens.create({ type: 'token', data: 'one' })
    // The second process holds the tenant's keys (v1) before the rotation.
    expect((await second.connect(first.key).tokens.get(a.id)).data).toBe('one')
    await first.service.admin.rotateDataKey({ tenantId: first.tenant.id })
    const b = await first.client.tokens.create({ type: 'token', data: 'two' })
    expect((await second.connect(first.key).tokens.get(b.id)).data).toBe('two')
  })
})

describe('the seal counter', () => {
  it('rotates at its literal boundary: 4 seals of a 5-seal version stay on v1, the 5th rotates', async () => {
    const { service, tenant, client, store } = await vault(memoryStore(), { maxSeals: 5, sealBlock: 2 })
    const ids: string[] = []
    for (let i = 0; i < 4; i++) ids.push((await client.tokens.create({ type: 'token', data: i })).id)
    let status = await service.admin.dataKeyStatus({ tenantId: tenant.id })
    expect(status.current).toBe(1)
    expect(status.sealed).toBe(4)
    ids.push((await client.tokens.create({ type: 'token', data: 4 })).id)
    status = await service.admin.dataKeyStatus({ tenantId: tenant.id })
    expect(status.current).toBe(2)
    for (const id of ids) expect(await versionOf(store, tenant.id, id)).toBe(1)
    const next = await client.tokens.create({ type: 'token', data: 5 })
    expect(await versionOf(store, tenant.id, next.id)).toBe(2)
    for (const [i, id] of ids.entries()) expect((await client.tokens.get(id)).data).toBe(i)
  })

  it('counts across processes sharing a store: reservations never overlap, the count never goes back', async () => {
    const store = memoryStore()
    const first = await vault(store, { maxSeals: 1000, sealBlock: 3 })
    const second = createService({
      store,
      clock: first.clock,
      runner: null,
      masterKey: first.masterKey,
      dataKeys: { maxSeals: 1000, sealBlock: 3 },
    })
    const clients = [first.client, second.connect(first.key)]
    for (let i = 0; i < 10; i++) await clients[i % 2]!.tokens.create({ type: 'token', data: i })
    const status = await first.service.admin.dataKeyStatus({ tenantId: first.tenant.id })
    // 5 seals each, reserved 3 at a time: 6 each at most, never fewer than the 10 made.
    expect(status.sealed).toBeGreaterThanOrEqual(10)
    expect(status.sealed).toBeLessThanOrEqual(12)
  })

  it('rotates by age on the injected clock: one ms before the cryptoperiod no rotation, at it a rotation', async () => {
    const { service, tenant, client, clock } = await vault(memoryStore(), { maxAgeMs: 60_000 })
    await client.tokens.create({ type: 'token', data: 1 })
    clock.advance(59_999)
    await client.tokens.create({ type: 'token', data: 2 })
    expect((await service.admin.dataKeyStatus({ tenantId: tenant.id })).current).toBe(1)
    clock.advance(1)
    await client.tokens.create({ type: 'token', data: 3 })
    expect((await service.admin.dataKeyStatus({ tenantId: tenant.id })).current).toBe(2)
  })

  it('with no cryptoperiod set (the default), a year-old key does not rotate', async () => {
    const { service, tenant, client, clock } = await vault()
    clock.advance(366 * 24 * 3600 * 1000)
    await client.tokens.create({ type: 'token', data: 1 })
    expect((await service.admin.dataKeyStatus({ tenantId: tenant.id })).current).toBe(1)
  })
})

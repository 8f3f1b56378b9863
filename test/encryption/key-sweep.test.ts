import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { sealedVersion } from '../../src/encryption/keyring.js'
import type { DataKeyPolicy } from '../../src/encryption/tenant-keyring.js'
import type { Store } from '../../src/store/contract.js'

const REVEAL = {
  description: 'all',
  priority: 1,
  container: '/',
  transform: 'reveal' as const,
  permissions: ['token:create' as const, 'token:read' as const, 'token:update' as const],
}

async function vault(store: Store = memoryStore(), dataKeys: Partial<DataKeyPolicy> = {}) {
  const clock = manualClock('2030-01-01T00:00:00Z')
  const masterKey = randomBytes(32)
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

/** The version each of the tenant's stored tokens is sealed under, by id. */
async function versions(store: Store, tenantId: string): Promise<Map<string, number>> {
  const out = new Map<string, number>()
  for (const t of (await store.dump()).tokens) {
    if (t.tenant_id !== tenantId) continue
    out.set(t.id, sealedVersion((t.data as { $sealed: string }).$sealed))
  }
  return out
}

describe('the re-encryption sweep', () => {
  it('re-seals every record under the newest version in bounded batches, then retires the old ones', async () => {
    const { service, tenant, client, store, clock } = await vault()
    const made = new Map<string, number>()
    for (let i = 0; i < 25; i++) made.set((await client.tokens.create({ type: 'token', data: i })).id, i)
    await service.admin.rotateDataKey({ tenantId: tenant.id })
    const steps: number[] = []
    let progress = await service.admin.reencrypt({
      tenantId: tenant.id,
      batchSize: 10,
      onProgress: (p) => steps.push(p.scanned),
    })
    // Batches of at most 10; the pass began too soon after the rotation to retire v1.
    expect(Math.max(...steps)).toBe(10)
    expect(progress.finished).toBe(false)
    expect(progress.done).toBe(25)
    expect(progress.versions).toEqual([1, 2])
    expect([...(await versions(store, tenant.id)).values()].every((v) => v === 2)).toBe(true)
    clock.advance(30_000)
    progress = await service.admin.reencrypt({ tenantId: tenant.id, batchSize: 10 })
    expect(progress.finished).toBe(true)
    expect(progress.versions).toEqual([2])
    for (const [id, n] of made) expect((await client.tokens.get(id)).data).toBe(n)
    expect(
      (await service.admin.dataKeyStatus({ tenantId: tenant.id })).versions.map((v) => v.version),
    ).toEqual([2])
  })

  it('resumes from its stored place after being cut short', async () => {
    const { service, tenant, client, store, masterKey, clock } = await vault()
    for (let i = 0; i < 12; i++) await client.tokens.create({ type: 'token', data: i })
    await service.admin.rotateDataKey({ tenantId: tenant.id })
    const first = await service.admin.reencryptStep({ tenantId: tenant.id, batchSize: 5 })
    expect(first.resealed).toBe(5)
    // A new service (a restarted process) continues where the first left off.
    const again = createService({ store, clock, runner: null, masterKey })
    const status = await again.admin.dataKeyStatus({ tenantId: tenant.id })
    expect(status.sweep).toMatchObject({ to: 2, done: 5 })
    const second = await again.admin.reencryptStep({ tenantId: tenant.id, batchSize: 5 })
    expect(second.done).toBe(10)
    expect(second.resealed).toBe(5)
  })

  it('concurrent updates during the sweep all land, and nothing is lost', async () => {
    const { service, tenant, client } = await vault()
    const ids: string[] = []
    for (let i = 0; i < 60; i++) ids.push((await client.tokens.create({ type: 'token', data: { v: 0 } })).id)
    await service.admin.rotateDataKey({ tenantId: tenant.id })
    const sweep = service.admin.reencrypt({ tenantId: tenant.id, batchSize: 7 })
    const updates = Promise.all(ids.map((id, i) => client.tokens.update(id, { data: { v: i + 1 } })))
    await Promise.all([sweep, updates])
    for (const [i, id] of ids.entries()) expect((await client.tokens.get(id)).data).toEqual({ v: i + 1 })
  })

  it('a sweep after the pass began late enough retires at once; other tenants are untouched', async () => {
    const { service, tenant, client, store, clock } = await vault()
    const other = await service.admin.createTenant({ name: 'other' })
    await client.tokens.create({ type: 'token', data: 'x' })
    await service.admin.rotateDataKey({ tenantId: tenant.id })
    clock.advance(30_000)
    const progress = await service.admin.reencrypt({ tenantId: tenant.id })
    expect(progress.finished).toBe(true)
    expect((await service.admin.dataKeyStatus({ tenantId: other.id })).current).toBe(1)
    expect([...(await versions(store, tenant.id)).values()]).toEqual([2])
  })
})

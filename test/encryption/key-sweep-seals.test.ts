import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import type { DataKeyPolicy } from '../../src/encryption/tenant-keyring.js'
import { delegatingStore, type Store } from '../../src/store/index.js'

/** A memory store that records each synced write of a tenant record (a seal reservation, a rotation). */
function recordingStore() {
  const inner = memoryStore()
  const syncedTenantPuts: number[] = []
  const store: Store = delegatingStore(inner, {
    write(batch) {
      for (const op of batch.ops)
        if (op.op === 'tenant.put' && !batch.deferSync) syncedTenantPuts.push(op.tenant.keys?.sealed ?? 0)
      return inner.write(batch)
    },
  })
  return { store, syncedTenantPuts }
}

async function vault(store: Store, dataKeys: Partial<DataKeyPolicy> = {}) {
  const clock = manualClock('2030-01-01T00:00:00Z')
  const service = createService({ store, clock, runner: null, masterKey: randomBytes(32), dataKeys })
  const tenant = await service.admin.createTenant({ name: 't' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'app',
    type: 'private',
    permissions: ['token:create', 'token:read'],
  })
  return { service, tenant, clock, client: service.connect(key) }
}

describe('the seals the re-encryption sweep makes', () => {
  it('a pass reserves what it has left in one synced write, not one every sealBlock seals', async () => {
    const { store, syncedTenantPuts } = recordingStore()
    const { service, tenant, client } = await vault(store, { sealBlock: 16 })
    for (let i = 0; i < 100; i++) await client.tokens.create({ type: 'token', data: i })
    await service.admin.rotateDataKey({ tenantId: tenant.id })
    syncedTenantPuts.length = 0
    // Three steps of 40, 40 and 20 tokens: the first re-seal of the pass reserves the 100 it has left.
    for (let step = 0; step < 3; step++) {
      const progress = await service.admin.reencryptStep({ tenantId: tenant.id, batchSize: 40 })
      expect(progress.resealed).toBe(step < 2 ? 40 : 20)
    }
    // One reservation of 100 under version 2 (blocks of 16 would have taken seven), and the end of
    // the pass, too early to retire, writes nothing more synced.
    expect(syncedTenantPuts).toEqual([100])
    const status = await service.admin.dataKeyStatus({ tenantId: tenant.id })
    expect(status.sealed).toBe(100)
    // Seals made after the pass take blocks of 16 again.
    await client.tokens.create({ type: 'token', data: 'after' })
    expect(syncedTenantPuts).toEqual([100, 116])
  })

  it('a pass with nothing left to re-seal reserves nothing', async () => {
    const { store, syncedTenantPuts } = recordingStore()
    const { service, tenant, client } = await vault(store, { sealBlock: 16 })
    for (let i = 0; i < 20; i++) await client.tokens.create({ type: 'token', data: i })
    await service.admin.rotateDataKey({ tenantId: tenant.id })
    await service.admin.reencryptStep({ tenantId: tenant.id, batchSize: 40 })
    syncedTenantPuts.length = 0
    const again = await service.admin.reencryptStep({ tenantId: tenant.id, batchSize: 40 })
    expect(again.resealed).toBe(0)
    expect(syncedTenantPuts).toEqual([])
  })

  it('reading the keys again after refreshMs keeps the unused part of the reservation', async () => {
    const { store, syncedTenantPuts } = recordingStore()
    const { service, tenant, client, clock } = await vault(store, { sealBlock: 16, refreshMs: 1000 })
    syncedTenantPuts.length = 0
    await client.tokens.create({ type: 'token', data: 1 })
    expect(syncedTenantPuts).toEqual([16])
    // Past refreshMs the tenant record is read again; the 15 seals left are still this process's.
    clock.advance(1000)
    for (let i = 0; i < 15; i++) await client.tokens.create({ type: 'token', data: i })
    expect(syncedTenantPuts).toEqual([16])
    expect((await service.admin.dataKeyStatus({ tenantId: tenant.id })).sealed).toBe(16)
    // The 17th seal reserves the next block.
    await client.tokens.create({ type: 'token', data: 17 })
    expect(syncedTenantPuts).toEqual([16, 32])
  })

  it('a rotation between two reads of the keys leaves the old reservation behind', async () => {
    const { store, syncedTenantPuts } = recordingStore()
    const { service, tenant, client, clock } = await vault(store, { sealBlock: 16, refreshMs: 1000 })
    await client.tokens.create({ type: 'token', data: 1 })
    await service.admin.rotateDataKey({ tenantId: tenant.id })
    clock.advance(1000)
    syncedTenantPuts.length = 0
    await client.tokens.create({ type: 'token', data: 2 })
    // Version 2's first block: nothing of version 1's is counted under it.
    expect(syncedTenantPuts).toEqual([16])
    const status = await service.admin.dataKeyStatus({ tenantId: tenant.id })
    expect(status.current).toBe(2)
    expect(status.sealed).toBe(16)
  })
})

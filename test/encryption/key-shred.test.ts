import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import type { Store } from '../../src/store/contract.js'
import type { Op } from '../../src/store/index.js'
import { REVEAL_ALL, tenantWithClient } from '../support/tenants.js'

/** A copy of `store`'s records in a new memory store: what a backup holds. */
async function copyOf(store: Store): Promise<Store> {
  const dump = await store.dump()
  const copy = memoryStore()
  const ops: Op[] = [
    ...dump.tenants.map((tenant): Op => ({ op: 'tenant.put', tenant })),
    ...dump.applications.map((application): Op => ({ op: 'application.put', application })),
    ...dump.tokens.map((token): Op => ({ op: 'token.put', token })),
  ]
  await copy.write({ ops })
  return copy
}

/** Reads `ids` from `store` as API key `key` through a fresh service given `masterKey`: the outcomes. */
async function readAll(store: Store, masterKey: Uint8Array, key: string, ids: string[]) {
  const service = createService({
    store,
    clock: manualClock('2030-01-01T00:00:00Z'),
    runner: null,
    masterKey,
  })
  const client = service.connect(key)
  return Promise.all(
    ids.map((id) =>
      client.tokens.get(id).then(
        (t) => ({ ok: true as const, data: t.data }),
        (e: { code?: string }) => ({ ok: false as const, code: e.code }),
      ),
    ),
  )
}

describe('crypto-shredding', () => {
  it('destroyTenantKeys: no record of the tenant decrypts from the live store, even with the master key; others read', async () => {
    const store = memoryStore()
    const masterKey = randomBytes(32)
    const service = createService({ store, clock: manualClock(), runner: null, masterKey })
    const gone = await tenantWithClient(service, 'gone', [REVEAL_ALL])
    const kept = await tenantWithClient(service, 'kept', [REVEAL_ALL])
    const goneIds: string[] = []
    for (let i = 0; i < 5; i++)
      goneIds.push((await gone.client.tokens.create({ type: 'token', data: `g${i}` })).id)
    await service.admin.rotateDataKey({ tenantId: gone.tenant.id })
    goneIds.push((await gone.client.tokens.create({ type: 'token', data: 'g-v2' })).id)
    const keptId = (await kept.client.tokens.create({ type: 'token', data: 'k' })).id
    await service.admin.destroyTenantKeys({ tenantId: gone.tenant.id })
    for (const id of goneIds)
      await expect(gone.client.tokens.get(id)).rejects.toMatchObject({ code: 'unreadable' })
    expect((await kept.client.tokens.get(keptId)).data).toBe('k')
    // The tenant record holds no key any more: a fresh process with the master key reads nothing.
    const record = await store.getTenant(gone.tenant.id)
    expect(record?.data_key).toBeUndefined()
    expect(record?.keys).toMatchObject({ versions: [], destroyed_at: expect.any(String) })
    const outcomes = await readAll(store, masterKey, gone.key, goneIds)
    expect(outcomes.every((o) => !o.ok && o.code === 'unreadable')).toBe(true)
    // Nor does a write give it new keys.
    await expect(gone.client.tokens.create({ type: 'token', data: 'new' })).rejects.toMatchObject({
      code: 'unreadable',
    })
    expect((await store.getTenant(gone.tenant.id))?.data_key).toBeUndefined()
  })

  it('deleteTenant destroys the keys first, then deletes every record; a copy of the records made after reads nothing', async () => {
    const store = memoryStore()
    const masterKey = randomBytes(32)
    const service = createService({ store, clock: manualClock(), runner: null, masterKey })
    const gone = await tenantWithClient(service, 'gone', [REVEAL_ALL])
    const kept = await tenantWithClient(service, 'kept', [REVEAL_ALL])
    const goneId = (await gone.client.tokens.create({ type: 'token', data: 'secret' })).id
    const keptId = (await kept.client.tokens.create({ type: 'token', data: 'k' })).id
    // What a store keeps of deleted records (file pages not yet reused, dead rows): a copy
    // between the destruction and the deletes.
    await service.admin.destroyTenantKeys({ tenantId: gone.tenant.id })
    const between = await copyOf(store)
    await service.admin.deleteTenant({ tenantId: gone.tenant.id })
    expect(await store.getTenant(gone.tenant.id)).toBeNull()
    expect((await store.dump()).tokens.some((t) => t.tenant_id === gone.tenant.id)).toBe(false)
    expect((await kept.client.tokens.get(keptId)).data).toBe('k')
    const outcomes = await readAll(between, masterKey, gone.key, [goneId])
    expect(outcomes).toEqual([{ ok: false, code: 'unreadable' }])
  })

  it('a backup taken before stops decrypting once the master key is rotated and the old one retired; other tenants stay readable', async () => {
    const store = memoryStore()
    const oldMaster = randomBytes(32)
    const newMaster = randomBytes(32)
    const service = createService({ store, clock: manualClock(), runner: null, masterKey: oldMaster })
    const gone = await tenantWithClient(service, 'gone', [REVEAL_ALL])
    const kept = await tenantWithClient(service, 'kept', [REVEAL_ALL])
    const goneId = (await gone.client.tokens.create({ type: 'token', data: 'secret' })).id
    const keptId = (await kept.client.tokens.create({ type: 'token', data: 'k' })).id
    const backup = await copyOf(store)
    await service.admin.deleteTenant({ tenantId: gone.tenant.id })
    // With the old master key, the backup still opens the deleted tenant: that key must go.
    expect(await readAll(backup, oldMaster, gone.key, [goneId])).toEqual([{ ok: true, data: 'secret' }])
    await service.admin.rotateMasterKey(newMaster)
    // The old key retired: the live store reads with the new key alone.
    const live = createService({ store, clock: manualClock(), runner: null, masterKey: newMaster })
    await live.admin.verifyMasterKey()
    expect((await live.connect(kept.key).tokens.get(keptId)).data).toBe('k')
    // The backup's keys are wrapped under the old key only: the new one opens nothing of it.
    const fromBackup = createService({
      store: backup,
      clock: manualClock(),
      runner: null,
      masterKey: newMaster,
    })
    await expect(fromBackup.admin.verifyMasterKey()).rejects.toThrow(/master key local:/)
    await expect(fromBackup.connect(gone.key).tokens.get(goneId)).rejects.toThrow()
  })
})

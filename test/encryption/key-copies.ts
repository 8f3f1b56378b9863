/**
 * Crypto-shredding against copies of a durable store (a file store's directory, a `pg_dump`),
 * run by the files that make those copies.
 */
import { randomBytes } from 'node:crypto'
import { expect } from 'vitest'
import { createService, manualClock } from '../../entry/index.js'
import type { Store } from '../../src/store/contract.js'
import { REVEAL_ALL, tenantWithClient } from '../support/tenants.js'

/** Takes a copy of the live store as it is now; answers a function that opens the copy. */
export type CopyNow = () => Promise<() => Promise<Store>>

/** Reads `ids` from `store` as API key `key` with a fresh service under `masterKey`: each value, or the error code. */
async function readWith(store: Store, masterKey: Uint8Array, key: string, ids: string[]) {
  const service = createService({ store, clock: manualClock(), runner: null, masterKey })
  try {
    const client = service.connect(key)
    return await Promise.all(
      ids.map((id) =>
        client.tokens.get(id).then(
          (t) => t.data,
          (e: { code?: string }) => e.code ?? 'error',
        ),
      ),
    )
  } finally {
    await service.close()
  }
}

/**
 * Two tenants, one with keys of two versions. A copy taken before, then the first tenant's keys
 * destroyed, then a copy taken after: from the copy after, nothing of the first tenant decrypts
 * (master key at hand); the copy before still does with the old master key, and stops once the
 * live store's master key is rotated and the old one retired; the other tenant reads throughout.
 */
export async function shreddingHoldsOnCopies(open: () => Promise<Store>, copyNow: CopyNow): Promise<void> {
  const oldMaster = randomBytes(32)
  const newMaster = randomBytes(32)
  const store = await open()
  const service = createService({ store, clock: manualClock(), runner: null, masterKey: oldMaster })
  const tenants = []
  for (const name of ['gone', 'kept']) {
    const { tenant, key, client } = await tenantWithClient(service, name, [REVEAL_ALL])
    tenants.push({ id: tenant.id, key, client })
  }
  const [gone, kept] = tenants as [(typeof tenants)[0], (typeof tenants)[0]]
  const goneIds = [(await gone.client.tokens.create({ type: 'token', data: 'v1-secret' })).id]
  await service.admin.rotateDataKey({ tenantId: gone.id })
  goneIds.push((await gone.client.tokens.create({ type: 'token', data: 'v2-secret' })).id)
  const keptId = (await kept.client.tokens.create({ type: 'token', data: 'kept' })).id
  const before = await copyNow()
  await service.admin.destroyTenantKeys({ tenantId: gone.id })
  const after = await copyNow()
  await service.admin.rotateMasterKey(newMaster)
  await service.close()

  expect(await readWith(await after(), oldMaster, gone.key, goneIds)).toEqual(['unreadable', 'unreadable'])
  expect(await readWith(await after(), oldMaster, kept.key, [keptId])).toEqual(['kept'])
  // What a backup taken before needs to stop opening: the old master key gone.
  expect(await readWith(await before(), oldMaster, gone.key, goneIds)).toEqual(['v1-secret', 'v2-secret'])
  const withNewKey = await readWith(await before(), newMaster, gone.key, goneIds).catch((e: Error) => [
    e.message,
  ])
  expect(withNewKey.join(' ')).not.toMatch(/secret/)
  // The live store reads the other tenant with the new master key alone.
  expect(await readWith(await open(), newMaster, kept.key, [keptId])).toEqual(['kept'])
}

/**
 * Re-encryption re-seals a token's sealed bytes without decoding them (`resealToken`): the token
 * opens under the new version to the same data and mask, its other fields untouched, and what does
 * not open under the old one is `unreadable`, as a read would answer.
 */
import { randomBytes } from 'node:crypto'
import { expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { Keyring, toProvider } from '../../src/encryption/index.js'
import { sealedVersion } from '../../src/encryption/keyring.js'
import {
  openToken,
  resealToken,
  type Sealing,
  sealedPayload,
  sealToken,
} from '../../src/encryption/sealing.js'
import type { StoredToken } from '../../src/kernel/index.js'

it('a re-sealed token opens under the current version to the same data and mask; a damaged one is unreadable', async () => {
  const store = memoryStore()
  const masterKey = randomBytes(32)
  const service = createService({
    store,
    clock: manualClock('2030-01-01T00:00:00Z'),
    runner: null,
    masterKey,
  })
  const { id: tenantId } = await service.admin.createTenant({ name: 't' })
  const sealingOn = (): Sealing => {
    const keyring = new Keyring(store, [toProvider(masterKey)])
    return {
      keyOf: (t, v) => keyring.keyFor(t, v),
      sealKeyOf: (t) => keyring.sealKey(t),
      searchIndexPurpose: 'search-index',
      asRead: (t) => t,
    }
  }
  const token: StoredToken = {
    id: 'tok-1',
    tenant_id: tenantId,
    type: 'token',
    data: { number: '4242424242424242', note: 'é ✓' },
    mask: { number: '{{ data.number | reveal_last: 4 }}' },
    containers: ['/general/high/'],
    metadata: { m: '1' },
    created_by: 'app',
    created_at: '2030-01-01T00:00:00.000Z',
  }
  const v1 = await sealToken(sealingOn(), token)
  await service.admin.rotateDataKey({ tenantId })
  const s = sealingOn()
  const v2 = await resealToken(s, v1)
  const version = (t: StoredToken) => sealedVersion(sealedPayload(t.data)!)
  expect([version(v1), version(v2)]).toEqual([1, 2])
  expect({ ...v2, data: null }).toEqual({ ...v1, data: null })
  expect(await openToken(s, v2)).toEqual(token)

  const payload = Buffer.from(sealedPayload(v1.data) as string, 'base64')
  payload[payload.length - 1]! ^= 1
  const damaged = { ...v1, data: { $sealed: payload.toString('base64') } }
  await expect(resealToken(s, damaged)).rejects.toMatchObject({ code: 'unreadable' })
  // Under another token's id (its additional authenticated data) it does not open either.
  await expect(resealToken(s, { ...v1, id: 'tok-2' })).rejects.toMatchObject({ code: 'unreadable' })
  await expect(resealToken(s, { ...v1, mask: 'beside' })).rejects.toMatchObject({ code: 'unreadable' })
  await service.close()
})

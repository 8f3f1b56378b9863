/**
 * A tenant as callers see it: `{ id, name, created_at }`, never its wrapped keys. `GET /tenants/self`
 * answered `keys` (each version's `key_id` and wrapped key) once tenants had versioned data keys.
 */
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { createHttpHandler } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'

describe('the tenant shown to callers', () => {
  it('is its id, name and creation time, in process and over HTTP, before and after a key rotation', async () => {
    const service = createService({
      store: memoryStore(),
      clock: manualClock('2030-01-01T00:00:00.000Z'),
      masterKey: randomBytes(32),
      runner: null,
    })
    const created = await service.admin.createTenant({ name: 'acme' })
    expect(Object.keys(created).sort()).toEqual(['created_at', 'id', 'name'])
    const { key } = await service.admin.createApplication({
      tenantId: created.id,
      name: 'm',
      type: 'management',
      permissions: ['tenant:read'],
    })
    const handler = createHttpHandler(service, { headerPrefix: 'BT', log: () => {} })
    const overHttp = async () => {
      const response = await handler(
        new Request('http://localhost/tenants/self', { headers: { 'BT-API-KEY': key } }),
      )
      expect(response.status).toBe(200)
      return response.json()
    }
    const shown = { id: created.id, name: 'acme', created_at: created.created_at }
    expect(await service.connect(key).tenants.self()).toEqual(shown)
    expect(await overHttp()).toEqual(shown)
    await service.admin.rotateDataKey({ tenantId: created.id })
    expect(await overHttp()).toEqual(shown)
    await service.close()
  })
})

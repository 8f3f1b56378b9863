import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, ServiceError } from '../../entry/index.js'

describe('reactor formula reference', () => {
  it('takes formula: { id } as well as formula_id, and refuses two different ones or none', async () => {
    const service = createService({ store: memoryStore(), clock: manualClock() })
    const tenant = await service.admin.createTenant({ name: 't' })
    const { key } = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'm',
      type: 'management',
      permissions: ['reactor:create', 'reactor:read', 'reactor:update'],
    })
    const client = service.connect(key)
    const body = {
      name: 'f',
      type: 'private' as const,
      code: 'module.exports = async () => ({})',
      configuration: [],
      request_parameters: [],
    }
    const f1 = await client.reactorFormulas.create(body)
    const f2 = await client.reactorFormulas.create({ ...body, name: 'g' })
    const r = await client.reactors.create({ name: 'r', formula: { id: f1.id } })
    expect(r.formula_id).toBe(f1.id)
    const moved = await client.reactors.update(r.id, { name: 'r', formula: { id: f2.id } })
    expect(moved.formula_id).toBe(f2.id)
    const issues = async (p: Promise<unknown>) => {
      const e = await p.then(
        () => null,
        (error: unknown) => error,
      )
      expect(e).toBeInstanceOf(ServiceError)
      return Object.keys((e as ServiceError).issues ?? {})
    }
    expect(await issues(client.reactors.create({ name: 'r' }))).toContain('formula_id')
    expect(
      await issues(client.reactors.create({ name: 'r', formula_id: f1.id, formula: { id: f2.id } })),
    ).toContain('formula')
  })
})

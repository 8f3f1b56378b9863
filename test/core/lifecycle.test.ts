import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, type Permission, ServiceError } from '../../src/index.js'

const ALL = ['token:create', 'token:read', 'token:update', 'token:delete'] as const

async function vault(options: { maxUnauthorizedSessionsPerTenant?: number } = {}) {
  const clock = manualClock('2030-01-01T00:00:00.000Z')
  const store = memoryStore()
  const service = createService({ store, clock, runner: null, ...options })
  const tenant = await service.admin.createTenant({ name: 't' })
  const app = async (type: 'private' | 'public', permissions: Permission[]) =>
    (await service.admin.createApplication({ tenantId: tenant.id, name: type, type, permissions })).key
  const key = await app('private', [...ALL])
  return { clock, store, service, tenant, key, client: service.connect(key), app }
}

const codeOf = (e: unknown) => (e instanceof ServiceError ? e.code : String(e))

describe('the sweep forgets what has expired', () => {
  it('an expired token and its links leave the store', async () => {
    const { clock, store, service, client } = await vault()
    const parent = await client.tokens.create({ type: 'token', data: 'p' })
    const child = await client.tokens.children.create(parent.id, {
      type: 'token',
      data: 'gone soon',
      expires_at: '2030-01-01T00:10:00Z',
    })
    const kept = await client.tokens.create({ type: 'token', data: 'k', expires_at: '2031-01-01T00:00:00Z' })
    expect((await store.dump()).associations).toHaveLength(1)
    clock.advance(11 * 60_000)
    expect(await service.admin.sweep()).toMatchObject({ tokens: 1 })
    const dump = await store.dump()
    expect(dump.tokens.map((t) => t.id).sort()).toEqual([parent.id, kept.id].sort())
    expect(dump.associations).toEqual([])
    expect(codeOf(await client.tokens.get(child.id).catch((e: unknown) => e))).toBe('not_found')
  })

  it('an ended transaction answers 409 for 24 hours, then is deleted and answers 404', async () => {
    const { clock, service, client, store } = await vault()
    const committed = await client.transactions.create()
    await client.transactions.commit(committed.id)
    const rolled = await client.transactions.create()
    clock.advance(60_000)
    await client.transactions.rollback(rolled.id)
    const expired = await client.transactions.create()

    clock.advance(24 * 3600_000 - 60_001)
    await service.admin.sweep()
    expect(codeOf(await client.transactions.commit(committed.id).catch((e: unknown) => e))).toBe('conflict')
    clock.advance(1)
    await service.admin.sweep()
    expect(codeOf(await client.transactions.commit(committed.id).catch((e: unknown) => e))).toBe('not_found')
    expect(codeOf(await client.transactions.rollback(rolled.id).catch((e: unknown) => e))).toBe('conflict')
    clock.advance(60_000)
    await service.admin.sweep()
    expect(codeOf(await client.transactions.rollback(rolled.id).catch((e: unknown) => e))).toBe('not_found')
    // The third expired an hour after it was made; it goes 24 hours after that.
    expect(codeOf(await client.transactions.commit(expired.id).catch((e: unknown) => e))).toBe('conflict')
    clock.advance(3600_000)
    await service.admin.sweep()
    expect((await store.dump()).transactions).toEqual([])
  })
})

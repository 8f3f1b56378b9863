import { describe, expect, it } from 'vitest'
import { sha256 } from '../../src/kernel/ids.js'
import { ALL_TOKEN, failure, setup } from './setup.js'

describe('tenancy and applications', () => {
  it("another tenant's ids answer not_found for every token operation, exactly like unknown ids", async () => {
    const { client, keyFor, service, store } = await setup()
    const p = await client.tokens.create({ type: 'x', data: 'p' })
    const c = await client.tokens.children.create(p.id, { type: 'x', data: 'c' })
    const other = await service.admin.createTenant({ name: 'other' })
    const b = await keyFor('private', ALL_TOKEN, undefined, other.id)
    const before = await store.dump()
    const attempts = (id: string, child: string) => [
      b.client.tokens.get(id),
      b.client.tokens.update(id, { data: 'x' }),
      b.client.tokens.delete(id),
      b.client.tokens.children.list(id),
      b.client.tokens.children.create(id, { type: 'x', data: 1 }),
      b.client.tokens.children.link(id, child),
      b.client.tokens.children.unlink(id, child),
    ]
    const foreign = await Promise.all(attempts(p.id, c.id).map(failure))
    const own = await b.client.tokens.create({ type: 'x', data: 'mine' })
    const unknown = await Promise.all(attempts('00000000-0000-4000-8000-000000000000', own.id).map(failure))
    expect(foreign.map((e) => [e.code, e.message])).toEqual(unknown.map((e) => [e.code, e.message]))
    expect(new Set(foreign.map((e) => e.code))).toEqual(new Set(['not_found']))
    const after = await store.dump()
    expect(after.tokens.filter((t) => t.tenant_id !== other.id)).toEqual(before.tokens)
    expect(after.associations).toEqual(before.associations)
  })

  it('stores only the SHA-256 of application keys, and the key works until the application is deleted', async () => {
    const { keyFor, store, tenant } = await setup()
    const mgmt = await keyFor('management', [
      'application:create',
      'application:read',
      'application:update',
      'application:delete',
    ])
    const created = await mgmt.client.applications.create({
      name: 'web',
      type: 'public',
      permissions: ['token:create'],
    })
    expect(created.key).toMatch(/^key_[A-Za-z0-9_-]{32}$/)
    expect(created).toMatchObject({
      name: 'web',
      type: 'public',
      tenant_id: tenant.id,
      created_by: mgmt.application.id,
    })
    expect('key_hash' in created).toBe(false)
    const dump = JSON.stringify(await store.dump())
    expect(dump).not.toContain(created.key)
    expect(dump).toContain(sha256(created.key))
    const got = await mgmt.client.applications.get(created.id)
    expect('key' in got || 'key_hash' in got).toBe(false)
    const list = await mgmt.client.applications.list({ size: 2 })
    expect(list.pagination.total_items).toBe(5) // the test vault's three, and two made here
    expect(list.data).toHaveLength(2)
    const updated = await mgmt.client.applications.update(created.id, {
      name: 'web2',
      permissions: ['token:update'],
    })
    expect(updated).toMatchObject({ name: 'web2', permissions: ['token:update'], type: 'public' })
    expect(
      (await failure(mgmt.client.applications.update(created.id, { name: 'x', permissions: ['token:read'] })))
        .code,
    ).toBe('validation_failed')
    await mgmt.client.applications.delete(created.id)
    expect((await failure(mgmt.client.applications.get(created.id))).code).toBe('not_found')
    expect((await failure(mgmt.client.applications.delete(created.id))).code).toBe('not_found')
  })

  it("applications of another tenant are not_found, and a deleted application's key stops working", async () => {
    const { keyFor, service, client } = await setup()
    const perms = [
      'application:create',
      'application:read',
      'application:update',
      'application:delete',
    ] as const
    const a = await keyFor('management', [...perms])
    const other = await service.admin.createTenant({ name: 'other' })
    const b = await keyFor('management', [...perms], undefined, other.id)
    const app = await a.client.applications.create({
      name: 'srv',
      type: 'private',
      permissions: ['token:read'],
    })
    expect((await failure(b.client.applications.get(app.id))).code).toBe('not_found')
    expect(
      (await failure(b.client.applications.update(app.id, { name: 'x', permissions: ['token:read'] }))).code,
    ).toBe('not_found')
    expect((await failure(b.client.applications.delete(app.id))).code).toBe('not_found')
    expect((await b.client.applications.list()).data.map((x) => x.id)).not.toContain(app.id)
    const srv = service.connect(app.key)
    const t = await client.tokens.create({ type: 'x', data: 1 })
    await srv.tokens.get(t.id)
    await a.client.applications.delete(app.id)
    expect((await failure(srv.tokens.get(t.id))).code).toBe('unauthenticated')
  })

  it('application operations need the matching application permission', async () => {
    const { keyFor, client } = await setup()
    const reader = await keyFor('management', ['application:read'])
    expect((await failure(reader.client.applications.create({ name: 'x', type: 'private' }))).code).toBe(
      'forbidden',
    )
    expect((await failure(client.applications.list())).code).toBe('forbidden')
  })

  it('admin refuses an unknown tenant and bad input', async () => {
    const { service } = await setup()
    expect(
      (await failure(service.admin.createApplication({ tenantId: 'nope', name: 'x', type: 'private' }))).code,
    ).toBe('not_found')
    expect((await failure(service.admin.createTenant({ name: '' }))).code).toBe('validation_failed')
  })
})

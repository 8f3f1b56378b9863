import { describe, expect, it } from 'vitest'
import { type ServiceError, unchecked } from '../../entry/index.js'
import { createTestVault } from '../../testing/vault.js'

// Basis Theory's docs/api/tokens/tokens.md, "List Tokens V2" (GET /v2/tokens: type, container,
// metadata and fingerprint filters, cursor pagination through `start` and `pagination.next`).
describe('list tokens v2 (docs/api/tokens/tokens: List Tokens V2)', () => {
  it('pages by cursor in id order and filters by type, container and metadata', async () => {
    const vault = await createTestVault()
    const c = vault.client()
    await c.tokens.create({ id: 'b', type: 'note', data: 'b', metadata: { owner: 'Ann' } })
    await c.tokens.create({ id: 'a', type: 'token', data: 'a', metadata: { owner: 'bob' } })
    await c.tokens.create({ id: 'c', type: 'note', data: 'c', containers: ['/pci/high/'] })
    await c.tokens.create({ id: 'd', type: 'token', data: 'd' })
    await c.tokens.create({ id: 'soon', type: 'token', data: 'x', expires_at: '2030-01-01T00:01:00.000Z' })
    const first = await c.tokens.listV2({ size: '2' })
    expect(first.data.map((t) => t.id)).toEqual(['a', 'b'])
    expect(first.pagination.page_size).toBe(2)
    expect(first.pagination.next).toBeTypeOf('string')
    const second = await c.tokens.listV2({ size: 2, start: first.pagination.next })
    expect(second.data.map((t) => t.id)).toEqual(['c', 'd'])
    const third = await c.tokens.listV2({ size: 2, start: second.pagination.next })
    expect([third.data.map((t) => t.id), third.pagination]).toEqual([['soon'], { page_size: 2 }])
    expect((await c.tokens.listV2({ type: 'note' })).data.map((t) => t.id)).toEqual(['b', 'c'])
    expect((await c.tokens.listV2({ container: '/pci/' })).data.map((t) => t.id)).toEqual(['c'])
    const byMeta = await c.tokens.listV2({ metadata: JSON.stringify({ owner: 'ANN' }) })
    expect(byMeta.data.map((t) => t.id)).toEqual(['b'])
    expect((await c.tokens.listV2({ fingerprint: 'abc' })).data).toEqual([])
    vault.clock.advance(120_000)
    expect((await c.tokens.listV2()).data.map((t) => t.id)).toEqual(['a', 'b', 'c', 'd'])
    await vault.close()
  })

  it('refuses a forged cursor, bad metadata and unknown filters with 400; needs token:read; other tenants see nothing', async () => {
    const vault = await createTestVault()
    const c = vault.client()
    await c.tokens.create({ id: 'a', type: 'token', data: 'a' })
    const code = (p: Promise<unknown>) =>
      p.then(
        () => 'ok',
        (e: ServiceError) => e.code,
      )
    expect(await code(c.tokens.listV2({ start: 'Zm9yZ2Vk' }))).toBe('validation_failed')
    expect(await code(c.tokens.listV2({ metadata: '[1]' }))).toBe('validation_failed')
    expect(await code(c.tokens.listV2({ metadata: '{"k":1}' }))).toBe('validation_failed')
    expect(await code(unchecked(c).tokens.listV2({ page: 2 }))).toBe('validation_failed')
    expect(await code(c.tokens.listV2({ size: 101 }))).toBe('validation_failed')
    const writer = await vault.service.admin.createApplication({
      tenantId: vault.tenant.id,
      name: 'w',
      type: 'private',
      permissions: ['token:create'],
    })
    expect(await code(vault.service.connect(writer.key).tokens.listV2())).toBe('forbidden')
    const other = await vault.service.admin.createTenant({ name: 'other' })
    const { key } = await vault.service.admin.createApplication({
      tenantId: other.id,
      name: 'o',
      type: 'private',
      permissions: ['token:read'],
    })
    expect((await vault.service.connect(key).tokens.listV2()).data).toEqual([])
    await vault.close()
  })

  it('answers 400 for a cursor of another query, another route or another tenant, a tampered one, and a size past 100', async () => {
    const vault = await createTestVault()
    const c = vault.client()
    for (const id of ['a', 'b', 'c']) await c.tokens.create({ id, type: 'note', data: id })
    const code = (p: Promise<unknown>) =>
      p.then(
        () => 'ok',
        (e: ServiceError) => e.code,
      )
    const page = await c.tokens.listV2({ size: 1 })
    const next = page.pagination.next!
    expect((await c.tokens.listV2({ size: 1, start: next })).data.map((t) => t.id)).toEqual(['b'])
    // The same position, asked for with other filters or by search: refused.
    expect(await code(c.tokens.listV2({ size: 1, start: next, type: 'note' }))).toBe('validation_failed')
    expect(await code(c.tokens.searchV2({ size: 1, start: next }))).toBe('validation_failed')
    const searched = await c.tokens.searchV2({ query: 'type:note', size: 1 })
    expect(await code(c.tokens.searchV2({ query: 'type:other', start: searched.pagination.next! }))).toBe(
      'validation_failed',
    )
    expect(
      (await c.tokens.searchV2({ query: 'type:note', start: searched.pagination.next! })).data.length,
    ).toBe(2)
    // Another id under the same tag, or the tag of another id: refused.
    const [encoded, tag] = next.split('.')
    const other = Buffer.from('c').toString('base64url')
    expect(encoded).not.toBe(other)
    expect(await code(c.tokens.listV2({ start: `${other}.${tag}` }))).toBe('validation_failed')
    expect(await code(c.tokens.listV2({ start: `${encoded}.${'A'.repeat(32)}` }))).toBe('validation_failed')
    expect(await code(c.tokens.listV2({ start: `${encoded}.${tag}x` }))).toBe('validation_failed')
    // Another tenant's cursor: refused, never its records.
    const tenant = await vault.service.admin.createTenant({ name: 'other' })
    const { key } = await vault.service.admin.createApplication({
      tenantId: tenant.id,
      name: 'o',
      type: 'private',
      permissions: ['token:read', 'token:create', 'token:search'],
    })
    const foreign = vault.service.connect(key)
    for (const id of ['a', 'b', 'c']) await foreign.tokens.create({ id, type: 'note', data: `other-${id}` })
    expect(await code(foreign.tokens.listV2({ start: next }))).toBe('validation_failed')
    expect(
      await code(c.tokens.listV2({ start: (await foreign.tokens.listV2({ size: 1 })).pagination.next! })),
    ).toBe('validation_failed')
    expect((await c.tokens.listV2({ size: 100 })).data.length).toBe(3)
    expect(await code(c.tokens.listV2({ size: 101 }))).toBe('validation_failed')
    expect(await code(c.tokens.searchV2({ size: 101 }))).toBe('validation_failed')
    await vault.close()
  })
})

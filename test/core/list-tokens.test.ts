import { BasisTheory } from '@basis-theory/basis-theory-js'
import { describe, expect, it } from 'vitest'
import type { ServiceError } from '../../entry/index.js'
import { createTestVault } from '../../testing/vault.js'
import { withBtSocket } from './bt-socket.js'

// Basis Theory's docs/api/tokens/tokens.md, "List Tokens" (GET /tokens with id, type and metadata filters, page and size).
describe('list tokens (docs/api/tokens/tokens: List Tokens)', () => {
  async function seeded() {
    const vault = await createTestVault()
    const c = vault.client()
    await c.tokens.create({ id: 'b', type: 'note', data: 'b', metadata: { owner: 'Ann' } })
    await c.tokens.create({ id: 'a', type: 'token', data: 'a', metadata: { owner: 'bob' } })
    await c.tokens.create({ id: 'c', type: 'note', data: 'c', containers: ['/pci/high/'] })
    await c.tokens.create({ id: 'soon', type: 'token', data: 'x', expires_at: '2030-01-01T00:01:00.000Z' })
    return vault
  }

  it('lists by id with page and size, filters by id, type and metadata, and skips what expired', async () => {
    const vault = await seeded()
    const c = vault.client()
    const all = await c.tokens.list()
    expect(all.data.map((t) => t.id)).toEqual(['a', 'b', 'c', 'soon'])
    expect(all.data[0]).toMatchObject({ id: 'a', data: 'a' })
    expect((await c.tokens.list({ type: 'note' })).data.map((t) => t.id)).toEqual(['b', 'c'])
    expect((await c.tokens.list({ id: ['c', 'a', 'nope'] })).data.map((t) => t.id)).toEqual(['a', 'c'])
    expect((await c.tokens.list({ 'metadata.owner': 'ann' })).data.map((t) => t.id)).toEqual(['b'])
    const second = await c.tokens.list({ page: 2, size: 2 })
    expect([second.data.map((t) => t.id), second.pagination]).toEqual([
      ['c', 'soon'],
      { total_items: 4, page_number: 2, page_size: 2, total_pages: 2 },
    ])
    vault.clock.advance(120_000)
    expect((await c.tokens.list()).data.map((t) => t.id)).toEqual(['a', 'b', 'c'])
    const other = await vault.service.admin.createTenant({ name: 'other' })
    const { key } = await vault.service.admin.createApplication({
      tenantId: other.id,
      name: 'o',
      type: 'private',
      permissions: ['token:read'],
    })
    expect((await vault.service.connect(key).tokens.list()).data).toEqual([])
    await vault.close()
  })

  it('shows only what the caller may read, under its transform; needs token:read; sees its transaction', async () => {
    const vault = await seeded()
    const pci = await vault.service.admin.createApplication({
      tenantId: vault.tenant.id,
      name: 'pci',
      type: 'private',
      rules: [
        {
          description: 'pci',
          priority: 1,
          container: '/pci/',
          transform: 'redact',
          permissions: ['token:read'],
        },
      ],
    })
    const seen = await vault.service.connect(pci.key).tokens.list()
    expect(seen.data.map((t) => [t.id, 'data' in t])).toEqual([['c', false]])
    expect(seen.pagination.total_items).toBe(1)
    const denied = await vault
      .client('public')
      .tokens.list()
      .catch((e: unknown) => e)
    expect((denied as ServiceError).code).toBe('forbidden')
    const tx = await vault.client().transactions.create()
    const inside = vault.client('private', { transactionId: tx.id })
    await inside.tokens.create({ id: 'staged', type: 'token', data: 's' })
    await inside.tokens.delete('a')
    expect((await inside.tokens.list()).data.map((t) => t.id)).toEqual(['b', 'c', 'soon', 'staged'])
    expect((await vault.client().tokens.list()).data.map((t) => t.id)).toEqual(['a', 'b', 'c', 'soon'])
    await vault.close()
  })

  it('answers GET /tokens over HTTP, and basis-theory-js 1.79.3 bt.tokens.list works unmodified', async () => {
    const vault = await seeded()
    const answer = await vault.http(
      new Request('http://vault/tokens?type=note&size=1', { headers: { 'SVC-API-KEY': vault.keys.private } }),
    )
    expect(answer.status).toBe(200)
    expect(await answer.json()).toMatchObject({
      pagination: { total_items: 2, page_size: 1 },
      data: [{ id: 'b' }],
    })
    try {
      await withBtSocket(vault.service, async (url) => {
        const options = { apiBaseUrl: url, disableTelemetry: true }
        const bt = await new BasisTheory().init(vault.keys.private, options)
        const listed = await bt.tokens.list({ type: ['note'] as never })
        expect(listed.data.map((t) => t.id)).toEqual(['b', 'c'])
        expect(listed.pagination).toMatchObject({ totalItems: 2 })
      })
    } finally {
      await vault.close()
    }
  })
})

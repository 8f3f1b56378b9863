import { describe, expect, it } from 'vitest'
import type { Op } from '../../src/store/index.js'
import { failure, setup } from './setup.js'

const GENERAL = [
  {
    description: 'general only',
    priority: 1,
    container: '/general/',
    transform: 'reveal' as const,
    permissions: ['token:read' as const, 'token:search' as const],
  },
]

/** Every way a cursor's characters could be read back: base64url as UTF-8 and as Latin-1. */
const decoded = (cursor: string) => [
  Buffer.from(cursor, 'base64url').toString('utf8'),
  Buffer.from(cursor, 'base64url').toString('latin1'),
  cursor,
]

describe('v2 cursors are opaque', () => {
  it('a decoded cursor names no id, and a changed one or one of another query is 400', async () => {
    const { client, keyFor } = await setup()
    for (let i = 0; i < 3; i++)
      await client.tokens.create({
        id: `gen-${i}-cust-jane`,
        type: 'token',
        data: 'x',
        containers: ['/general/'],
      })
    for (let i = 0; i < 3; i++)
      await client.tokens.create({
        id: `pci-${i}-cust-jane`,
        type: 'token',
        data: 'x',
        containers: ['/pci/'],
      })
    const limited = (await keyFor('private', [], GENERAL)).client
    const list = await limited.tokens.listV2({ size: 1 })
    const search = await limited.tokens.searchV2({ query: 'type:token', size: 2 })
    for (const cursor of [list.pagination.next!, search.pagination.next!])
      for (const text of decoded(cursor)) expect(text).not.toMatch(/gen-|pci-|cust/)
    // The cursors still page on, each token once.
    const rest = await limited.tokens.listV2({ size: 10, start: list.pagination.next! })
    expect([...list.data, ...rest.data].map((t) => t.id)).toEqual([
      'gen-0-cust-jane',
      'gen-1-cust-jane',
      'gen-2-cust-jane',
    ])
    // A changed cursor, or one of another query, is a 400.
    const next = list.pagination.next!
    const changed = next.slice(0, 10) + (next[10] === 'A' ? 'B' : 'A') + next.slice(11)
    expect((await failure(limited.tokens.listV2({ size: 1, start: changed }))).code).toBe('validation_failed')
    expect((await failure(limited.tokens.listV2({ size: 1, type: 'card', start: next }))).code).toBe(
      'validation_failed',
    )
  })

  it('the too-broad 400 names the work cap, never a number of tokens', async () => {
    const { client, store, tenant } = await setup()
    const ops: Op[] = Array.from({ length: 10_001 }, (_, i) => ({
      op: 'token.put' as const,
      token: {
        id: `t${String(i).padStart(6, '0')}`,
        tenant_id: tenant.id,
        type: 'token',
        data: 'x',
        containers: ['/pci/'],
        metadata: {},
        created_by: 'app',
        created_at: '2030-01-01T00:00:00.000Z',
      },
    }))
    await store.write({ ops })
    const broad = await failure(client.tokens.search({ query: 'NOT type:other', size: 1 }))
    expect(broad.message).toContain('too broad')
    expect(broad.message).not.toMatch(/\d+ tokens/)
  }, 30_000)
})

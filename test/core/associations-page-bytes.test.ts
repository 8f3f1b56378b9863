import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { postgresStore } from '../../adapters/postgres/index.js'
import type { Store } from '../../src/store/contract.js'
import { delegatingStore } from '../../src/store/delegate.js'
import type { Op } from '../../src/store/index.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from '../postgres/database.js'
import { turnsDuring } from './read-probes.js'
import { failure, setup } from './setup.js'

/**
 * Stored bytes of five children summing to exactly 4 MiB (4 194 304); a string of n ASCII
 * characters without a mask is stored sealed in n + 40 bytes (header 8, IV 12, `["…"]` n + 4, tag 16).
 */
const AT_BOUND = [1_000_000, 1_000_000, 1_000_000, 1_000_000, 194_304]
const PAST_BOUND = [1_000_000, 1_000_000, 1_000_000, 1_000_000, 194_305]

/** Children lists answer at most 4 MiB of stored token data a page, at the byte, on every path. */
async function boundary(store: Store) {
  const { client, service, full, tenant, keyFor } = await setup({ store })
  for (const [parent, sizes] of [
    ['fit', AT_BOUND],
    ['over', PAST_BOUND],
  ] as const) {
    await client.tokens.create({ id: parent, type: 'parent', data: parent })
    for (const [i, bytes] of sizes.entries())
      await client.tokens.children.create(parent, {
        id: `${parent}-${i}`,
        type: 'child',
        data: 'x'.repeat(bytes - 40),
        metadata: { kind: parent },
      })
  }
  const heads = await store.getTokenHeads(
    tenant.id,
    [0, 1, 2, 3, 4].flatMap((i) => [`fit-${i}`, `over-${i}`]),
  )
  expect(heads.map((h) => h.stored_bytes)).toEqual(AT_BOUND.flatMap((b, i) => [b, PAST_BOUND[i]]))
  const ruled = (
    await keyFor(
      'private',
      [],
      [
        {
          description: 'all',
          priority: 1,
          container: '/',
          transform: 'mask',
          permissions: ['token:read'],
        },
      ],
    )
  ).client
  const tx = await client.transactions.create()
  const inTx = service.connect(full.key, { transactionId: tx.id })
  const lists = (parent: string) => [
    // The store's page, the core's walk (a metadata filter, access rules, a transaction's view).
    () => client.tokens.children.list(parent, { size: 5 }),
    () => client.tokens.children.list(parent, { size: 5, metadata: { kind: parent } }),
    () => ruled.tokens.children.list(parent, { size: 5 }),
    () => inTx.tokens.children.list(parent, { size: 5 }),
  ]
  const ids = (parent: string) => [0, 1, 2, 3, 4].map((i) => `${parent}-${i}`)
  for (const list of lists('fit')) expect((await list()).data.map((t) => t.id)).toEqual(ids('fit'))
  for (const list of lists('over')) {
    const refused = await failure(list())
    expect([refused.code, refused.message]).toEqual(['validation_failed', expect.stringContaining('4194304')])
  }
  // A smaller page is answered.
  expect((await client.tokens.children.list('over', { size: 4 })).data.map((t) => t.id)).toEqual(
    ids('over').slice(0, 4),
  )
}

describe('a children page answers at most 4 MiB (4 194 304 bytes) of stored token data', () => {
  it('memory store', async () => {
    await boundary(memoryStore())
  }, 120_000)

  it('file store', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tv-children-bytes-'))
    const store = await fileStore({ path: dir })
    try {
      await boundary(store)
    } finally {
      await store.close()
      await rm(dir, { recursive: true, force: true })
    }
  }, 120_000)
})

describePostgres('a children page answers at most 4 MiB of stored token data: PostgreSQL', (url) => {
  it('answers and refuses at the byte as the other stores', async () => {
    const pool = testPool(url, 4)
    const schema = freshSchema()
    try {
      await boundary(await postgresStore({ pool, schema }))
    } finally {
      await dropSchemas(pool, [schema])
      await pool.end()
    }
  }, 120_000)
})

describe('a children walk runs on the work meter of lists and searches', () => {
  it('examines at most 10 000 links, yielding every 64, then answers 400 naming the work cap', async () => {
    const inner = memoryStore()
    const count = { heads: 0 }
    const store = delegatingStore(inner, {
      async getTokenHeads(tenantId, ids) {
        const found = await inner.getTokenHeads(tenantId, ids)
        count.heads += found.length
        return found
      },
    })
    const { client, tenant } = await setup({ store })
    await client.tokens.create({ id: 'p', type: 'parent', data: 'p' })
    const link = (i: number): Op[] => {
      const id = `c${String(i).padStart(6, '0')}`
      const at = '2030-01-01T00:00:00.000Z'
      return [
        {
          op: 'token.put',
          token: {
            ...{ id, tenant_id: tenant.id, type: 'child', data: 'd', containers: ['/general/high/'] },
            ...{ metadata: {}, created_by: 'app', created_at: at },
          },
        },
        {
          op: 'association.put',
          association: { tenant_id: tenant.id, parent_id: 'p', child_id: id, created_at: at },
        },
      ]
    }
    for (let start = 0; start < 10_001; start += 500)
      await store.write({
        ops: Array.from({ length: Math.min(500, 10_001 - start) }, (_, i) => link(start + i)).flat(),
      })
    count.heads = 0
    const { result, turns } = await turnsDuring(() =>
      failure(client.tokens.children.list('p', { metadata: { kind: 'none' } })),
    )
    expect([result.code, result.message]).toEqual([
      'validation_failed',
      expect.stringContaining('10000 units'),
    ])
    // The parent's head, and one head per link examined.
    expect(count.heads).toBe(1 + 10_000)
    // 10 000 units, a yield every 64: at least 156 turns of other work.
    expect(turns).toBeGreaterThanOrEqual(150)
    // One child fewer is counted whole.
    await client.tokens.delete('c000000')
    const page = await client.tokens.children.list('p', { metadata: { kind: 'none' } })
    expect(page.pagination.total_items).toBe(0)
  }, 120_000)
})

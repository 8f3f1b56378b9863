import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { postgresStore } from '../../adapters/postgres/index.js'
import type { Store } from '../../src/store/contract.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from '../postgres/database.js'
import { failure, setup } from './setup.js'

/**
 * Stored bytes of five tokens summing to exactly 4 MiB (4 194 304). A token whose data is a string
 * of n ASCII characters and has no mask is stored sealed as version header (8) ‖ IV (12) ‖
 * ciphertext of `["…"]` (n + 4) ‖ tag (16): n + 40 bytes.
 */
const AT_BOUND = [1_000_000, 1_000_000, 1_000_000, 1_000_000, 194_304]
const PAST_BOUND = [1_000_000, 1_000_000, 1_000_000, 1_000_000, 194_305]

async function tokensOf(store: Store) {
  const kit = await setup({ store })
  const ids = (type: string) => AT_BOUND.map((_, i) => `${type}-${i}`)
  for (const [type, sizes] of [
    ['fit', AT_BOUND],
    ['over', PAST_BOUND],
  ] as const) {
    for (const [i, bytes] of sizes.entries())
      await kit.client.tokens.create({
        id: `${type}-${i}`,
        type,
        data: 'x'.repeat(bytes - 40),
        metadata: { kind: type },
      })
  }
  // The stores report what the test computed: the sizes are the stored bytes, not an estimate.
  const heads = await store.getTokenHeads(kit.tenant.id, [...ids('fit'), ...ids('over')])
  expect(heads.map((h) => h.stored_bytes)).toEqual([...AT_BOUND, ...PAST_BOUND])
  return { ...kit, ids }
}

/** Every list and search route: 4 MiB answered whole, one byte more ends the page (v2) or is 400 (v1). */
async function boundary(store: Store) {
  const { client, ids } = await tokensOf(store)
  const v2 = async (type: string) => [
    await client.tokens.listV2({ type: [type], size: 5 }),
    await client.tokens.searchV2({ query: `type:${type}`, size: 5 }),
  ]
  for (const page of await v2('fit')) {
    expect(page.data.map((t) => t.id)).toEqual(ids('fit'))
    expect(page.pagination.next).toBeUndefined()
  }
  for (const page of await v2('over')) {
    expect(page.data.map((t) => t.id)).toEqual(ids('over').slice(0, 4))
    expect(page.pagination.next).toEqual(expect.any(String))
  }
  const v1 = (type: string) => [
    // The store's own page (an index of types), the core's walk (a metadata filter), a search.
    () => client.tokens.list({ type: [type], size: 5 }),
    () => client.tokens.list({ metadata: { kind: type }, size: 5 }),
    () => client.tokens.search({ query: `type:${type}`, size: 5 }),
  ]
  for (const call of v1('fit')) expect((await call()).data.map((t) => t.id)).toEqual(ids('fit'))
  for (const call of v1('over')) {
    const refused = await failure(call())
    expect([refused.code, refused.message]).toEqual(['validation_failed', expect.stringContaining('4194304')])
  }
}

describe('a page answers at most 4 MiB (4 194 304 bytes) of stored token data, at the byte', () => {
  it('memory store', async () => {
    await boundary(memoryStore())
  }, 120_000)

  it('file store', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tv-page-boundary-'))
    const store = await fileStore({ path: dir })
    try {
      await boundary(store)
    } finally {
      await store.close()
      await rm(dir, { recursive: true, force: true })
    }
  }, 120_000)
})

describePostgres('a page answers at most 4 MiB of stored token data, at the byte: PostgreSQL', (url) => {
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

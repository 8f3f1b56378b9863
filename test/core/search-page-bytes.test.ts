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

/** A page's answer stops before 4 MiB of token data: 900 KB tokens fit four to a page. */
async function pagesOf(store: Store) {
  const { client } = await setup({ store })
  const big = 'x'.repeat(900_000)
  for (let i = 0; i < 10; i++) await client.tokens.create({ id: `big-${i}`, type: 'big', data: big })
  const sizes: number[] = []
  let start: string | undefined
  do {
    const page = await client.tokens.listV2({ size: 10, ...(start ? { start } : {}) })
    sizes.push(page.data.length)
    start = page.pagination.next
  } while (start)
  expect(sizes).toEqual([4, 4, 2])
  const found = await client.tokens.searchV2({ query: 'type:big', size: 10 })
  expect([found.data.length, found.pagination.next]).toEqual([4, expect.any(String)])
  // v1 pages can't end early (offsets would skip tokens): a page too large for the bound is 400.
  // Each call is made only when its turn comes, so no refusal waits unobserved behind another.
  for (const call of [
    () => client.tokens.list({ size: 10 }),
    () => client.tokens.list({ size: 5, type: ['big'] }),
    () => client.tokens.search({ query: 'type:big', size: 10 }),
  ]) {
    const refused = await failure(call())
    expect([refused.code, refused.message]).toEqual(['validation_failed', expect.stringContaining('size')])
  }
  expect((await client.tokens.list({ size: 4, page: 2 })).data.map((t) => t.id)).toEqual([
    'big-4',
    'big-5',
    'big-6',
    'big-7',
  ])
}

describe('a page answers at most 4 MiB of token data', () => {
  it('memory store', async () => {
    await pagesOf(memoryStore())
  }, 60_000)

  it('file store', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tv-page-bytes-'))
    const store = await fileStore({ path: dir })
    try {
      await pagesOf(store)
    } finally {
      await store.close()
      await rm(dir, { recursive: true, force: true })
    }
  }, 60_000)
})

describePostgres('a page answers at most 4 MiB of token data: PostgreSQL store', (url) => {
  it('pages and refuses as the other stores', async () => {
    const pool = testPool(url, 4)
    const schema = freshSchema()
    try {
      await pagesOf(await postgresStore({ pool, schema }))
    } finally {
      await dropSchemas(pool, [schema])
      await pool.end()
    }
  }, 60_000)
})

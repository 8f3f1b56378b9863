import { readdirSync, readFileSync, statSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { postgresStore } from '../../adapters/postgres/index.js'
import type { Store } from '../../entry/index.js'
import { kvStore } from '../../examples/kv-store.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from '../postgres/database.js'
import { setup } from './setup.js'

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? filesUnder(path) : [path]
  })
}

const SECRET = 'Kp7-search-index-plaintext'

/** The same searches over every store kind the repository ships. */
async function searchesOver(store: Store) {
  const { client, clock } = await setup({ store })
  for (let i = 0; i < 130; i++) {
    await client.tokens.create({
      id: `t${String(i).padStart(3, '0')}`,
      type: i % 3 ? 'token' : 'card_like',
      data: { code: `${SECRET}-${i}` },
      metadata: { i: String(i) },
      search_indexes: ['{{ data.code }}', '{{ data.code | upcase }}'],
      ...(i === 7 ? { expires_at: '2030-01-01T00:00:30Z' } : {}),
    })
  }
  clock.advance(60_000)
  const q = async (query: string, size = 100) =>
    (await client.tokens.search({ query, size })).data.map((t) => t.id)
  expect(await q(`data:${SECRET}-42`)).toEqual(['t042'])
  expect(await q(`data:${SECRET.toUpperCase()}-129`)).toEqual(['t129'])
  expect(await q(`data:${SECRET}-7`)).toEqual([])
  const all = Array.from({ length: 130 }, (_, i) => i).filter((i) => i !== 7)
  const id = (i: number) => `t${String(i).padStart(3, '0')}`
  expect(await q('type:card_like AND metadata.i:1*', 100)).toEqual(
    all.filter((i) => i % 3 === 0 && String(i).startsWith('1')).map(id),
  )
  expect((await client.tokens.search({ query: 'NOT type:card_like' })).pagination.total_items).toBe(
    all.filter((i) => i % 3).length,
  )
  expect(await q('id:t001 OR id:t128')).toEqual(['t001', 't128'])
  const { fingerprint } = await client.tokens.get('t042')
  expect(await q(`fingerprint:${fingerprint} AND type:card_like`)).toEqual(['t042'])
  return client
}

describe('search over each store', () => {
  it('memory store', async () => {
    await searchesOver((await import('../../adapters/memory/index.js')).memoryStore())
  })

  it('file store: and its files hold no search index value', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tokenvault-search-'))
    try {
      const store = await fileStore({ path: dir, durability: 'none' })
      await searchesOver(store)
      await store.close()
      const files = filesUnder(dir)
      expect(files.length).toBeGreaterThan(0)
      for (const path of files) {
        const bytes = readFileSync(path).toString('latin1')
        for (const needle of [SECRET, SECRET.toUpperCase()]) expect(bytes.includes(needle), path).toBe(false)
      }
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }, 60_000)

  it('the key-value example store', async () => {
    const map = new Map<string, string>()
    await searchesOver(
      await kvStore({ get: async (k) => map.get(k) ?? null, set: async (k, v) => void map.set(k, v) }),
    )
    expect([...map.values()].join('\n')).not.toContain(SECRET)
  })
})

describePostgres('search over the PostgreSQL store', (url) => {
  it('answers the same, and no row holds a search index value', async () => {
    const pool = testPool(url, 4)
    const schema = freshSchema()
    try {
      const store = await postgresStore({ pool, schema })
      await searchesOver(store)
      const rows = await pool.query(`SELECT doc::text AS doc FROM "${schema}".tokens`)
      expect(rows.rows.length).toBeGreaterThan(100)
      for (const row of rows.rows as Array<{ doc: string }>) expect(row.doc).not.toContain(SECRET)
      await store.close()
    } finally {
      await dropSchemas(pool, [schema])
      await pool.end()
    }
  }, 60_000)
})

import type pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import type { StoredToken } from '../../src/kernel/types.js'
import type { Store } from '../../src/store/contract.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

const NOW = '2030-01-01T00:00:00.000Z'
const T = 'tenant'

/** A token of tenant `T` whose term-bearing fields are `fields` (any JSON: the store must not care). */
const token = (id: string, fields: Record<string, unknown>): StoredToken =>
  ({ tenant_id: T, id, type: 't', data: 1, created_at: NOW, created_by: 'a', ...fields }) as StoredToken

/** Docs whose terms are easy to get wrong: duplicates, nulls, odd JSON types, empty parts. */
const SHAPES: Record<string, unknown>[] = [
  {
    containers: ['/a/', '/a/', '/b/'],
    metadata: { Key: 'VaLue', e: '', same: '/a/' },
    search_index_hashes: ['h', 'h', 'g'],
  },
  { containers: '/a/', metadata: ['x', 'y'], search_index_hashes: { h: 'h' } },
  { containers: [], metadata: {} },
  { metadata: { gone: null, kept: 'X', n: 5, o: { Deep: 'A' }, l: [1] } },
  { containers: ['/general/high/'], metadata: { 'MiXed Key': 'ÄÖ' } },
  { containers: [{ Not: 'a string' }], search_index_hashes: [] },
  { containers: [7, 7], search_index_hashes: ['h'] },
  // One container and no other term: the usual token, written in one statement.
  { containers: ['/only/'], metadata: {} },
  { containers: [5], metadata: 'not an object' },
  { containers: ['/only/'] },
  {},
]

describePostgres('postgres token terms', (url) => {
  let pool: pg.Pool
  let store: Store
  const schema = freshSchema()

  beforeAll(async () => {
    pool = testPool(url, 2)
    store = await postgresStore({ pool, schema })
  })
  afterAll(async () => {
    await store?.close()
    await dropSchemas(pool, [schema])
    await pool.end()
  })

  /** The term rows kept for token `id`, and the rows `token_terms_of` gives for its stored doc. */
  const terms = async (id: string) => {
    const kept = await pool.query(
      `SELECT kind, name, value FROM "${schema}".token_terms WHERE tenant_id = $1 AND id = $2
       ORDER BY 1, 2, 3`,
      [T, id],
    )
    const derived = await pool.query(
      `SELECT t.kind, t.name, t.value FROM "${schema}".tokens k, "${schema}".token_terms_of(k.doc) t
       WHERE k.tenant_id = $1 AND k.id = $2 ORDER BY 1, 2, 3`,
      [T, id],
    )
    return { kept: kept.rows, derived: derived.rows }
  }
  const count = async () =>
    Number(
      (
        await pool.query(
          `SELECT coalesce(sum(n), 0) AS n FROM "${schema}".token_counts WHERE tenant_id = $1`,
          [T],
        )
      ).rows[0].n,
    )

  it("keeps exactly token_terms_of's rows for each doc on create, on update and none after delete", async () => {
    const ids = SHAPES.map((_, i) => `k${i}`)
    for (const [i, id] of ids.entries()) {
      // Half created under `token.absent` (a plain INSERT), half as an upsert of a new row.
      const put = { op: 'token.put' as const, token: token(id, SHAPES[i]!) }
      const checks = i % 2 ? [] : [{ check: 'token.absent' as const, tenant_id: T, id }]
      expect(await store.write({ checks, ops: [put] })).toEqual({ ok: true })
      const { kept, derived } = await terms(id)
      expect(kept, id).toEqual(derived)
    }
    // The first shape's distinct terms, spelled out: containers and hashes once each, values lower-cased.
    expect((await terms('k0')).kept).toEqual([
      { kind: 'container', name: '', value: '/a/' },
      { kind: 'container', name: '', value: '/b/' },
      { kind: 'metadata', name: 'Key', value: 'value' },
      { kind: 'metadata', name: 'e', value: '' },
      { kind: 'metadata', name: 'same', value: '/a/' },
      { kind: 'search_index', name: '', value: 'g' },
      { kind: 'search_index', name: '', value: 'h' },
    ])
    expect(await count()).toBe(ids.length)
    // Each token takes the next one's shape: the old terms go, the new ones come.
    for (const [i, id] of ids.entries()) {
      const next = SHAPES[(i + 1) % SHAPES.length]!
      expect(await store.write({ ops: [{ op: 'token.put', token: token(id, next) }] })).toEqual({ ok: true })
      const { kept, derived } = await terms(id)
      expect(kept, id).toEqual(derived)
    }
    expect(await count()).toBe(ids.length)
    for (const id of ids) await store.write({ ops: [{ op: 'token.delete', tenant_id: T, id }] })
    const left = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".token_terms`)
    expect(left.rows[0].n).toBe(0)
    expect(await count()).toBe(0)
  })
})

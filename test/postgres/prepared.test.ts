import pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { prepared } from '../../adapters/postgres/keys.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

/**
 * A prepared call (`prepared`) carries its statement's name and text on a prototype and its values
 * as its only own property; `pg` copies a call's config before sending it, and must keep all three.
 */
describePostgres('prepared calls', (url) => {
  let pool: pg.Pool
  const schema = freshSchema()
  beforeAll(() => {
    // One connection: the statements it prepared are the store's.
    pool = testPool(url, 1)
  })
  afterAll(async () => {
    await dropSchemas(pool, [schema])
    await pool.end()
  })

  it('hold one statement name and text per text, and their own values', () => {
    const a = prepared('SELECT $1::int AS n', [1])
    const b = prepared('SELECT $1::int AS n', [2])
    expect(Object.keys(a)).toEqual(['values'])
    expect(a.name).toMatch(/^tv_[0-9a-f]{24}$/)
    expect([b.name, b.text, b.values]).toEqual([a.name, 'SELECT $1::int AS n', [2]])
    expect(prepared('SELECT $1::int + 1 AS n', [1]).name).not.toBe(a.name)
    // What pg makes of it, as it does for every call.
    const query = new pg.Query(a) as unknown as pg.QueryConfig
    expect([query.name, query.text, query.values]).toEqual([a.name, a.text, [1]])
  })

  it('run as named prepared statements', async () => {
    const store = await postgresStore({ pool, schema })
    try {
      expect(await store.getToken('tenant', 'missing')).toBeNull()
      const { rows } = await pool.query<{ name: string; statement: string }>(
        'SELECT name, statement FROM pg_prepared_statements',
      )
      const read = rows.find((r) => r.statement.includes(`"${schema}".tokens`))
      expect(read?.name).toMatch(/^tv_[0-9a-f]{24}$/)
      const n = await pool.query(prepared('SELECT $1::int * 2 AS n', [21]))
      expect(n.rows).toEqual([{ n: 42 }])
      const again = await pool.query<{ name: string }>(
        'SELECT name FROM pg_prepared_statements WHERE statement = $1',
        ['SELECT $1::int * 2 AS n'],
      )
      expect(again.rows.map((r) => r.name)).toEqual([prepared('SELECT $1::int * 2 AS n', []).name])
    } finally {
      await store.close()
    }
  })
})

import type pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import type { Store } from '../../src/store/contract.js'
import type { Op } from '../../src/store/index.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

const NOW = '2030-01-01T00:00:00.000Z'
const TENANTS = 20
const PER_TENANT = 400

/** A token `k<i>` with every kind of index term, and (but for `k0`) a link under `k0`. */
function records(tenant_id: string, i: number): Op[] {
  const ops: Op[] = [
    {
      op: 'token.put',
      token: {
        tenant_id,
        id: `k${String(i).padStart(4, '0')}`,
        type: `type-${i % 10}`,
        data: { $sealed: 'x' },
        containers: [`/c${i % 7}/`, '/general/high/'],
        metadata: { order: `ORD-${i}`, shard: String(i % 5) },
        fingerprint: `fp-${i % 50}`,
        search_index_hashes: [`h-${i}`, `g-${i % 3}`],
        created_at: NOW,
        created_by: 'a',
      },
    },
  ]
  if (i > 0)
    ops.push({
      op: 'association.put',
      association: {
        tenant_id,
        parent_id: 'k0000',
        child_id: `k${String(i).padStart(4, '0')}`,
        created_at: NOW,
      },
    })
  return ops
}

/** The plan nodes of a JSON plan, as `Node Type` or `Node Type on relation`. */
function nodes(plan: unknown, out: string[] = []): string[] {
  if (plan && typeof plan === 'object') {
    const node = plan as Record<string, unknown>
    if (typeof node['Node Type'] === 'string')
      out.push(
        typeof node['Relation Name'] === 'string'
          ? `${node['Node Type']} on ${node['Relation Name']}`
          : (node['Node Type'] as string),
      )
    for (const value of Object.values(node)) nodes(value, out)
  }
  return out
}

describePostgres('postgres token index reads', (url) => {
  let pool: pg.Pool
  let store: Store
  const issued: pg.QueryConfig[] = []
  const schema = freshSchema()

  beforeAll(async () => {
    pool = testPool(url)
    const recording = Object.create(pool) as pg.Pool
    recording.query = ((config: pg.QueryConfig) => {
      issued.push(config)
      return pool.query(config)
    }) as pg.Pool['query']
    store = await postgresStore({ pool: recording, schema })
    for (let t = 0; t < TENANTS; t++) {
      await store.write({ ops: Array.from({ length: PER_TENANT }, (_, i) => records(`t${t}`, i)).flat() })
    }
    // This schema's tables, with statistics from every row, not ANALYZE's random sample of 300 × the target (the term table
    // holds about 64 000 rows): with a sample, the estimates changed from run to run, and once
    // they made the planner choose a bitmap scan and a sort for an exact term's page.
    const client = await pool.connect()
    try {
      await client.query('SET default_statistics_target = 1000')
      const { rows } = await client.query<{ t: string }>(
        `SELECT format('%I.%I', schemaname, tablename) AS t FROM pg_tables WHERE schemaname = $1`,
        [schema],
      )
      await client.query(`VACUUM ANALYZE ${rows.map((r) => r.t).join(', ')}`)
    } finally {
      client.release()
    }
  }, 120_000)
  afterAll(async () => {
    await store?.close()
    await dropSchemas(pool, [schema])
    await pool.end()
  })

  it('answers each exact term from its index as the tokens hold them, updates and deletes included', async () => {
    const term = (kind: 'type' | 'container' | 'fingerprint' | 'search_index', value: string) =>
      store.findTokenIds('t3', { term: { kind, value }, limit: 3 })
    expect(await term('type', 'type-4')).toEqual(['k0004', 'k0014', 'k0024'])
    expect(await term('container', '/c2/')).toEqual(['k0002', 'k0009', 'k0016'])
    expect(await term('fingerprint', 'fp-7')).toEqual(['k0007', 'k0057', 'k0107'])
    expect(await term('search_index', 'h-42')).toEqual(['k0042'])
    expect(
      await store.findTokenIds('t3', { term: { kind: 'metadata', key: 'order', value: 'ord-42' }, limit: 3 }),
    ).toEqual(['k0042'])
    const [k42] = await store.getTokens('t3', ['k0042'])
    await store.write({ ops: [{ op: 'token.put', token: { ...k42!, type: 'moved', metadata: {} } }] })
    expect(await term('type', 'moved')).toEqual(['k0042'])
    expect(
      await store.findTokenIds('t3', { term: { kind: 'metadata', key: 'order', value: 'ord-42' }, limit: 3 }),
    ).toEqual([])
    await store.write({ ops: [{ op: 'token.delete', tenant_id: 't3', id: 'k0042' }] })
    expect(await term('type', 'moved')).toEqual([])
    expect(await term('search_index', 'h-42')).toEqual([])
  })

  it('plans every keyset read as an ordered index range: no table scan, no sort', async () => {
    issued.length = 0
    for (const kind of ['type', 'container', 'fingerprint', 'search_index'] as const)
      await store.findTokenIds('t7', { term: { kind, value: 'x' }, after: 'k0100', limit: 11 })
    await store.findTokenIds('t7', { term: { kind: 'metadata', key: 'shard', value: '3' }, limit: 11 })
    await store.findTokenIds('t7', { term: { kind: 'id', value: 'k0003' }, limit: 11 })
    await store.findTokenIds('t7', { after: 'k0200', limit: 11 })
    await store.findChildIds('t7', 'k0000', { after: '0000000000000000050', limit: 11 })
    await store.getTokenHeads('t7', ['k0003', 'k0004'])
    await store.getTokens('t7', ['k0003', 'k0004'])
    expect(issued.length).toBe(10)
    const client = await pool.connect()
    try {
      await client.query('SET plan_cache_mode = force_custom_plan')
      // What these reads control is their shape: each has an ordered index range to take. Which of
      // two near paths the planner prefers for a page of 11 also weighs the heap pages it would
      // visit, and VACUUM cannot mark pages all-visible while another test file's transaction is
      // open on the same server: in one CI run an index-only scan lost to a bitmap scan and a sort.
      // With sorting priced out, a read that still needs a Sort has no ordered path at all.
      await client.query('SET enable_sort = off')
      for (const config of issued) {
        const { rows } = await client.query({
          text: `EXPLAIN (FORMAT JSON) ${config.text}`,
          values: config.values ?? [],
        })
        const found = nodes(rows[0]['QUERY PLAN'])
        if (process.env['SHOW_PLANS']) console.log(JSON.stringify(rows[0]['QUERY PLAN']))
        expect(
          found.filter((n) => n.startsWith('Seq Scan') || n === 'Sort'),
          config.text,
        ).toEqual([])
      }
      // A type or fingerprint page reads its index on the tokens; a container page, the term index.
      const indexesOf = async (i: number) => {
        const { rows } = await client.query({
          text: `EXPLAIN (FORMAT JSON) ${issued[i]!.text}`,
          values: issued[i]!.values ?? [],
        })
        return JSON.stringify(rows[0]['QUERY PLAN']).match(/"Index Name":"[a-z_]+"/g)
      }
      expect(await indexesOf(0)).toEqual(['"Index Name":"tokens_by_type"'])
      expect(await indexesOf(1)).toEqual(['"Index Name":"token_terms_pkey"'])
      expect(await indexesOf(2)).toEqual(['"Index Name":"tokens_by_fingerprint"'])
    } finally {
      client.release()
    }
  })
})

/**
 * The Postgres store against the same SQL sent straight through `pg`: token create (a `write` of one
 * `token.put` with a `token.absent` check) and `getToken`, with 1 and 10 connections, in one run.
 * Needs `TOKENVAULT_PG_URL` (see scripts/pg-test-server.sh); without it, returns no rows.
 *   npx tsx bench/postgres.bench.ts     (BENCH_QUICK=1 for a smoke run)
 */
import { createHash, randomBytes } from 'node:crypto'
import { pathToFileURL } from 'node:url'
import pg from 'pg'
import { postgresStore } from '../adapters/postgres/index.js'
import type { Store } from '../src/store/contract.js'
import type { StoredToken } from '../src/types.js'
import { type BenchOptions, type BenchRow, inFlight } from './harness.js'
import { processRows, serviceRows } from './postgres-service.js'
import { printRows } from './report.js'

const GOAL = '≤ 1.3×'
const token = (tenant_id: string, id: string): StoredToken => ({
  id,
  tenant_id,
  type: 'card',
  data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 },
  containers: ['/general/high/'],
  metadata: { owner: 'ann' },
  created_by: 'bench-app',
  created_at: '2030-01-01T00:00:00.000Z',
})
const lockKey = (name: string) => createHash('sha256').update(name).digest().readBigInt64BE(0).toString()

/**
 * The statements the store sends for these two operations, written out by hand: BEGIN and the
 * record's advisory lock (one simple-protocol string), the prepared check, the prepared upsert, COMMIT; and
 * the prepared point read.
 */
function rawSql(pool: pg.Pool, schema: string) {
  const s = `"${schema}"`
  const check = `SELECT (NOT EXISTS (SELECT 1 FROM ${s}.tokens WHERE tenant_id = $1::text AND id = $2::text)) AS c0`
  const insert = `INSERT INTO ${s}.tokens (tenant_id, id, type, expires_at, doc) VALUES ($1, $2, $3, $4, $5::jsonb)
      ON CONFLICT (tenant_id, id) DO UPDATE
      SET type = EXCLUDED.type, expires_at = EXCLUDED.expires_at, doc = EXCLUDED.doc`
  const select = `SELECT doc::text AS doc FROM ${s}.tokens WHERE tenant_id = $1 AND id = $2`
  /** BEGIN and the advisory lock of the one record the write names (the token), as the store sends them. */
  const begin = (tenant: string, id: string) =>
    `BEGIN; SELECT pg_advisory_xact_lock(${lockKey(`tokenvault\u0000${schema}\u0000token\u0000${tenant}\u0000${id}`)})`
  return {
    async create(t: StoredToken) {
      const client = await pool.connect()
      try {
        await client.query(begin(t.tenant_id, t.id))
        const { rows } = await client.query({ name: 'raw_check', text: check, values: [t.tenant_id, t.id] })
        if (rows[0]?.c0 !== true) throw new Error('token exists')
        const values = [t.tenant_id, t.id, t.type, t.expires_at ?? null, JSON.stringify(t)]
        await client.query({ name: 'raw_insert', text: insert, values })
        await client.query('COMMIT')
      } catch (error) {
        await client.query('ROLLBACK')
        throw error
      } finally {
        client.release()
      }
    },
    async get(tenant: string, id: string) {
      const { rows } = await pool.query({ name: 'raw_select', text: select, values: [tenant, id] })
      return rows[0] ? (JSON.parse(rows[0].doc) as StoredToken) : null
    },
  }
}

/**
 * Alternates `op` and `baseline` in short blocks (`block` calls, `concurrency` in flight) until
 * `ms` have passed, and returns the ops/s of each over its own time only: interleaving finely makes
 * machine noise (other processes, disk flushes) hit both alike.
 */
async function measure(
  op: () => Promise<unknown>,
  baseline: () => Promise<unknown>,
  concurrency: number,
  block: number,
  ms: number,
) {
  await inFlight(op, concurrency, block)
  await inFlight(baseline, concurrency, block)
  let opMs = 0
  let baseMs = 0
  let count = 0
  const start = performance.now()
  while (performance.now() - start < ms) {
    let t = performance.now()
    await inFlight(op, concurrency, block)
    opMs += performance.now() - t
    t = performance.now()
    await inFlight(baseline, concurrency, block)
    baseMs += performance.now() - t
    count += block
  }
  return { op: (count * 1000) / opMs, baseline: (count * 1000) / baseMs }
}

async function rowsFor(url: string, connections: number, opts: BenchOptions): Promise<BenchRow[]> {
  const schema = `tv_bench_${randomBytes(6).toString('hex')}`
  const storePool = new pg.Pool({ connectionString: url, max: connections })
  const rawPool = new pg.Pool({ connectionString: url, max: connections })
  let store: Store | undefined
  try {
    store = await postgresStore({ pool: storePool, schema })
    const s = store
    const raw = rawSql(rawPool, schema)
    // With 10 connections the calls spread over 10 tenants: a tenant's writes run one at a time.
    const tenants = Array.from({ length: connections }, (_, i) => `bench-${i}`)
    let n = 0
    const next = () => token(tenants[n % tenants.length]!, `t${n++}`)
    const create = () => {
      const t = next()
      return s.write({
        checks: [{ check: 'token.absent', tenant_id: t.tenant_id, id: t.id }],
        ops: [{ op: 'token.put', token: t }],
      })
    }
    const ms = opts.quick ? 300 : 4000
    const block = 10 * connections
    const writes = await measure(create, () => raw.create(next()), connections, block, ms)
    let r = 0
    const stored = Math.min(n, 1000)
    const pick = () => {
      const i = r++ % stored
      return [tenants[i % tenants.length]!, `t${i}`] as const
    }
    const reads = await measure(
      () => s.getToken(...pick()),
      () => raw.get(...pick()),
      connections,
      block * 4,
      ms / 2,
    )
    const note = `${connections} connection${connections > 1 ? 's' : ''}, ${tenants.length} tenant${connections > 1 ? 's' : ''}`
    const row = (operation: string, baseline: string, m: { op: number; baseline: number }): BenchRow => ({
      group: 'postgres store',
      operation: `${operation}, ${connections} connection${connections > 1 ? 's' : ''}`,
      opsPerSec: m.op,
      baseline,
      baselineOpsPerSec: m.baseline,
      ratio: m.baseline / m.op,
      goal: GOAL,
      note,
    })
    return [
      row(
        'token create (write: token.absent + token.put)',
        'same SQL through pg (locks, check, upsert, commit)',
        writes,
      ),
      row('getToken', 'same SELECT through pg, JSON.parse', reads),
    ]
  } finally {
    await store?.close()
    await storePool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {})
    await storePool.end()
    await rawPool.end()
  }
}

/** The rows of this benchmark; none (with a note on stderr) when `TOKENVAULT_PG_URL` is not set. */
export async function run(opts: BenchOptions): Promise<BenchRow[]> {
  const url = process.env['TOKENVAULT_PG_URL']
  if (!url) {
    console.error(
      'postgres bench: TOKENVAULT_PG_URL is not set; start a server: eval "$(scripts/pg-test-server.sh start)"',
    )
    return []
  }
  return [
    ...(await rowsFor(url, 1, opts)),
    ...(await rowsFor(url, 10, opts)),
    ...(await serviceRows(url, opts)),
    ...(await processRows(url, opts)),
  ]
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  printRows(await run({ quick: process.env['BENCH_QUICK'] === '1' }))
}

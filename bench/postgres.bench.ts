/**
 * The Postgres store against PostgreSQL through raw `pg`, on pools of the same size, in one run:
 * token create (a `write` of one `token.put` under `token.absent`, what the service sends for a
 * token whose id it made) against a plain INSERT of the same row, and `getToken` against the same point
 * SELECT, with 1 and 16 connections, and the store's create against the same statement through
 * raw `pg` (the driver's floor for that query shape: what the adapter adds on the client);
 * then the database's own CPU per create against a plain INSERT's (`bench/postgres-server.ts`) and
 * the service rows (`bench/postgres-service.ts`).
 * Needs `TOKENVAULT_PG_URL` (see scripts/pg-test-server.sh); without it, returns no rows.
 *   npx tsx bench/postgres.bench.ts     (BENCH_QUICK=1 for a smoke run; BENCH_PG_PROCESSES=1 adds
 *   two CLI server processes against one)
 */
import { randomBytes } from 'node:crypto'
import { pathToFileURL } from 'node:url'
import pg from 'pg'
import { postgresStore } from '../adapters/postgres/index.js'
import { statements, tables } from '../adapters/postgres/statements.js'
import type { StoredToken } from '../src/kernel/types.js'
import type { Store } from '../src/store/contract.js'
import { type BenchOptions, type BenchRow, inFlight } from './harness.js'
import { serverRows } from './postgres-server.js'
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
  fingerprint: 'same-card',
  created_by: 'bench-app',
  created_at: '2030-01-01T00:00:00.000Z',
})

/** The floor: one plain INSERT of the same row into a table like the store's, and the same point read. */
function rawSql(pool: pg.Pool, schema: string) {
  const s = `"${schema}"`
  const insert = `INSERT INTO ${s}.raw_tokens (tenant_id, id, type, expires_at, doc) VALUES ($1, $2, $3, $4, $5::jsonb)`
  const select = `SELECT doc::text AS doc FROM ${s}.raw_tokens WHERE tenant_id = $1 AND id = $2`
  return {
    setup: () =>
      pool.query(`CREATE TABLE ${s}.raw_tokens (tenant_id text COLLATE "C", id text COLLATE "C",
        type text COLLATE "C", expires_at text COLLATE "C", doc jsonb NOT NULL, PRIMARY KEY (tenant_id, id))`),
    async create(t: StoredToken) {
      const values = [t.tenant_id, t.id, t.type, t.expires_at ?? null, JSON.stringify(t)]
      await pool.query({ name: 'raw_insert', text: insert, values })
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
    await raw.setup()
    // One tenant; every token carries one fingerprint (puts of equal values must not wait on each other).
    const tenants = ['bench'] as const
    let n = 0
    let m = 0
    const next = () => token(tenants[0]!, `t${n++}`)
    const nextRaw = () => token(tenants[0]!, `r${m++}`)
    const create = () => {
      const t = next()
      return s.write({
        checks: [{ check: 'token.absent', tenant_id: t.tenant_id, id: t.id }],
        ops: [{ op: 'token.put', token: t }],
      })
    }
    const ms = opts.quick ? 300 : 4000
    const block = 10 * connections
    const writes = await measure(create, () => raw.create(nextRaw()), connections, block, ms)
    // The driver's floor for the store's own query shape: the same statement through pg (`createAny`:
    // this token has metadata, so its terms are the rows of `token_terms_of`), its arguments built
    // inline (its fingerprint's lock key: a fixed number), without the adapter.
    const { createAny } = statements(tables(schema))
    let w = 0
    const rawWrite = () => {
      const t = token(tenants[0]!, `w${w++}`)
      const values = [t.tenant_id, t.id, t.type, null, JSON.stringify(t), null, ['9000000000000000000']]
      return rawPool.query({ name: 'raw_write', text: createAny, values })
    }
    const shape = await measure(create, rawWrite, connections, block, ms / 2)
    let r = 0
    const stored = Math.min(n, m, 1000)
    const pick = (prefix: string) => [tenants[0]!, `${prefix}${r++ % stored}`] as const
    const reads = await measure(
      () => s.getToken(...pick('t')),
      () => raw.get(...pick('r')),
      connections,
      block * 4,
      ms / 2,
    )
    const note = 'one tenant, one fingerprint'
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
        'token create (write: token.absent, token.put)',
        'a plain INSERT of the same row through pg',
        writes,
      ),
      row(
        'token create, the same write',
        'the same statement through pg, its arguments built inline (no adapter)',
        shape,
      ),
      row('getToken', 'the same point SELECT through pg, JSON.parse', reads),
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
    ...(await rowsFor(url, 16, opts)),
    ...(await serverRows(url, opts)),
    ...(await serviceRows(url, opts)),
    ...(process.env['BENCH_PG_PROCESSES'] === '1' ? await processRows(url, opts) : []),
  ]
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  printRows(await run({ quick: process.env['BENCH_QUICK'] === '1' }))
}

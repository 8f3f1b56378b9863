/**
 * The database's own processor time per token create: the store's write for a create of a token
 * whose id the service made (one statement: its fingerprint's lock, shared, the token row, its term
 * and its count; its guard `token.absent` is the primary key) against a plain INSERT of the same
 * row into a table with only a primary key, each call its own transaction on one connection, in
 * alternating rounds. The time is
 * the server process's own, read from `/proc/self/schedstat` with `pg_read_file` (a superuser on
 * Linux, as `scripts/pg-test-server.sh` gives; otherwise no rows), so it leaves out the network,
 * the commit's flush (`synchronous_commit` off here) and the client. Run through
 * `bench/postgres.bench.ts`.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { postgresStore } from '../adapters/postgres/index.js'
import { LockKeys } from '../adapters/postgres/locking.js'
import { statements, tables } from '../adapters/postgres/statements.js'
import { plainCreateQuery } from '../adapters/postgres/store.js'
import type { StoredToken } from '../src/kernel/types.js'
import type { BenchOptions, BenchRow } from './harness.js'

const token = (id: string): StoredToken => ({
  id,
  tenant_id: 'bench',
  type: 'card',
  data: { $sealed: randomBytes(90).toString('base64') },
  containers: ['/general/high/'],
  metadata: {},
  fingerprint: 'same-card',
  created_by: 'bench-app',
  created_at: '2030-01-01T00:00:00.000Z',
})

/** Rows comparing the server's CPU per create with a plain INSERT's; none where it can't be read. */
export async function serverRows(url: string, opts: BenchOptions): Promise<BenchRow[]> {
  const schema = `tv_bench_${randomBytes(6).toString('hex')}`
  const s = `"${schema}"`
  const pool = new pg.Pool({ connectionString: url, max: 1 })
  const store = await postgresStore({ pool, schema })
  const client = await pool.connect()
  try {
    const cpu = async () => {
      const { rows } = await client.query<{ ns: string }>(
        `SELECT split_part(pg_read_file('/proc/self/schedstat'), ' ', 1) AS ns`,
      )
      return Number(rows[0]!.ns)
    }
    try {
      await cpu()
    } catch (error) {
      console.error(`postgres server bench: no rows (${(error as Error).message})`)
      return []
    }
    await client.query('SET synchronous_commit = off')
    await client.query(`CREATE TABLE ${s}.raw_tokens (tenant_id text COLLATE "C", id text COLLATE "C",
      type text COLLATE "C", expires_at text COLLATE "C", doc jsonb NOT NULL, PRIMARY KEY (tenant_id, id))`)
    const insert = `INSERT INTO ${s}.raw_tokens (tenant_id, id, type, expires_at, doc) VALUES ($1, $2, $3, $4, $5::jsonb)`
    let n = 0
    /** The statement the store sends for a create in `into`, its arguments built as the store builds them. */
    const creates = (into: string) => {
      const locks = new LockKeys(into)
      const st = statements(tables(into))
      return () => {
        const query = plainCreateQuery(st, locks, [{ token: token(`t${n++}`), entries: [] }])
        return client.query({ name: `${query.name} ${into}`, text: query.text, values: query.values ?? [] })
      }
    }
    const create = creates(schema)
    const plain = () => {
      const t = token(`r${n++}`)
      return client.query({
        name: 'insert',
        text: insert,
        values: [t.tenant_id, t.id, t.type, null, JSON.stringify(t)],
      })
    }
    const block = opts.quick ? 100 : 300
    const rounds = opts.quick ? 2 : 8
    /** µs of the server's CPU per call over one block (the two reads of the clock included). */
    const round = async (call: () => Promise<unknown>) => {
      const start = await cpu()
      for (let i = 0; i < block; i++) await call()
      return ((await cpu()) - start) / 1000 / block
    }
    await round(create)
    await round(plain)
    // Each create round follows a round of plain INSERTs: a round that follows its own kind finds
    // its plans and pages warmer.
    const ours: number[] = []
    const floors: number[] = []
    for (let i = 0; i < rounds * 2; i++) {
      floors.push(await round(plain))
      ours.push(await round(create))
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
    const [now, floor] = [median(ours), median(floors)]
    return [
      {
        group: 'postgres server',
        operation:
          "token create, the database's CPU per call (the store's one statement, its own transaction)",
        opsPerSec: 1e6 / now,
        baseline: 'a plain INSERT of the same row, a primary key only, its own transaction',
        baselineOpsPerSec: 1e6 / floor,
        ratio: now / floor,
        goal: '—',
        note: `${now.toFixed(0)} µs vs ${floor.toFixed(0)} µs of the server process's CPU per call (median of ${rounds * 2} rounds of ${block}); ops/s = calls per CPU-second`,
      },
    ]
  } finally {
    client.release()
    await store.close()
    await pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`).catch(() => {})
    await pool.end()
  }
}

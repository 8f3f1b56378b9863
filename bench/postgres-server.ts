/**
 * The database's own processor time per token create: the store's write for a create (one
 * `tv_write` call: its locks, the guards `token.absent` and `token.unlocked`, the token row and what
 * its trigger keeps — terms and count) against a plain INSERT of the same row into a table with only
 * a primary key, each call its own transaction on one connection, in alternating rounds. The time is
 * the server process's own, read from `/proc/self/schedstat` with `pg_read_file` (a superuser on
 * Linux, as `scripts/pg-test-server.sh` gives; otherwise no rows), so it leaves out the network,
 * the commit's flush (`synchronous_commit` off here) and the client. Also the same create against
 * a schema as step 2 left it (its two triggers, type and fingerprint term rows, the put an upsert):
 * what step 3 saves. Run through `bench/postgres.bench.ts`.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { postgresStore } from '../adapters/postgres/index.js'
import { LockKeys, recordNames } from '../adapters/postgres/locking.js'
import { opArguments } from '../adapters/postgres/ops.js'
import { tablesSql } from '../adapters/postgres/schema.js'
import type { Check, Op, StoredToken } from '../src/kernel/types.js'
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
  const before = `${schema}_step2`
  const pool = new pg.Pool({ connectionString: url, max: 1 })
  const store = await postgresStore({ pool, schema })
  await (await postgresStore({ pool, schema: before })).close()
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
    await client.query(step2Sql(`"${before}"`))
    await client.query('SET synchronous_commit = off')
    await client.query(`CREATE TABLE ${s}.raw_tokens (tenant_id text COLLATE "C", id text COLLATE "C",
      type text COLLATE "C", expires_at text COLLATE "C", doc jsonb NOT NULL, PRIMARY KEY (tenant_id, id))`)
    const insert = `INSERT INTO ${s}.raw_tokens (tenant_id, id, type, expires_at, doc) VALUES ($1, $2, $3, $4, $5::jsonb)`
    let n = 0
    /** The call the store makes for a create in `into`, its arguments built as the store builds them. */
    const creates = (into: string, now: boolean) => {
      const locks = new LockKeys(into)
      const write = `SELECT "${into}".tv_write($1::jsonb, $2::jsonb, $3::bigint[], $4::boolean[]) AS failed`
      return () => {
        const t = token(`t${n++}`)
        const checks: Check[] = [
          { check: 'token.absent', tenant_id: t.tenant_id, id: t.id },
          { check: 'token.unlocked', tenant_id: t.tenant_id, id: t.id, now: t.created_at },
        ]
        const ops: Op[] = [{ op: 'token.put', token: t }]
        const { keys, shared } = locks.order(recordNames(checks, ops))
        const args = now ? opArguments(checks, ops) : ops
        const values = [JSON.stringify(checks), JSON.stringify(args), keys, shared]
        return client.query({ name: `write ${into}`, text: write, values })
      }
    }
    const create = creates(schema, true)
    const create2 = creates(before, false)
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
    await round(create2)
    await round(plain)
    // Each create round follows a round of plain INSERTs, the two creates in turns first: a round
    // that follows its own kind finds its plans and pages warmer.
    const ours: number[] = []
    const step2: number[] = []
    const floors: number[] = []
    for (let i = 0; i < rounds; i++) {
      for (const [call, into] of i % 2
        ? [[create2, step2] as const, [create, ours] as const]
        : [[create, ours] as const, [create2, step2] as const]) {
        floors.push(await round(plain))
        into.push(await round(call))
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
    const [now, then, floor] = [median(ours), median(step2), median(floors)]
    return [
      {
        group: 'postgres server',
        operation: "token create, the database's CPU per call (one tv_write call, its own transaction)",
        opsPerSec: 1e6 / now,
        baseline: 'a plain INSERT of the same row, a primary key only, its own transaction',
        baselineOpsPerSec: 1e6 / floor,
        ratio: now / floor,
        goal: '—',
        note: `${now.toFixed(0)} µs vs ${floor.toFixed(0)} µs of the server process's CPU per call (median of ${rounds * 2} rounds of ${block}); ops/s = calls per CPU-second`,
      },
      {
        group: 'postgres server',
        operation: "token create, the database's CPU per call, schema step 3",
        opsPerSec: 1e6 / now,
        baseline:
          'the same create on a schema as step 2 left it (two triggers, type and fingerprint term rows, an upsert)',
        baselineOpsPerSec: 1e6 / then,
        ratio: now / then,
        goal: '—',
        note: `${now.toFixed(0)} µs vs ${then.toFixed(0)} µs (median of ${rounds} rounds each)`,
      },
    ]
  } finally {
    client.release()
    await store.close()
    await pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`).catch(() => {})
    await pool.query(`DROP SCHEMA IF EXISTS "${before}" CASCADE`).catch(() => {})
    await pool.end()
  }
}

/**
 * Takes a schema at step 3 back to what a create did at step 2 (`s` quoted): the two triggers and
 * the `token_terms_of` of step 1 (type and fingerprint term rows), the fingerprint index without
 * `id`, no type index. The step-2 `tv_write` differed only in taking `jsonb[]`, which the server
 * parses alike.
 */
function step2Sql(s: string): string {
  const all = tablesSql(s)
  const between = (from: string, to: string) => all.slice(all.indexOf(from), all.indexOf(to))
  return `DROP INDEX ${s}.tokens_by_type;
    DROP INDEX ${s}.tokens_by_fingerprint;
    CREATE INDEX tokens_by_fingerprint ON ${s}.tokens (tenant_id, ((doc ->> 'fingerprint') COLLATE "C"));
    DROP TRIGGER token_sync ON ${s}.tokens;
    DROP FUNCTION ${s}.token_sync();
    ${between(`CREATE FUNCTION ${s}.token_terms_of(`, `CREATE FUNCTION ${s}.token_terms_sync()`).replace('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION')}
    ${between(`CREATE FUNCTION ${s}.token_terms_sync()`, `CREATE TABLE ${s}.token_counts`)}
    ${between(`CREATE FUNCTION ${s}.token_counts_sync()`, `CREATE TRIGGER token_counts_sync`)}
    CREATE TRIGGER token_counts_sync AFTER INSERT OR DELETE ON ${s}.tokens
      FOR EACH ROW EXECUTE FUNCTION ${s}.token_counts_sync();`
}

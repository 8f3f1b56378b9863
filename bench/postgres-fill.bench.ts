/**
 * What upgrading a PostgreSQL schema with tokens in it costs: steps 19 and 20 (each token row's
 * head and stored bytes in columns of their own) over a table of `FILL_BENCH_TOKENS` tokens of about
 * `FILL_BENCH_BYTES` bytes of sealed data each, then the store's open, whose fill of those rows runs
 * in the background in bounded steps while another tenant reads its token one read after another:
 * that read's p50 and p99 during the fill and after it, same run. The rows are made in SQL
 * (documents of a token's shape, data as a `$sealed` string of hex, which PostgreSQL does not
 * compress much), and the two steps undone before `migrate` runs them.
 *
 * `TOKENVAULT_PG_URL=postgres://… npx tsx bench/postgres-fill.bench.ts` (defaults: 200 000 tokens
 * of 500 bytes; `FILL_BENCH_TOKENS=447 FILL_BENCH_BYTES=1200000` for large ones). A schema of its
 * own, dropped at the end.
 */
import pg from 'pg'
import { postgresStore } from '../adapters/postgres/index.js'
import { migrate } from '../adapters/postgres/migrations.js'

const url = process.env['TOKENVAULT_PG_URL']
if (!url) throw new Error('set TOKENVAULT_PG_URL (e.g. eval "$(scripts/pg-test-server.sh start)")')
const TOKENS = Number(process.env['FILL_BENCH_TOKENS'] ?? 200_000)
const BYTES = Number(process.env['FILL_BENCH_BYTES'] ?? 500)
const pool = new pg.Pool({ connectionString: url, max: 10 })
const schema = `fill_bench_${process.pid}`
const s = `"${schema}"`

await migrate(pool, schema)
// Rows as a store at step 18 kept them: made with the trigger, then the two steps undone.
await pool.query(`INSERT INTO ${s}.tokens (tenant_id, id, type, doc)
  SELECT 't', lpad(g::text, 10, '0'), 'token', jsonb_build_object('id', lpad(g::text, 10, '0'),
    'tenant_id', 't', 'type', 'token', 'metadata', '{}'::jsonb, 'created_at', '2026-12-04T00:00:00.000Z',
    'data', jsonb_build_object('$sealed',
      (SELECT string_agg(md5(g::text || k::text), '') FROM generate_series(1, ${Math.ceil(BYTES / 32)}) k)))
  FROM generate_series(1, ${TOKENS}) g`)
await pool.query(`INSERT INTO ${s}.tokens (tenant_id, id, type, doc) VALUES ('b', 'b-token', 'token',
  '{"id": "b-token", "tenant_id": "b", "type": "token", "data": "x", "metadata": {}}')`)
await pool.query(`DROP TRIGGER tv_token_head ON ${s}.tokens;
  ALTER TABLE ${s}.tokens DROP COLUMN head, DROP COLUMN stored_bytes;
  DROP TABLE ${s}.tokenvault_fills;
  DELETE FROM ${s}.tokenvault_migrations WHERE version >= 19`)
await pool.query(`VACUUM ${s}.tokens`)
const { rows } = await pool.query(
  `SELECT count(*)::int AS n, pg_size_pretty(pg_total_relation_size('${s}.tokens')) AS size FROM ${s}.tokens`,
)
console.log(`${rows[0].n} tokens, ${rows[0].size} with their out-of-line documents and indexes`)

let start = performance.now()
await migrate(pool, schema)
console.log(`steps 19 and 20: ${(performance.now() - start).toFixed(0)} ms`)

// The store's open starts the fill in the background; another tenant reads meanwhile, then alone.
const store = await postgresStore({ pool, schema })
const filled = async () => (await pool.query(`SELECT 1 FROM ${s}.tokenvault_fills`)).rowCount === 1
const p = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!.toFixed(2)
/** B's sequential reads of its token until `done()`, each timed (ms). */
async function reads(done: () => Promise<boolean>) {
  const ms: number[] = []
  for (let n = 0; !(n % 50 === 0 && (await done())); n++) {
    const t = performance.now()
    await store.getToken('b', 'b-token')
    ms.push(performance.now() - t)
  }
  return ms
}
start = performance.now()
const during = await reads(filled)
const fillMs = performance.now() - start
const aloneUntil = performance.now() + Math.max(2000, Math.min(fillMs, 10_000))
const alone = await reads(async () => performance.now() > aloneUntil)
console.log(`fill, in the background of the store's open: ${fillMs.toFixed(0)} ms`)
console.log(
  `another tenant's token read: p50 ${p(during, 0.5)} ms, p99 ${p(during, 0.99)} ms during the fill ` +
    `(${during.length} reads); p50 ${p(alone, 0.5)} ms, p99 ${p(alone, 0.99)} ms after it (${alone.length}): ` +
    `p99 ${(Number(p(during, 0.99)) / Number(p(alone, 0.99))).toFixed(2)}×`,
)
await store.close()
await pool.query(`DROP SCHEMA ${s} CASCADE`)
await pool.end()

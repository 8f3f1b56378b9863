/**
 * What upgrading a PostgreSQL schema with tokens in it costs: steps 19 and 20 (each token row's
 * head and stored bytes in columns of their own) over a table of `FILL_BENCH_TOKENS` tokens of about
 * `FILL_BENCH_BYTES` bytes of sealed data each, then the fill of those rows in bounded steps, each
 * timed. The rows are made in SQL (documents of a token's shape, data as a `$sealed` string of hex,
 * which PostgreSQL does not compress much), the two steps undone, then `migrate` and
 * `fillTokenHeads` run as a store's open would.
 *
 * `TOKENVAULT_PG_URL=postgres://… npx tsx bench/postgres-fill.bench.ts` (defaults: 200 000 tokens
 * of 500 bytes; `FILL_BENCH_TOKENS=447 FILL_BENCH_BYTES=1200000` for large ones). A schema of its
 * own, dropped at the end.
 */
import pg from 'pg'
import { migrate } from '../adapters/postgres/migrations.js'
import { fillTokenHeads } from '../adapters/postgres/token-heads.js'

const url = process.env['TOKENVAULT_PG_URL']
if (!url) throw new Error('set TOKENVAULT_PG_URL (e.g. eval "$(scripts/pg-test-server.sh start)")')
const TOKENS = Number(process.env['FILL_BENCH_TOKENS'] ?? 200_000)
const BYTES = Number(process.env['FILL_BENCH_BYTES'] ?? 500)
const pool = new pg.Pool({ connectionString: url, max: 2 })
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

const stepMs: number[] = []
start = performance.now()
let last = start
const outcome = await fillTokenHeads(
  s,
  async (fn) => {
    const result = await fn()
    const now = performance.now()
    stepMs.push(now - last)
    last = now
    return result
  },
  pool,
)
const total = performance.now() - start
stepMs.sort((a, b) => a - b)
const at = (q: number) => stepMs[Math.min(stepMs.length - 1, Math.floor(q * stepMs.length))]!.toFixed(1)
console.log(
  `fill: ${total.toFixed(0)} ms, ${outcome.steps} steps of at most ${outcome.largest} rows, ` +
    `${outcome.filled} rows filled; a step p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms`,
)
await pool.query(`DROP SCHEMA ${s} CASCADE`)
await pool.end()

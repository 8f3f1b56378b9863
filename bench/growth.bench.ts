/**
 * What each token call costs as the tenant grows: the same calls on a tenant of 1 000 tokens and
 * on one of N (1 000 000 by default; `BENCH_TOKENS=n`), each on its own memory store in this
 * process, every token created through the service (sealed, with metadata, a fingerprint and a
 * search index). Reports each call's median (and p90) latency at both sizes and the growth ratio
 * (cost at N over cost at 1 000), beside a floor measured in the same run: what handing back one
 * token costs without us (one AES-256-GCM open and one JSON parse of its record).
 *
 *   npm run bench:growth                       # N = 1 000 000 (a few minutes: the fill dominates)
 *   BENCH_TOKENS=100000 npm run bench:growth
 *
 * `BENCH_PG_URL=postgres://… BENCH_TOKENS=100000 npm run bench:growth` runs it on PostgreSQL,
 * `BENCH_STORE=file` on the file store (LMDB, durable, in a temporary directory); `BENCH_STAGING=0`
 * leaves out the transactions, `BENCH_CALLS=0` the call table (only the staged creates: with
 * `BENCH_TOKENS=1000` a short run). Not part of `npm test` or `npm run bench`. Goals: every ratio <= 1.5x; search by one exact
 * term at 1M <= 2 ms; a list page of 10 <= 1 ms; the 2 000th staged create within 1.5x of the first.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileStore } from '../adapters/file/index.js'
import { memoryStore } from '../adapters/memory/index.js'
import { postgresStore } from '../adapters/postgres/index.js'
import { createService, manualClock } from '../entry/index.js'
import type { Store } from '../src/store/contract.js'

const N = Number(process.env.BENCH_TOKENS ?? 1_000_000)
const SMALL = 1_000
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 60)
const MASTER_KEY = new Uint8Array(32).fill(3)
/** `BENCH_PG_URL=postgres://…`: the PostgreSQL store instead (each size in a schema of its own, dropped after). */
const PG_URL = process.env.BENCH_PG_URL
/** `BENCH_STAGING=0` leaves out the 2 000-write transactions. */
const STAGING = process.env.BENCH_STAGING !== '0'
/** `BENCH_CALLS=0` leaves out the call table. */
const CALLS = process.env.BENCH_CALLS !== '0'
/** `BENCH_STORE=file`: the file store (LMDB, durable commits) in a temporary directory per size. */
const FILE = process.env.BENCH_STORE === 'file'
const schemas: string[] = []
const dirs: string[] = []

async function openStore(count: number): Promise<Store> {
  if (FILE) {
    const dir = await mkdtemp(join(tmpdir(), `tokenvault-growth-${count}-`))
    dirs.push(dir)
    return fileStore({ path: join(dir, 'store') })
  }
  if (!PG_URL) return memoryStore()
  const schema = `tv_growth_${count}_${process.pid}`
  schemas.push(schema)
  return postgresStore({ connectionString: PG_URL, schema })
}

/** A service on a fresh memory store holding one tenant with `count` tokens; its client. */
async function vault(count: number) {
  const service = createService({
    store: await openStore(count),
    clock: manualClock('2030-01-01T00:00:00.000Z'),
    masterKey: MASTER_KEY,
    runner: null,
  })
  const tenant = await service.admin.createTenant({ name: `growth-${count}` })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'bench',
    type: 'private',
    permissions: ['token:create', 'token:read', 'token:search', 'token:update'],
  })
  const client = service.connect(key)
  const started = performance.now()
  for (let i = 0; i < count; i += 100) {
    await client.tokens.tokenize(
      Array.from({ length: Math.min(100, count - i) }, (_, j) => ({
        type: 'token',
        data: { number: `n-${i + j}` },
        metadata: { order: `ord-${i + j}`, shard: String((i + j) % 10) },
        search_indexes: ['{{ data.number }}'],
      })),
    )
    if (i % 100_000 === 0 && i > 0) console.error(`  filled ${i} of ${count}`)
  }
  console.error(`filled ${count} tokens in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  return { service, key, client, count }
}

type Vault = Awaited<ReturnType<typeof vault>>

/** Median and p90 of `ROUNDS` runs of `call(round)`, in ms. */
async function time(call: (round: number) => Promise<unknown>, rounds = ROUNDS) {
  const ms: number[] = []
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now()
    await call(r)
    ms.push(performance.now() - t0)
  }
  ms.sort((a, b) => a - b)
  return { p50: ms[Math.floor(ms.length / 2)]!, p90: ms[Math.floor(ms.length * 0.9)]! }
}

/** A cursor of the plain v2 list from about the middle of the tenant (paging there by 100). */
async function middleCursor(v: Vault): Promise<string> {
  let start: string | undefined
  for (let seen = 0; seen < v.count / 2; seen += 100) {
    const page = await v.client.tokens.listV2({ size: 100, ...(start ? { start } : {}) })
    start = page.pagination.next
  }
  return start!
}

/** The calls measured, each at round `r` asking for a different token. */
async function calls(v: Vault) {
  const pick = (r: number) => Math.floor(((r * 7919) % 1000) * (v.count / 1000))
  const middle = await middleCursor(v)
  return {
    'POST /v2/tokens/search metadata.order:ord-k (1 match)': (r: number) =>
      v.client.tokens.searchV2({ query: `metadata.order:ord-${pick(r)}` }),
    'POST /v2/tokens/search data.number:n-k (search index, 1 match)': (r: number) =>
      v.client.tokens.searchV2({ query: `data.number:n-${pick(r)}` }),
    'POST /tokens/search (v1) metadata.order:ord-k': (r: number) =>
      v.client.tokens.search({ query: `metadata.order:ord-${pick(r)}` }),
    'GET /v2/tokens?size=10 (first page)': () => v.client.tokens.listV2({ size: 10 }),
    'GET /v2/tokens?size=10&start=… (a page from the middle)': () =>
      v.client.tokens.listV2({ size: 10, start: middle }),
    'GET /v2/tokens?size=10&metadata={"shard":"3"}': () =>
      v.client.tokens.listV2({ size: 10, metadata: JSON.stringify({ shard: '3' }) }),
    'GET /tokens?size=10 (v1, first page)': () => v.client.tokens.list({ size: 10 }),
  }
}

/** The floor: open one sealed token record (AES-256-GCM) and parse its JSON, as a store hands one back. */
function floor(): { p50: number } {
  const key = randomBytes(32)
  const iv = randomBytes(12)
  const record = JSON.stringify({ id: 'x', data: { number: 'n-1' }, metadata: { order: 'ord-1' } })
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  const sealed = Buffer.concat([cipher.update(record), cipher.final()])
  const tag = cipher.getAuthTag()
  const ms: number[] = []
  for (let r = 0; r < 2000; r++) {
    const t0 = performance.now()
    const d = createDecipheriv('aes-256-gcm', key, iv)
    d.setAuthTag(tag)
    JSON.parse(Buffer.concat([d.update(sealed), d.final()]).toString('utf8'))
    ms.push(performance.now() - t0)
  }
  ms.sort((a, b) => a - b)
  return { p50: ms[1000]! }
}

/** Median ms of staged creates 1–100 and 901–1 000 (the bound) in one transaction (each holding the ones before). */
async function staging(v: Vault) {
  const tx = await v.client.transactions.create()
  const inTx = v.service.connect(v.key, { transactionId: tx.id })
  const first: number[] = []
  const last: number[] = []
  for (let n = 0; n < 1000; n++) {
    const t0 = performance.now()
    await inTx.tokens.create({ type: 'token', data: `staged-${n}` })
    const ms = performance.now() - t0
    if (n < 100) first.push(ms)
    else if (n >= 900) last.push(ms)
  }
  await v.client.transactions.rollback(tx.id)
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[xs.length >> 1]!
  return { first: median(first), last: median(last) }
}

const fmt = (ms: number) => (ms < 1 ? `${(ms * 1000).toFixed(0)} µs` : `${ms.toFixed(2)} ms`)

const small = await vault(SMALL)
const large = await vault(N)
type Calls = Record<string, (round: number) => Promise<unknown>>
const smallCalls: Calls = CALLS ? await calls(small) : {}
const largeCalls: Calls = CALLS ? await calls(large) : {}
const base = floor()
console.log(`\nfloor (one sealed record opened and parsed): ${fmt(base.p50)}\n`)
console.log(
  `| Call | ${SMALL.toLocaleString('en')} tokens p50 (p90) | ${N.toLocaleString('en')} tokens p50 (p90) | growth |`,
)
console.log('|---|---|---|---|')
for (const name of Object.keys(smallCalls)) {
  // Interleaved, so that machine noise hits both sizes alike.
  const a = await time(smallCalls[name]!)
  const b = await time(largeCalls[name]!)
  const a2 = await time(smallCalls[name]!)
  const b2 = await time(largeCalls[name]!)
  const s = Math.min(a.p50, a2.p50)
  const l = Math.min(b.p50, b2.p50)
  console.log(
    `| ${name} | ${fmt(s)} (${fmt(Math.min(a.p90, a2.p90))}) | ${fmt(l)} (${fmt(Math.min(b.p90, b2.p90))}) | ${(l / s).toFixed(2)}× |`,
  )
}
if (STAGING) {
  const stagedSmall = await staging(small)
  const stagedLarge = await staging(large)
  console.log(
    `| one transaction: the 901st–1 000th staged create vs the 1st–100th (median) | ${fmt(stagedSmall.first)} → ${fmt(stagedSmall.last)} (${(stagedSmall.last / stagedSmall.first).toFixed(2)}×) | ${fmt(stagedLarge.first)} → ${fmt(stagedLarge.last)} (${(stagedLarge.last / stagedLarge.first).toFixed(2)}×) | ${(stagedLarge.first / stagedSmall.first).toFixed(2)}× (first 100) |`,
  )
}
await small.service.close()
await large.service.close()
if (PG_URL) {
  const pg = await import('pg')
  const pool = new pg.default.Pool({ connectionString: PG_URL })
  for (const schema of schemas) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  await pool.end()
}
for (const dir of dirs) await rm(dir, { recursive: true, force: true })

/**
 * The audit log's cost: token create and get with the log on against the same calls with it off
 * (`auditLog: false`, the floor), in the same run, in process, at 1 and 64 calls in flight, on the
 * memory store, the file store (LMDB, synchronous commits) and PostgreSQL (when TOKENVAULT_PG_URL
 * is set: `eval "$(scripts/pg-test-server.sh start)"`). Both services are open at once and measured
 * in alternating rounds, so the machine's load (shared) hits both alike; each cell prints calls per
 * second (median of the rounds) and the ratio on/off with the range of the rounds' ratios.
 * The goal: >= 0.8 at 64 in flight.
 *
 * Run: `npm run bench:audit` (rounds of TOKENVAULT_BENCH_MS ms, default 300, 3 per cell: ~40 s).
 * One part of it: AUDIT_BENCH_STORES (e.g. `memory,file`), AUDIT_BENCH_OPS (`create`, `get`),
 * AUDIT_BENCH_IN_FLIGHT (e.g. `64`), each a comma-separated list; a cell left out prints `-`.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileStore } from '../adapters/file/index.js'
import { memoryStore } from '../adapters/memory/index.js'
import { postgresStore } from '../adapters/postgres/index.js'
import { type Client, createService, systemClock } from '../entry/index.js'
import type { Store } from '../src/store/contract.js'

const MS = Number(process.env['TOKENVAULT_BENCH_MS'] ?? 300)
const ROUNDS = Number(process.env['TOKENVAULT_BENCH_ROUNDS'] ?? 3)
const masterKey = randomBytes(32)
const only = (name: string) => process.env[name]?.split(',').map((x) => x.trim())
const STORES = only('AUDIT_BENCH_STORES')
const OPS = only('AUDIT_BENCH_OPS')
const IN_FLIGHT = only('AUDIT_BENCH_IN_FLIGHT')?.map(Number) ?? [1, 64]

type Kind = 'memory' | 'file' | 'postgres'

async function openStore(kind: Kind): Promise<{ store: Store; done(): Promise<void> }> {
  if (kind === 'memory') return { store: memoryStore(), done: async () => {} }
  if (kind === 'file') {
    const dir = mkdtempSync(join(tmpdir(), 'tv-audit-bench-'))
    return {
      store: await fileStore({ path: dir }),
      done: async () => rmSync(dir, { recursive: true, force: true }),
    }
  }
  const schema = `tv_bench_${randomBytes(4).toString('hex')}`
  return {
    store: await postgresStore({ connectionString: process.env['TOKENVAULT_PG_URL']!, schema }),
    done: async () => {},
  }
}

/** Calls per second of `call` kept `inFlight` at a time for MS milliseconds. */
async function rate(inFlight: number, call: () => Promise<unknown>): Promise<number> {
  let n = 0
  const start = performance.now()
  const end = start + MS
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < end) {
        await call()
        n++
      }
    }),
  )
  return n / ((performance.now() - start) / 1000)
}

/** A service on a fresh store of `kind`, with a key that creates and reads, and 64 tokens to read. */
async function open(kind: Kind, auditLog: boolean) {
  const { store, done } = await openStore(kind)
  const service = createService({ store, clock: systemClock, masterKey, runner: null, auditLog })
  const tenant = await service.admin.createTenant({ name: 'bench' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'bench',
    type: 'private',
    permissions: ['token:create', 'token:read'],
  })
  const client: Client = service.connect(key)
  const ids = (
    await Promise.all(
      Array.from({ length: 64 }, (_, i) => client.tokens.create({ type: 'token', data: `v${i}` })),
    )
  ).map((t) => t.id)
  let i = 0
  const calls = {
    create: () => client.tokens.create({ type: 'token', data: 'x' }),
    get: () => client.tokens.get(ids[i++ % ids.length]!),
  }
  return {
    calls,
    close: async () => {
      await service.close()
      await done()
    },
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** `op` with the log off and on, ROUNDS alternating rounds each (after a warm-up round of each). */
async function cell(
  off: Awaited<ReturnType<typeof open>>,
  on: typeof off,
  op: 'create' | 'get',
  inFlight: number,
) {
  await rate(inFlight, off.calls[op])
  await rate(inFlight, on.calls[op])
  const offs: number[] = []
  const ons: number[] = []
  for (let r = 0; r < ROUNDS; r++) {
    offs.push(await rate(inFlight, off.calls[op]))
    ons.push(await rate(inFlight, on.calls[op]))
  }
  const ratios = ons.map((x, r) => x / offs[r]!)
  const f = (x: number) => x.toFixed(2)
  return `${median(offs).toFixed(0)} | ${median(ons).toFixed(0)} | ${f(median(ratios))} (${f(Math.min(...ratios))}–${f(Math.max(...ratios))})`
}

const kinds = (
  ['memory', 'file', ...(process.env['TOKENVAULT_PG_URL'] ? (['postgres'] as const) : [])] as Kind[]
).filter((k) => !STORES || STORES.includes(k))
const wanted = (op: 'create' | 'get') => !OPS || OPS.includes(op)
console.log(
  '| store | in flight | create off/s | create on/s | ratio (range) | get off/s | get on/s | ratio (range) |',
)
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |')
for (const kind of kinds) {
  const off = await open(kind, false)
  const on = await open(kind, true)
  for (const inFlight of IN_FLIGHT) {
    const create = wanted('create') ? await cell(off, on, 'create', inFlight) : '- | - | -'
    const get = wanted('get') ? await cell(off, on, 'get', inFlight) : '- | - | -'
    console.log(`| ${kind} | ${inFlight} | ${create} | ${get} |`)
  }
  await off.close()
  await on.close()
}

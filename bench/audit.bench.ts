/**
 * The audit log's cost: token create and get with the log on against the same calls with it off
 * (`auditLog: false`, the floor), in the same run, in process, at 1 and 64 calls in flight, on the
 * memory store, the file store (LMDB, synchronous commits) and PostgreSQL (when TOKENVAULT_PG_URL
 * is set: `eval "$(scripts/pg-test-server.sh start)"`). Both services are open at once and measured
 * in alternating rounds, so the machine's load (shared) hits both alike; each cell prints calls per
 * second (median of the rounds) and the ratio on/off with the range of the rounds' ratios.
 * The goal: >= 0.8 at 64 in flight.
 *
 * Then the same cells over HTTP, as `tokenvault serve` answers the Basis Theory SDKs: both services
 * behind the HTTP adapter on node:http in one child process (each on a port of its own), loaded from
 * here by autocannon with 1 or 64 connections (`GET /tokens/{id}` over the 64 tokens, or
 * `POST /tokens`), alternating rounds of AUDIT_BENCH_HTTP_S seconds (default 1) after a warm-up;
 * each cell prints requests per second off and on, their ratio, and the server's CPU time per
 * request off and on (`process.cpuUsage` of the child).
 *
 * Run: `npm run bench:audit` (in process: rounds of TOKENVAULT_BENCH_MS ms, default 300, 3 per cell,
 * ~40 s; over HTTP ~100 s). One part of it: AUDIT_BENCH_VIA (`process`, `http`),
 * AUDIT_BENCH_STORES (e.g. `memory,file`), AUDIT_BENCH_OPS (`create`, `get`),
 * AUDIT_BENCH_IN_FLIGHT (e.g. `64`), each a comma-separated list; a cell left out prints `-`.
 */
import { fork } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { fileStore } from '../adapters/file/index.js'
import { createHttpHandler, toNodeListener } from '../adapters/http/index.js'
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
const VIA = only('AUDIT_BENCH_VIA') ?? ['process', 'http']
const HTTP_S = Number(process.env['AUDIT_BENCH_HTTP_S'] ?? 1)
/** The argument that makes this file the HTTP rows' server, in a child process. */
const SERVER = '--audit-bench-server'

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
    service,
    key,
    ids,
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

async function inProcess() {
  console.log('In process:')
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
}

/** What the HTTP rows' server tells this process once listening: per side, its port, key and tokens. */
interface Served {
  port: number
  key: string
  ids: string[]
}

/** The HTTP rows' server (a child process): both services of `kind` behind node:http. */
async function serve(kind: Kind) {
  const sides: Record<string, Served> = {}
  const closers: (() => Promise<void>)[] = []
  for (const side of ['off', 'on'] as const) {
    const opened = await open(kind, side === 'on')
    const server = createServer(toNodeListener(createHttpHandler(opened.service, { log: () => {} })))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    sides[side] = { port, key: opened.key, ids: opened.ids }
    closers.push(opened.close)
  }
  process.on('message', async (m) => {
    if (m === 'cpu') {
      const c = process.cpuUsage()
      process.send!({ cpu: c.user + c.system })
    } else if (m === 'close') {
      for (const close of closers) await close()
      process.exit(0)
    }
  })
  process.send!(sides)
}

/** Requests per second of autocannon at `connections` for `seconds`, and the server's CPU µs a request. */
async function load(
  server: ReturnType<typeof fork>,
  side: Served,
  op: 'create' | 'get',
  connections: number,
  seconds: number,
) {
  const cpu = () =>
    new Promise<number>((resolve) => {
      server.once('message', (m) => resolve((m as { cpu: number }).cpu))
      server.send('cpu')
    })
  const requests =
    op === 'get'
      ? side.ids.map((id) => ({ method: 'GET' as const, path: `/tokens/${id}` }))
      : [{ method: 'POST' as const, path: '/tokens', body: JSON.stringify({ type: 'token', data: 'x' }) }]
  const before = await cpu()
  const result = await autocannon({
    url: `http://127.0.0.1:${side.port}`,
    connections,
    duration: seconds,
    headers: { 'bt-api-key': side.key, 'content-type': 'application/json' },
    requests,
  })
  const used = (await cpu()) - before
  const failed = result.non2xx + result.errors + result.timeouts
  if (failed) throw new Error(`bench: ${failed} of ${result.requests.total} requests failed`)
  return { rate: result.requests.total / seconds, cpu: used / result.requests.total }
}

async function httpCell(
  server: ReturnType<typeof fork>,
  sides: Record<'off' | 'on', Served>,
  op: 'create' | 'get',
  connections: number,
) {
  await load(server, sides.off, op, connections, 1)
  await load(server, sides.on, op, connections, 1)
  const offs: Awaited<ReturnType<typeof load>>[] = []
  const ons: typeof offs = []
  for (let r = 0; r < ROUNDS; r++) {
    offs.push(await load(server, sides.off, op, connections, HTTP_S))
    ons.push(await load(server, sides.on, op, connections, HTTP_S))
  }
  const ratios = ons.map((x, r) => x.rate / offs[r]!.rate)
  const f = (x: number) => x.toFixed(2)
  const rates = `${median(offs.map((x) => x.rate)).toFixed(0)} | ${median(ons.map((x) => x.rate)).toFixed(0)}`
  const cpu = `${median(offs.map((x) => x.cpu)).toFixed(0)} / ${median(ons.map((x) => x.cpu)).toFixed(0)}`
  return `${rates} | ${f(median(ratios))} (${f(Math.min(...ratios))}–${f(Math.max(...ratios))}) | ${cpu}`
}

async function overHttp() {
  console.log(
    "\nOver HTTP (autocannon here, the server in a child process; CPU: the server's µs a request, off / on):",
  )
  console.log(
    '| store | connections | create off/s | create on/s | ratio (range) | CPU µs | get off/s | get on/s | ratio (range) | CPU µs |',
  )
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |')
  for (const kind of kinds) {
    const server = fork(new URL(import.meta.url).pathname, [SERVER, kind], { stdio: 'inherit' })
    const sides = await new Promise<Record<'off' | 'on', Served>>((resolve) =>
      server.once('message', (m) => resolve(m as Record<'off' | 'on', Served>)),
    )
    try {
      for (const connections of IN_FLIGHT) {
        const create = wanted('create')
          ? await httpCell(server, sides, 'create', connections)
          : '- | - | - | -'
        const get = wanted('get') ? await httpCell(server, sides, 'get', connections) : '- | - | - | -'
        console.log(`| ${kind} | ${connections} | ${create} | ${get} |`)
      }
    } finally {
      const exited = new Promise((resolve) => server.once('exit', resolve))
      server.send('close')
      await exited
    }
  }
}

if (process.argv[2] === SERVER) await serve(process.argv[3] as Kind)
else {
  if (VIA.includes('process')) await inProcess()
  if (VIA.includes('http')) await overHttp()
}

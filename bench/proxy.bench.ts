/**
 * The proxy against its floor, in the same run, on loopback: a POST of a ~1 KB JSON body with two
 * detokenization expressions through the vault's `/proxy` (HTTP, `BT-PROXY-URL`), against the same
 * request (its plaintext) sent straight to the same local destination (autocannon, 16 connections).
 * Goals (issue "the proxy"): throughput ≥ 0.5 of the direct path; p50 added ≤ 300 µs through the
 * in-process client (`client.proxy.invoke`, one call at a time, against raw node `fetch` to the
 * destination, one at a time).
 *
 * Two modes:
 * - **processes** (the default): the destination and the vault (the CLI server, `tokenvault serve`)
 *   each run in a process of their own, autocannon in this one (`bench/proxy-apart.ts`): what a
 *   deployment sees, as far as the machine's cores allow.
 * - **one-process** (`BENCH_PROXY_MODE=one-process`): autocannon, the vault (`createHttpHandler`)
 *   and the destination share this process's event loop, so the ratio is a share of one core's CPU.
 *
 * `BENCH_DEST_DELAY_MS=20` makes the destination answer after 20 ms, as a real processor does (the
 * sequential p50 is then skipped); `BENCH_CONNECTIONS` sets autocannon's connections (16).
 * Rounds alternate (direct, proxied, …) so a busy machine weighs on both alike; figures are the
 * medians. Under 60 s. Run: `npm run bench:proxy` (`BENCH_QUICK=1`: shorter rounds).
 */
import type { ChildProcess } from 'node:child_process'
import { createServer } from 'node:http'
import autocannon from 'autocannon'
import { createHttpHandler, toNodeListener } from '../adapters/http/index.js'
import { memoryStore } from '../adapters/memory/index.js'
import { createService, systemClock } from '../entry/index.js'
import {
  bodyOf,
  cpuOf,
  destinationServer,
  listen,
  median,
  prepareVault,
  startDestination,
  startVault,
} from './proxy-apart.js'

const QUICK = process.env['BENCH_QUICK'] === '1'
const ONE_PROCESS = process.env['BENCH_PROXY_MODE'] === 'one-process'
const DELAY_MS = Number(process.env['BENCH_DEST_DELAY_MS'] ?? 0)
const CONNECTIONS = Number(process.env['BENCH_CONNECTIONS'] ?? 16)
const SECONDS = QUICK ? 3 : 6
const ROUNDS = QUICK ? 2 : 3
const SEQUENTIAL = QUICK ? 500 : 1500

/** What the rounds drive: the destination's origin, the vault's URL and key, the two tokens. */
interface Parties {
  origin: string
  vaultUrl: string
  key: string
  card: string
  cvc: string
  /** Connections the destination accepted so far (kept alive: a few a round, not one a request). */
  accepted: () => Promise<number>
  /** Process ids whose CPU each round reports (this one's included). */
  pids: Record<string, number>
  close: () => Promise<void>
}

async function load(url: string, headers: Record<string, string>, body: string, seconds = SECONDS) {
  const result = await autocannon({
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
    connections: CONNECTIONS,
    duration: seconds,
  })
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0)
    throw new Error(`${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`)
  return { rate: result.requests.average, total: result.requests.total, p50: result.latency.p50 }
}

/** p50 of `n` calls of `call`, one at a time, in µs. */
async function p50(n: number, call: () => Promise<unknown>): Promise<number> {
  const times: number[] = []
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    await call()
    times.push((performance.now() - t) * 1000)
  }
  return median(times)
}

/** An in-process service reaching `origin`, an application's client and two tokens. */
async function inProcess(origin: string) {
  const service = createService({ store: memoryStore(), clock: systemClock, runner: null, egress: [origin] })
  const tenant = await service.admin.createTenant({ name: 'bench' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'b',
    type: 'private',
    permissions: ['token:create', 'token:use'],
  })
  const client = service.connect(key)
  const card = await client.tokens.create({ type: 'token', data: '4242424242424242' })
  const cvc = await client.tokens.create({ type: 'token', data: '123' })
  return { service, client, key, card: card.id, cvc: cvc.id }
}

type InProcess = Awaited<ReturnType<typeof inProcess>>

/** One process: the destination and the vault's HTTP handler on this event loop. */
async function oneProcess(): Promise<{ parties: Parties; local: InProcess }> {
  const counter = { accepted: 0 }
  const destination = destinationServer(DELAY_MS, counter)
  const origin = await listen(destination)
  const local = await inProcess(origin)
  const vault = createServer(
    toNodeListener(
      createHttpHandler(local.service, {
        headerPrefix: 'BT',
        log: () => {},
        maxInFlightPerTenant: Math.max(64, CONNECTIONS),
      }),
    ),
  )
  const vaultUrl = await listen(vault)
  const close = async () => {
    for (const server of [vault, destination]) {
      server.closeAllConnections()
      server.close()
    }
  }
  const { key, card, cvc } = local
  const parties = { origin, vaultUrl, key, card, cvc, pids: { bench: process.pid }, close }
  return { parties: { ...parties, accepted: async () => counter.accepted }, local }
}

/** Processes apart: the destination forked, the CLI server spawned; the in-process client beside. */
async function apart(): Promise<{ parties: Parties; local: InProcess }> {
  const children: ChildProcess[] = []
  const stop = async () => {
    for (const child of children) child.kill()
  }
  try {
    const destination = await startDestination(DELAY_MS)
    children.push(destination.child)
    const vault = await startVault(destination.origin, CONNECTIONS)
    children.push(vault.child)
    const { key, card, cvc } = await prepareVault(vault.url)
    const local = await inProcess(destination.origin)
    const pids = { bench: process.pid, vault: vault.child.pid!, destination: destination.child.pid! }
    const origin = destination.origin
    const parties = { origin, vaultUrl: vault.url, key, card, cvc, pids, close: stop }
    return { parties: { ...parties, accepted: destination.accepted }, local }
  } catch (error) {
    await stop()
    throw error
  }
}

/** CPU of each process a request over `run`, in µs. */
async function withCpu(
  pids: Record<string, number>,
  run: () => Promise<{ rate: number; total: number; p50: number }>,
) {
  const before = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuOf(pid)]))
  const result = await run()
  const cpu = Object.entries(pids)
    .map(([name, pid]) => `${name} ${((cpuOf(pid) - before[name]!) / result.total).toFixed(0)}`)
    .join(', ')
  return { ...result, cpu }
}

/** Alternating rounds of direct and proxied load; prints each and the ratio of the medians. */
async function rounds(p: Parties) {
  const plain = bodyOf('4242424242424242', '123')
  const proxied = bodyOf(`{{ ${p.card} }}`, `{{ ${p.cvc} }}`)
  console.log(`body: ${Buffer.byteLength(proxied)} bytes (proxied), ${Buffer.byteLength(plain)} (direct)`)
  const direct: number[] = []
  const through: number[] = []
  const headers = { 'BT-API-KEY': p.key, 'BT-PROXY-URL': p.origin }
  // Warm-up, not counted: the vault's first requests compile its code.
  await load(`${p.origin}/v1/charges`, {}, plain, 2)
  await load(`${p.vaultUrl}/proxy/v1/charges`, headers, proxied, 2)
  for (let round = 0; round < ROUNDS; round++) {
    const d = await withCpu(p.pids, () => load(`${p.origin}/v1/charges`, {}, plain))
    direct.push(d.rate)
    const before = await p.accepted()
    const t = await withCpu(p.pids, () => load(`${p.vaultUrl}/proxy/v1/charges`, headers, proxied))
    through.push(t.rate)
    const opened = (await p.accepted()) - before
    console.log(
      `round ${round + 1}: direct ${d.rate.toFixed(0)} req/s (p50 ${d.p50} ms; CPU µs/req ${d.cpu}), ` +
        `proxied ${t.rate.toFixed(0)} req/s (p50 ${t.p50} ms; CPU µs/req ${t.cpu}; ${opened} connections opened to the destination)`,
    )
  }
  console.log(`HTTP req/s: direct ${median(direct).toFixed(0)}, proxied ${median(through).toFixed(0)}`)
  console.log(
    `throughput ratio proxied/direct: ${(median(through) / median(direct)).toFixed(2)} (goal >= 0.5)`,
  )
}

/** The p50 that `client.proxy.invoke` adds over raw `fetch` to the destination, one call at a time. */
async function added(origin: string, local: InProcess) {
  const plain = bodyOf('4242424242424242', '123')
  const proxied = bodyOf(`{{ ${local.card} }}`, `{{ ${local.cvc} }}`)
  const headers = { 'content-type': 'application/json' }
  const invoke = () =>
    local.client.proxy.invoke({ method: 'POST', url: origin, path: '/v1/charges', headers, body: proxied })
  const raw = () =>
    fetch(`${origin}/v1/charges`, { method: 'POST', headers, body: plain }).then((r) => r.text())
  await p50(100, invoke)
  await p50(100, raw)
  const rawP50 = await p50(SEQUENTIAL, raw)
  const invokeP50 = await p50(SEQUENTIAL, invoke)
  console.log(
    `in-process p50: raw fetch ${rawP50.toFixed(0)} µs, client.proxy.invoke ${invokeP50.toFixed(0)} µs`,
  )
  console.log(`p50 added: ${(invokeP50 - rawP50).toFixed(0)} µs (goal <= 300)`)
}

async function main() {
  const mode = ONE_PROCESS ? 'one-process' : 'processes'
  console.log(`mode ${mode}, ${CONNECTIONS} connections, destination delay ${DELAY_MS} ms`)
  const { parties, local } = ONE_PROCESS ? await oneProcess() : await apart()
  try {
    await rounds(parties)
    if (DELAY_MS === 0) await added(parties.origin, local)
    else console.log('in-process p50: skipped (the destination answers after a delay)')
  } finally {
    await parties.close()
    await local.service.close()
  }
}

await main()

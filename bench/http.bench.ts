/**
 * The HTTP adapter against a raw node:http server, both serving the same in-process client, on
 * loopback, loaded by autocannon at 10 and 50 connections: GET /tokens/{id} and POST /tokens.
 * Goal: the adapter keeps at least 90 % of the raw server's requests per second.
 *
 * The servers run in a child process of their own, so that autocannon (here) and the server under
 * load don't share one event loop. Runs alternate adapter / raw, each bounded in time (2 s, five
 * rounds; quick: 1 s, one round); the ratio is the median over rounds of raw / adapter requests/s,
 * each pair measured back to back. The note adds the server's CPU time per request of each.
 * Run alone: `npx tsx bench/http.bench.ts` (`BENCH_QUICK=1` for a 1 s smoke run).
 */
import { type ChildProcess, fork } from 'node:child_process'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { createHttpHandler, toNodeListener } from '../adapters/http/index.js'
import { memoryStore } from '../adapters/memory/index.js'
import { createService, manualClock, type Service, ServiceError } from '../src/index.js'
import type { BenchOptions, BenchRow } from './harness.js'

const SERVER_FLAG = '--http-bench-servers'
const TOKEN_BODY = JSON.stringify({
  type: 'card',
  data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 },
})

/** What the server process reports once both servers listen. */
interface Ready {
  adapter: number
  raw: number
  key: string
  tokenId: string
}

/** The baseline: a hand-written node:http server for the two routes, calling the same client. */
function rawServer(service: Service): Server {
  const send = (res: ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body)
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
    res.end(text)
  }
  const fail = (res: ServerResponse) => (error: unknown) =>
    send(res, error instanceof ServiceError ? 400 : 500, { detail: String(error) })
  return createServer((req: IncomingMessage, res: ServerResponse) => {
    const client = service.connect(String(req.headers['svc-api-key'] ?? ''))
    const url = req.url ?? '/'
    if (req.method === 'GET' && url.startsWith('/tokens/')) {
      client.tokens
        .get(decodeURIComponent(url.slice('/tokens/'.length)))
        .then((t) => send(res, 200, t), fail(res))
    } else if (req.method === 'POST' && url === '/tokens') {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        let body: unknown
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
        } catch {
          return send(res, 400, { detail: 'bad JSON' })
        }
        client.tokens.create(body).then((t) => send(res, 201, t), fail(res))
      })
    } else send(res, 404, { detail: 'no route' })
  })
}

/** In the server process: one service, the adapter and the raw server on loopback, free ports. */
async function startServers(): Promise<void> {
  const service = createService({ store: memoryStore(), clock: manualClock() })
  const tenant = await service.admin.createTenant({ name: 'bench' })
  const permissions = ['token:create', 'token:read'] as const
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'bench',
    type: 'private',
    permissions: [...permissions],
    rules: [
      { description: 'all', priority: 1, container: '/', transform: 'reveal', permissions: [...permissions] },
    ],
  })
  const token = await service.connect(key).tokens.create(JSON.parse(TOKEN_BODY))
  const listen = (server: Server) =>
    new Promise<number>((resolve) =>
      server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
    )
  const adapter = await listen(createServer(toNodeListener(createHttpHandler(service, { log: () => {} }))))
  const raw = await listen(rawServer(service))
  process.on('message', (m) => {
    if (m === 'cpu') {
      const { user, system } = process.cpuUsage()
      process.send!({ cpu: user + system })
    }
  })
  process.send!({ adapter, raw, key, tokenId: token.id } satisfies Ready)
}

/** Starts the server process and waits for its ports. */
async function spawnServers(): Promise<{ child: ChildProcess; ready: Ready }> {
  const child = fork(fileURLToPath(import.meta.url), [SERVER_FLAG], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const ready = await new Promise<Ready>((resolve, reject) => {
    child.once('message', (m) => resolve(m as Ready))
    child.once('exit', (code) => reject(new Error(`the bench server process exited (${code})`)))
  })
  return { child, ready }
}

interface Load {
  rps: number
  p99: number
  errors: number
  /** CPU time the server process spent per request, in µs. */
  cpuUs: number
}

/** The server process's CPU time so far (user + system), in µs. */
function serverCpu(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    child.once('message', (m) => resolve((m as { cpu: number }).cpu))
    child.send('cpu')
  })
}

/** One bounded autocannon run, with the server process's CPU time per request. */
async function load(
  child: ChildProcess,
  url: string,
  connections: number,
  seconds: number,
  post: boolean,
  key: string,
): Promise<Load> {
  const cpuBefore = await serverCpu(child)
  const result = await autocannon({
    url,
    connections,
    duration: seconds,
    method: post ? 'POST' : 'GET',
    headers: post ? { 'svc-api-key': key, 'content-type': 'application/json' } : { 'svc-api-key': key },
    ...(post ? { body: TOKEN_BODY } : {}),
  })
  const cpu = (await serverCpu(child)) - cpuBefore
  return {
    rps: result.requests.average,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
    cpuUs: cpu / Math.max(1, result.requests.total),
  }
}

/** The median: robust to the odd round disturbed by other work on the machine. */
const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** Requests/s and p99 of the adapter and of the raw server, alternating runs, for each route and load. */
export async function run(opts: BenchOptions): Promise<BenchRow[]> {
  const { child, ready } = await spawnServers()
  const seconds = opts.quick ? 1 : 2
  const rounds = opts.quick ? 1 : 5
  const rows: BenchRow[] = []
  try {
    const routes = [
      { name: 'GET /tokens/{id}', path: `/tokens/${ready.tokenId}`, post: false },
      { name: 'POST /tokens', path: '/tokens', post: true },
    ]
    for (const route of routes) {
      for (const connections of [10, 50]) {
        const at = (port: number) => `http://127.0.0.1:${port}${route.path}`
        // Warm both up (JIT, sockets), then alternate.
        await load(child, at(ready.adapter), connections, 1, route.post, ready.key)
        await load(child, at(ready.raw), connections, 1, route.post, ready.key)
        const adapter: Load[] = []
        const raw: Load[] = []
        for (let i = 0; i < rounds; i++) {
          adapter.push(await load(child, at(ready.adapter), connections, seconds, route.post, ready.key))
          raw.push(await load(child, at(ready.raw), connections, seconds, route.post, ready.key))
        }
        const sum = (ls: Load[]) => ({
          rps: median(ls.map((l) => l.rps)),
          p99: median(ls.map((l) => l.p99)),
          cpuUs: median(ls.map((l) => l.cpuUs)),
        })
        const a = sum(adapter)
        const b = sum(raw)
        const errors = [...adapter, ...raw].reduce((n, l) => n + l.errors, 0)
        rows.push({
          group: 'http',
          operation: `${route.name}, ${connections} connections (toNodeListener)`,
          opsPerSec: a.rps,
          baseline: 'raw node:http, same client',
          baselineOpsPerSec: b.rps,
          // Each adapter round ran right before its raw round: the median of their ratios.
          ratio: median(adapter.map((l, i) => raw[i]!.rps / l.rps)),
          goal: '≥ 90 % of raw (ratio ≤ 1.11×)',
          note:
            `${(100 / median(adapter.map((l, i) => raw[i]!.rps / l.rps))).toFixed(0)} % of raw; p99 ${a.p99.toFixed(1)} ms vs ${b.p99.toFixed(1)} ms; ` +
            `server CPU ${a.cpuUs.toFixed(0)} µs vs ${b.cpuUs.toFixed(0)} µs per request` +
            (errors ? `; ${errors} failed requests` : ''),
        })
      }
    }
  } finally {
    child.kill()
  }
  return rows
}

if (process.argv.includes(SERVER_FLAG)) {
  await startServers()
} else if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import('./report.js')
  printRows(await run({ quick: process.env.BENCH_QUICK === '1' }))
}

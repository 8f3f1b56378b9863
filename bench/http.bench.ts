/**
 * HTTP throughput against floors, on loopback, loaded by autocannon at 10 and 50 connections with
 * GET /tokens/{id} and POST /tokens, in one run:
 *
 * - **fetch**: `createHttpHandler(service)` behind a plain function, served by `toNodeListener`
 *   (the generic path it takes for any handler it does not know: a stand-in `Request` handed over,
 *   the `Response` written back; `adapters/http/light.ts`) — against the native node path,
 *   `toNodeListener(handler)`. Goal: ≥ 80 % of the native path. What a fetch host's real `Request`
 *   and `Response` cost is in **costs**.
 * - **cli**: the server `tokenvault serve` runs (`dist/bin/tokenvault.js` when built, else the
 *   sources through tsx; memory store; its default text log on stderr, a pipe read by this
 *   process) against a raw node:http server answering the same bytes from a `Map`: no
 *   authentication, no decryption, no JSON. Goal: ≥ 80 % of the Map server.
 * - **raw**: the native node path against a raw node:http server calling the same client (the
 *   adapter's own cost). Goal: ≥ 90 %.
 *
 * Every server runs in a child process of its own kind (the in-process servers, the CLI, the Map
 * server), so autocannon (here) and the server under load don't share one event loop; the vault's
 * servers run the built package (`dist/`, see `bench/built.ts`). Both servers of a comparison are
 * warmed up first (4 s of GET, 4 s of POST each), then runs
 * alternate operation / baseline, each bounded in time (1.5 s, five rounds; quick: 1 s, one round);
 * the ratio is the median over rounds of each pair measured back to back. Notes add p99 and the
 * server process's CPU time per request (from /proc). **costs** adds what a request costs in
 * process, as CPU time: the WHATWG objects, the client's get and create.
 * Run alone: `npm run build && npx tsx bench/http.bench.ts` (`BENCH_QUICK=1` for a short smoke
 * run; `BENCH_HTTP=fetch,cli` picks comparisons).
 */
import { type ChildProcess, fork, spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import type { FetchHandler } from '../adapters/http/index.js'
import type { Service } from '../entry/index.js'
import { built, load as fromDist } from './built.js'
import type { BenchOptions, BenchRow } from './harness.js'

// The package as an application runs it: the built one (see `bench/built.ts`), in this process and
// in the server processes it forks.
const {
  entry: { createService, manualClock, ServiceError },
  memory: { memoryStore },
  http: { createHttpHandler, toNodeListener },
} = await built()
const { exchangeHandlerOf } =
  await fromDist<typeof import('../adapters/http/handler.js')>('adapters/http/handler.js')

const SERVER_FLAG = '--http-bench-servers'
const MAP_FLAG = '--http-bench-map'
const TOKEN_BODY = JSON.stringify({
  type: 'card',
  data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 },
})
const PERMISSIONS = ['token:create', 'token:read']
const APPLICATION = {
  name: 'bench',
  type: 'private',
  permissions: PERMISSIONS,
  rules: [{ description: 'all', priority: 1, container: '/', transform: 'reveal', permissions: PERMISSIONS }],
}
const MANAGEMENT_KEY = `key_${'b'.repeat(32)}`

/** What the in-process server child reports once its servers listen. */
interface Ready {
  native: number
  fetch: number
  raw: number
  key: string
  tokenId: string
}

/** One recorded answer of the CLI server, served again by the Map server. */
interface Recorded {
  status: number
  headers: Record<string, string>
  body: string
}

/** The baseline of the adapter: a hand-written node:http server for the two routes, calling the same client. */
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
        client.tokens.create(body as never).then((t) => send(res, 201, t), fail(res))
      })
    } else send(res, 404, { detail: 'no route' })
  })
}

/**
 * The floor of the CLI server: node:http answering recorded bytes from a `Map` by method and path.
 * A POST's body is read whole and kept in the map under a fresh id; nothing is checked or parsed.
 */
function mapServer(answers: Record<string, Recorded>): Server {
  const map = new Map<string, { status: number; headers: Record<string, string>; body: Buffer }>()
  for (const [at, a] of Object.entries(answers)) {
    const body = Buffer.from(a.body)
    map.set(at, { status: a.status, headers: { ...a.headers, 'content-length': String(body.length) }, body })
  }
  const stored = new Map<string, Buffer>()
  const answer = (req: IncomingMessage, res: ServerResponse) => {
    const found = map.get(`${req.method} ${req.url}`)
    if (!found) res.writeHead(404).end()
    else res.writeHead(found.status, found.headers).end(found.body)
  }
  return createServer((req, res) => {
    if (req.method !== 'POST') return answer(req, res)
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      stored.set(randomUUID(), Buffer.concat(chunks))
      answer(req, res)
    })
  })
}

const listen = (server: Server) =>
  new Promise<number>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  )

/** In the in-process server child: one service; the native path, the fetch path and the raw server. */
async function startServers(): Promise<void> {
  const service = createService({ store: memoryStore(), clock: manualClock() })
  const tenant = await service.admin.createTenant({ name: 'bench' })
  const { key } = await service.admin.createApplication({ tenantId: tenant.id, ...APPLICATION } as never)
  const token = await service.connect(key).tokens.create(JSON.parse(TOKEN_BODY))
  const handler = createHttpHandler(service)
  // A plain function hides the handler's exchange: `toNodeListener` hands it a `Request` and writes the `Response`.
  const asFetch: FetchHandler = (request) => handler(request)
  const native = await listen(createServer(toNodeListener(handler)))
  const fetchPort = await listen(createServer(toNodeListener(asFetch)))
  const raw = await listen(rawServer(service))
  process.send!({ native, fetch: fetchPort, raw, key, tokenId: token.id } satisfies Ready)
}

/** Forks this file with `flag` and waits for its first message. */
async function forkSelf<T>(flag: string, message?: unknown): Promise<{ child: ChildProcess; ready: T }> {
  const child = fork(fileURLToPath(import.meta.url), [flag], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const ready = new Promise<T>((resolve, reject) => {
    child.once('message', (m) => resolve(m as T))
    child.once('exit', (code) => reject(new Error(`a bench server process exited (${code})`)))
  })
  if (message !== undefined) child.send(message as never)
  return { child, ready: await ready }
}

/** The CLI server as `tokenvault serve` runs it, its stderr (the request log) counted, not kept. */
async function startCli(): Promise<{ child: ChildProcess; url: string; logBytes: () => number }> {
  // The built CLI, as `tokenvault serve` runs (`npm run build` first); the sources through tsx without a build.
  const built = fileURLToPath(new URL('../dist/bin/tokenvault.js', import.meta.url))
  const entry = existsSync(built)
    ? [built]
    : ['--import', 'tsx', fileURLToPath(new URL('../bin/tokenvault.ts', import.meta.url))]
  const child = spawn(
    process.execPath,
    [...entry, 'serve', '--port', '0', '--host', '127.0.0.1', '--store', 'memory'],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TOKENVAULT_MANAGEMENT_KEY: MANAGEMENT_KEY } },
  )
  let logBytes = 0
  child.stderr!.on('data', (chunk: Buffer) => {
    logBytes += chunk.length
  })
  const url = await new Promise<string>((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const found = /listening on (http:\/\/\S+)/.exec(out)
      if (found) resolve(found[1]!)
    })
    child.once('exit', (code) => reject(new Error(`tokenvault serve exited (${code})`)))
  })
  child.stdout!.resume()
  return { child, url, logBytes: () => logBytes }
}

/** Sends one request and records its answer as the Map server will replay it. */
async function record(url: string, init: RequestInit): Promise<Recorded> {
  const response = await fetch(url, init)
  const body = await response.text()
  if (!response.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${response.status} ${body}`)
  const headers: Record<string, string> = {}
  for (const name of ['content-type', 'cache-control']) {
    const value = response.headers.get(name)
    if (value !== null) headers[name] = value
  }
  return { status: response.status, headers, body }
}

/** A private application and a token on the CLI server, and its answers to the two routes. */
async function prepareCli(url: string) {
  const json = { 'content-type': 'application/json' }
  const app = await record(`${url}/applications`, {
    method: 'POST',
    headers: { ...json, 'svc-api-key': MANAGEMENT_KEY },
    body: JSON.stringify(APPLICATION),
  })
  const { key } = JSON.parse(app.body) as { key: string }
  const created = await record(`${url}/tokens`, {
    method: 'POST',
    headers: { ...json, 'svc-api-key': key },
    body: TOKEN_BODY,
  })
  const tokenId = (JSON.parse(created.body) as { id: string }).id
  const read = await record(`${url}/tokens/${tokenId}`, { headers: { 'svc-api-key': key } })
  return { key, tokenId, answers: { [`GET /tokens/${tokenId}`]: read, 'POST /tokens': created } }
}

/** A process's CPU time so far (user + system), in µs, from /proc; NaN where there is none. */
function cpuOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    // utime and stime are fields 14 and 15 of the line, in clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10_000
  } catch {
    return Number.NaN
  }
}

/** A server under test: its base URL and the process that serves it. */
interface Target {
  url: string
  pid: number
}

interface Load {
  rps: number
  p99: number
  errors: number
  /** CPU time the server process spent per request, in µs. */
  cpuUs: number
  requests: number
}

/** One bounded autocannon run, with the server process's CPU time per request. */
async function load(
  target: Target,
  path: string,
  connections: number,
  seconds: number,
  post: boolean,
  key: string,
): Promise<Load> {
  const cpuBefore = cpuOf(target.pid)
  const result = await autocannon({
    url: `${target.url}${path}`,
    connections,
    duration: seconds,
    method: post ? 'POST' : 'GET',
    headers: post ? { 'svc-api-key': key, 'content-type': 'application/json' } : { 'svc-api-key': key },
    ...(post ? { body: TOKEN_BODY } : {}),
  })
  const cpu = cpuOf(target.pid) - cpuBefore
  return {
    rps: result.requests.average,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
    cpuUs: cpu / Math.max(1, result.requests.total),
    requests: result.requests.total,
  }
}

/** The median: robust to the odd round disturbed by other work on the machine. */
const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** One comparison: an operation's server against its floor, each route at 10 and 50 connections. */
interface Comparison {
  group: string
  label: string
  op: Target
  baseline: Target
  baselineLabel: string
  /** The least share of the baseline's requests/s the operation should reach (0.8 = 80 %). */
  floor: number
  key: string
  tokenId: string
  /** Extra note per route and load (e.g. log bytes per request). */
  extra?: (opRequests: number) => string
  /** Called before the operation's rounds, to count what they log. */
  mark?: () => void
}

async function compareServers(c: Comparison, opts: BenchOptions): Promise<BenchRow[]> {
  const seconds = opts.quick ? 1 : 1.5
  const rounds = opts.quick ? 1 : 5
  const rows: BenchRow[] = []
  const routes = [
    { name: 'GET /tokens/{id}', path: `/tokens/${c.tokenId}`, post: false },
    { name: 'POST /tokens', path: '/tokens', post: true },
  ]
  // Each server's JIT settles only after seconds of load (the larger its code, the later): both get
  // the same warm-up on both routes before any round counts, as in `bench/floor.bench.ts`.
  const warmSeconds = opts.quick ? 0 : 4
  for (const target of warmSeconds > 0 ? [c.op, c.baseline] : []) {
    for (const route of routes) await load(target, route.path, 10, warmSeconds, route.post, c.key)
  }
  for (const route of routes) {
    for (const connections of [10, 50]) {
      const run = (t: Target, s: number) => load(t, route.path, connections, s, route.post, c.key)
      // Warm both up (JIT, sockets), then alternate.
      await run(c.op, 1)
      await run(c.baseline, 1)
      const op: Load[] = []
      const base: Load[] = []
      c.mark?.()
      for (let i = 0; i < rounds; i++) {
        op.push(await run(c.op, seconds))
        base.push(await run(c.baseline, seconds))
      }
      const sum = (ls: Load[]) => ({
        rps: median(ls.map((l) => l.rps)),
        p99: median(ls.map((l) => l.p99)),
        cpuUs: median(ls.map((l) => l.cpuUs)),
      })
      const a = sum(op)
      const b = sum(base)
      // Each operation round ran right before its baseline round: the median of their ratios.
      const ratio = median(op.map((l, i) => base[i]!.rps / l.rps))
      const errors = [...op, ...base].reduce((n, l) => n + l.errors, 0)
      const share = 100 / ratio
      rows.push({
        group: c.group,
        operation: `${route.name}, ${connections} connections (${c.label})`,
        opsPerSec: a.rps,
        baseline: c.baselineLabel,
        baselineOpsPerSec: b.rps,
        ratio,
        goal: `≥ ${c.floor * 100} % (ratio ≤ ${(1 / c.floor).toFixed(2)}×)`,
        note:
          `${share.toFixed(0)} % of the floor${share < c.floor * 100 ? ' (below the goal)' : ''}; ` +
          `p99 ${a.p99.toFixed(1)} ms vs ${b.p99.toFixed(1)} ms; ` +
          `server CPU ${a.cpuUs.toFixed(0)} µs vs ${b.cpuUs.toFixed(0)} µs per request (${((100 * b.cpuUs) / a.cpuUs).toFixed(0)} % by CPU)` +
          (c.extra ? `; ${c.extra(op.reduce((n, l) => n + l.requests, 0))}` : '') +
          (errors ? `; ${errors} failed requests` : ''),
      })
      console.error(`http ${rows.at(-1)!.operation}: ${rows.at(-1)!.note}`)
    }
  }
  return rows
}

/**
 * What a request costs in process, without sockets, to explain the floors: the fetch handler with
 * a real `Request` and `Response` against the same handler's exchange path (what the native node
 * path calls), and the client's own work (key check, access rule, decryption, copy, JSON) against
 * the Map lookup the Map server does instead.
 */
/**
 * The CPU time per call of `op` and of `baseline`, in µs, in alternating rounds of `n` calls after
 * a warm-up: the median of each. CPU time, not wall time, so that other work on the machine
 * inflates neither.
 */
async function cpuPerCall(
  op: () => unknown,
  baseline: () => unknown,
  n: number,
  rounds: number,
): Promise<{ op: number; baseline: number }> {
  const measure = async (fn: () => unknown) => {
    const before = process.cpuUsage()
    for (let i = 0; i < n; i++) await fn()
    const spent = process.cpuUsage(before)
    return (spent.user + spent.system) / n
  }
  await measure(op)
  await measure(baseline)
  const a: number[] = []
  const b: number[] = []
  for (let i = 0; i < rounds; i++) {
    a.push(await measure(op))
    b.push(await measure(baseline))
  }
  return { op: median(a), baseline: median(b) }
}

async function costs(opts: BenchOptions): Promise<BenchRow[]> {
  const service = createService({ store: memoryStore(), clock: manualClock() })
  const tenant = await service.admin.createTenant({ name: 'bench' })
  const { key } = await service.admin.createApplication({ tenantId: tenant.id, ...APPLICATION } as never)
  const token = await service.connect(key).tokens.create(JSON.parse(TOKEN_BODY))
  const handler = createHttpHandler(service)
  const exchange = exchangeHandlerOf(handler)!
  const [n, rounds] = opts.quick ? [500, 1] : [5000, 5]
  const sent = (post: boolean): [string, string][] => [
    ['host', '127.0.0.1:3000'],
    ['svc-api-key', key],
    ...(post
      ? ([
          ['content-type', 'application/json'],
          ['content-length', String(TOKEN_BODY.length)],
        ] as [string, string][])
      : []),
  ]
  const bytes = new TextEncoder().encode(TOKEN_BODY)
  const viaFetch = (post: boolean) => async () => {
    const init: RequestInit = post
      ? { method: 'POST', headers: sent(true), body: bytes }
      : { headers: sent(false) }
    const response = await handler(
      new Request(`http://127.0.0.1:3000/tokens${post ? '' : `/${token.id}`}`, init),
    )
    for (const _ of response.headers);
    await response.arrayBuffer()
  }
  const viaExchange = (post: boolean) => () => {
    const headers = new Map(sent(post))
    return exchange({
      method: post ? 'POST' : 'GET',
      target: post ? '/tokens' : `/tokens/${token.id}`,
      header: (name) => headers.get(name) ?? null,
      readBody: async () => (post ? bytes : null),
    })
  }
  const answers = new Map([[token.id, JSON.stringify(token)]])
  const rows: BenchRow[] = []
  for (const post of [false, true]) {
    const r = await cpuPerCall(viaFetch(post), viaExchange(post), n, rounds)
    rows.push({
      group: 'http costs (in process)',
      operation: `${post ? 'POST /tokens' : 'GET /tokens/{id}'} through the fetch handler: Request built, Response read`,
      opsPerSec: 1e6 / r.op,
      baseline: "the same handler's exchange (the native node path without sockets)",
      baselineOpsPerSec: 1e6 / r.baseline,
      ratio: r.op / r.baseline,
      note: `CPU per request ${r.op.toFixed(1)} µs vs ${r.baseline.toFixed(1)} µs: the WHATWG objects cost ${(r.op - r.baseline).toFixed(1)} µs`,
    })
  }
  const client = service.connect(key)
  const cases = [
    [
      'client get + JSON (key checked, rule, decrypted, copied)',
      () => client.tokens.get(token.id).then(JSON.stringify),
    ],
    [
      'client create + JSON (key checked, validated, encrypted, stored)',
      () => client.tokens.create(JSON.parse(TOKEN_BODY)).then(JSON.stringify),
    ],
  ] as const
  for (const [name, op] of cases) {
    const r = await cpuPerCall(op, () => answers.get(token.id), n, rounds)
    rows.push({
      group: 'http costs (in process)',
      operation: name,
      opsPerSec: 1e6 / r.op,
      baseline: "the Map server's lookup of the answer",
      baselineOpsPerSec: 1e6 / r.baseline,
      ratio: r.op / r.baseline,
      note: `CPU per call ${r.op.toFixed(1)} µs vs ${r.baseline.toFixed(2)} µs`,
    })
  }
  await service.close()
  return rows
}

/** The comparisons `BENCH_HTTP` names (default all): fetch, cli, raw, costs. */
export async function run(opts: BenchOptions): Promise<BenchRow[]> {
  const pick = process.env.BENCH_HTTP?.split(',') ?? ['fetch', 'cli', 'raw', 'costs']
  const children: ChildProcess[] = []
  const rows: BenchRow[] = []
  try {
    if (pick.includes('fetch') || pick.includes('raw')) {
      const { child, ready } = await forkSelf<Ready>(SERVER_FLAG)
      children.push(child)
      const at = (port: number): Target => ({ url: `http://127.0.0.1:${port}`, pid: child.pid! })
      const common = { key: ready.key, tokenId: ready.tokenId }
      if (pick.includes('fetch')) {
        rows.push(
          ...(await compareServers(
            {
              group: 'http fetch path',
              label: 'Request in, Response out',
              op: at(ready.fetch),
              baseline: at(ready.native),
              baselineLabel: 'the native node path, toNodeListener(handler)',
              floor: 0.8,
              ...common,
            },
            opts,
          )),
        )
      }
      if (pick.includes('raw')) {
        rows.push(
          ...(await compareServers(
            {
              group: 'http adapter',
              label: 'toNodeListener',
              op: at(ready.native),
              baseline: at(ready.raw),
              baselineLabel: 'raw node:http, same client',
              floor: 0.9,
              ...common,
            },
            opts,
          )),
        )
      }
    }
    if (pick.includes('cli')) {
      const cli = await startCli()
      children.push(cli.child)
      const prepared = await prepareCli(cli.url)
      const map = await forkSelf<{ port: number }>(MAP_FLAG, prepared.answers)
      children.push(map.child)
      let logAt = 0
      rows.push(
        ...(await compareServers(
          {
            group: 'http CLI server',
            label: 'tokenvault serve, text log',
            op: { url: cli.url, pid: cli.child.pid! },
            baseline: { url: `http://127.0.0.1:${map.ready.port}`, pid: map.child.pid! },
            baselineLabel: 'raw node:http answering the same bytes from a Map',
            floor: 0.8,
            key: prepared.key,
            tokenId: prepared.tokenId,
            mark: () => {
              logAt = cli.logBytes()
            },
            // The log lines of the measured rounds, per request: proof the log was on.
            extra: (requests) =>
              `log ${((cli.logBytes() - logAt) / Math.max(1, requests)).toFixed(0)} B/request`,
          },
          opts,
        )),
      )
    }
  } finally {
    for (const child of children) child.kill()
  }
  if (pick.includes('costs')) rows.push(...(await costs(opts)))
  return rows
}

if (process.argv.includes(SERVER_FLAG)) {
  await startServers()
} else if (process.argv.includes(MAP_FLAG)) {
  process.once('message', async (answers) => {
    const port = await listen(mapServer(answers as Record<string, Recorded>))
    process.send!({ port })
  })
} else if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import('./report.js')
  printRows(await run({ quick: process.env.BENCH_QUICK === '1' }))
}

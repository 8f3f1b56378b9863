/**
 * Our HTTP servers against the floors a vault can reach, on loopback, loaded by autocannon with
 * GET /tokens/{id} and POST /tokens at 10 and 50 connections. Every server runs in a child process
 * of its own (like `tokenvault serve`), one server per process:
 *
 * - **map**: raw node:http answering the CLI server's recorded bytes from a `Map` (a POST's body is
 *   read whole and kept under a fresh id); nothing checked, decrypted or serialized.
 * - **vault**: the least a vault with encryption at rest does per request, in plain Node. GET:
 *   SHA-256 of the key and a `Map` lookup of it, a `Map` lookup of the token, one AES-256-GCM
 *   decryption with a reused `KeyObject`, `JSON.parse` of the fields and `JSON.stringify` of the
 *   answer. POST: `JSON.parse` of the body, validation (the same valibot schema the core parses
 *   with), a random id, AES-256-GCM encryption of the fields, an HMAC-SHA-256 fingerprint, a `Map`
 *   set and the answer's `JSON.stringify`.
 * - **cli**: `tokenvault serve` (`dist/bin/tokenvault.js`: `npm run build` first; memory store, its
 *   default text log on, read from a pipe by this process).
 * - **native**: `createServer(toNodeListener(createHttpHandler(service)))`, memory store, from the
 *   built package like the CLI server (`bench/built.ts`).
 * - **fetch**: the same handler hidden behind a plain function, so `toNodeListener` takes its generic
 *   path: it hands the function a `Request` (a stand-in, `adapters/http/light.ts`) and writes the
 *   `Response` it answers back.
 * - **core**: the service without the HTTP adapter: a bare node:http listener that calls the
 *   in-process client of the request's key (one client per key, as the adapter keeps) and answers
 *   its JSON as the vault floor does (no routing, request id, problem handling or log). What the
 *   adapter costs is the gap between this and **native**.
 *
 * Every server is first warmed up (4 s of GET, then 4 s of POST: its JIT's steady state), then
 * rounds interleave the servers (each run bounded: 2 s, five rounds after a 1 s warm-up; quick:
 * 1 s, one round) and each server's best round counts. Ratios: cli / vault (goal GET ≥ 0.85, POST ≥
 * 0.75), cli / map, native / vault (goal ≥ 0.9 of the cli goals' floor), fetch / native (≥ 0.8), and,
 * with no goal, core / vault and native / core.
 * Notes add the server process's CPU time per request (from /proc), where other load on the
 * machine does not count. Run: `npm run bench:floor` (`BENCH_QUICK=1` for a smoke run).
 */
import { type ChildProcess, fork, spawn } from 'node:child_process'
import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createSecretKey,
  hash,
  randomBytes,
  randomUUID,
} from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import * as v from 'valibot'
import type { FetchHandler } from '../adapters/http/index.js'
import type { Client } from '../src/service/service.js'
import { createTokenInput } from '../src/tokens/schemas.js'
import { built } from './built.js'
import type { BenchOptions, BenchRow } from './harness.js'

const ROLE_FLAG = '--floor-bench-role'
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

type Role = 'map' | 'vault' | 'native' | 'fetch' | 'core'

/** What a server child is told at start: the CLI server's key, token and recorded answers. */
interface Setup {
  key: string
  tokenId: string
  /** The CLI server's answer to GET /tokens/{id} (a token with its data), and to a create. */
  read: string
  created: string
}

/** What a server child answers once it listens: its port, and the key and token to load it with. */
interface Ready {
  port: number
  key: string
  tokenId: string
}

const JSON_TYPE = 'application/json'
const send = (res: ServerResponse, status: number, body: string | Buffer): void => {
  res.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(body) }).end(body)
}

/** Reads a request's body whole. */
const readBody = (req: IncomingMessage, then: (body: Buffer) => void) => {
  const chunks: Buffer[] = []
  req.on('data', (c: Buffer) => chunks.push(c))
  req.on('end', () => then(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)))
}

/** The raw floor: the recorded bytes from a `Map`; a POST's body kept under a fresh id. */
function mapServer(setup: Setup): Server {
  const answers = new Map([
    [`/tokens/${setup.tokenId}`, Buffer.from(setup.read)],
    ['/tokens', Buffer.from(setup.created)],
  ])
  const kept = new Map<string, Buffer>()
  return createServer((req, res) => {
    const answer = answers.get(req.url ?? '')
    if (!answer) return send(res, 404, '{}')
    if (req.method !== 'POST') return send(res, 200, answer)
    readBody(req, (body) => {
      kept.set(randomUUID(), body)
      send(res, 201, answer)
    })
  })
}

/** The vault floor: key check, token lookup, AES-256-GCM with a reused `KeyObject`, JSON. */
function vaultServer(setup: Setup): Server {
  const dataKey = createSecretKey(randomBytes(32))
  const hmacKey = createSecretKey(randomBytes(32))
  const tenantId = randomUUID()
  const keys = new Map([[hash('sha256', setup.key, 'base64'), { tenantId }]])
  const seal = (value: unknown, aad: string) => {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', dataKey, iv)
    cipher.setAAD(Buffer.from(aad))
    const body = cipher.update(JSON.stringify(value))
    cipher.final()
    return { iv, body, tag: cipher.getAuthTag() }
  }
  type Sealed = ReturnType<typeof seal>
  const tokens = new Map<string, { record: Record<string, unknown>; sealed: Sealed }>()
  const put = (token: Record<string, unknown>) => {
    const { data, mask, ...record } = token
    tokens.set(`${tenantId}/${String(token['id'])}`, {
      record,
      sealed: seal([data, mask], `${tenantId}:${String(token['id'])}`),
    })
  }
  put(JSON.parse(setup.read) as Record<string, unknown>)
  const tenantOf = (req: IncomingMessage) => {
    const key = req.headers['svc-api-key']
    return typeof key === 'string' ? keys.get(hash('sha256', key, 'base64'))?.tenantId : undefined
  }
  return createServer((req, res) => {
    const tenant = tenantOf(req)
    if (!tenant) return send(res, 401, '{}')
    const url = req.url ?? ''
    if (req.method === 'GET' && url.startsWith('/tokens/')) {
      const id = url.slice('/tokens/'.length)
      const found = tokens.get(`${tenant}/${id}`)
      if (!found) return send(res, 404, '{}')
      const { iv, body, tag } = found.sealed
      const decipher = createDecipheriv('aes-256-gcm', dataKey, iv)
      decipher.setAAD(Buffer.from(`${tenant}:${id}`))
      decipher.setAuthTag(tag)
      const plain = decipher.update(body)
      decipher.final()
      const [data, mask] = JSON.parse(plain.toString('utf8')) as [unknown, unknown]
      return send(res, 200, JSON.stringify({ ...found.record, data, mask }))
    }
    if (req.method === 'POST' && url === '/tokens') {
      return readBody(req, (bytes) => {
        let input: v.InferOutput<typeof createTokenInput>
        try {
          input = v.parse(createTokenInput, JSON.parse(bytes.toString('utf8')))
        } catch {
          return send(res, 400, '{}')
        }
        const token = {
          ...input,
          id: randomUUID(),
          tenant_id: tenant,
          fingerprint: createHmac('sha256', hmacKey).update(JSON.stringify(input.data)).digest('base64url'),
          created_at: new Date().toISOString(),
        }
        put(token)
        send(res, 201, JSON.stringify(token))
      })
    }
    send(res, 404, '{}')
  })
}

/**
 * The service behind a bare listener: the in-process client of the request's key (kept per key, so
 * the key is still checked on every call), its answer as JSON; a failure answers 400 with no body.
 */
function coreServer(service: { connect(key: string): Client }): Server {
  const clients = new Map<string, Client>()
  const clientOf = (req: IncomingMessage) => {
    const key = req.headers['svc-api-key']
    if (typeof key !== 'string') return undefined
    let client = clients.get(key)
    if (!client) {
      client = service.connect(key)
      clients.set(key, client)
    }
    return client
  }
  const answer = (res: ServerResponse, status: number, call: Promise<unknown>) =>
    call.then(
      (result) => send(res, status, JSON.stringify(result)),
      () => send(res, 400, '{}'),
    )
  return createServer((req, res) => {
    const client = clientOf(req)
    if (!client) return send(res, 401, '{}')
    const url = req.url ?? ''
    if (req.method === 'GET' && url.startsWith('/tokens/'))
      return answer(res, 200, client.tokens.get(url.slice('/tokens/'.length)))
    if (req.method === 'POST' && url === '/tokens')
      return readBody(req, (bytes) => {
        let input: unknown
        try {
          input = JSON.parse(bytes.toString('utf8'))
        } catch {
          return send(res, 400, '{}')
        }
        answer(res, 201, client.tokens.create(input as Parameters<Client['tokens']['create']>[0]))
      })
    send(res, 404, '{}')
  })
}

const listen = (server: Server) =>
  new Promise<number>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  )

/** In a child: the server of `role`. */
async function serve(role: Role, setup: Setup): Promise<Ready> {
  if (role === 'map') return { port: await listen(mapServer(setup)), key: setup.key, tokenId: setup.tokenId }
  if (role === 'vault')
    return { port: await listen(vaultServer(setup)), key: setup.key, tokenId: setup.tokenId }
  // The package as an application runs it: the built one (see `bench/built.ts`).
  const {
    entry: { createService, manualClock },
    memory: { memoryStore },
    http: { createHttpHandler, toNodeListener },
  } = await built()
  const service = createService({ store: memoryStore(), clock: manualClock() })
  const tenant = await service.admin.createTenant({ name: 'bench' })
  const { key } = await service.admin.createApplication({ tenantId: tenant.id, ...APPLICATION } as never)
  const token = await service.connect(key).tokens.create(JSON.parse(TOKEN_BODY))
  if (role === 'core') return { port: await listen(coreServer(service)), key, tokenId: token.id }
  const handler = createHttpHandler(service)
  // A plain function hides the handler's exchange: `toNodeListener` hands it a `Request` and writes the `Response`.
  const asFetch: FetchHandler = (request) => handler(request)
  const port = await listen(createServer(toNodeListener(role === 'native' ? handler : asFetch)))
  return { port, key, tokenId: token.id }
}

/** Forks this file as the server of `role` and waits for it to listen. */
async function fork1(role: Role, setup: Setup): Promise<{ child: ChildProcess; ready: Ready }> {
  const child = fork(fileURLToPath(import.meta.url), [ROLE_FLAG, role], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const ready = await new Promise<Ready>((resolve, reject) => {
    child.once('message', (m) => resolve(m as Ready))
    child.once('exit', (code) => reject(new Error(`the ${role} server exited (${code})`)))
    child.send(setup as never)
  })
  return { child, ready }
}

/** `tokenvault serve` on the memory store, its log read from a pipe. */
async function startCli(): Promise<{ child: ChildProcess; url: string }> {
  const bin = fileURLToPath(new URL('../dist/bin/tokenvault.js', import.meta.url))
  if (!existsSync(bin)) throw new Error('run `npm run build` first: the CLI server runs from dist/')
  const child = spawn(
    process.execPath,
    [bin, 'serve', '--port', '0', '--host', '127.0.0.1', '--store', 'memory'],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TOKENVAULT_MANAGEMENT_KEY: MANAGEMENT_KEY } },
  )
  child.stderr!.resume()
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
  return { child, url }
}

/** An application and a token on the CLI server, and its answers (the floors serve the same). */
async function prepareCli(url: string): Promise<Setup> {
  const call = async (path: string, init: RequestInit) => {
    const response = await fetch(`${url}${path}`, init)
    const body = await response.text()
    if (!response.ok) throw new Error(`${init.method ?? 'GET'} ${path}: ${response.status} ${body}`)
    return body
  }
  const json = { 'content-type': JSON_TYPE }
  const app = await call('/applications', {
    method: 'POST',
    headers: { ...json, 'svc-api-key': MANAGEMENT_KEY },
    body: JSON.stringify(APPLICATION),
  })
  const { key } = JSON.parse(app) as { key: string }
  const created = await call('/tokens', {
    method: 'POST',
    headers: { ...json, 'svc-api-key': key },
    body: TOKEN_BODY,
  })
  const tokenId = (JSON.parse(created) as { id: string }).id
  const read = await call(`/tokens/${tokenId}`, { headers: { 'svc-api-key': key } })
  return { key, tokenId, read, created }
}

/** A process's CPU time so far (user + system), in µs, from /proc; NaN where there is none. */
function cpuOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 10_000
  } catch {
    return Number.NaN
  }
}

interface Target {
  name: 'map' | 'vault' | 'cli' | 'native' | 'fetch' | 'core'
  url: string
  pid: number
  key: string
  tokenId: string
}

interface Load {
  rps: number
  cpuUs: number
  errors: number
}

async function load(t: Target, post: boolean, connections: number, seconds: number): Promise<Load> {
  const before = cpuOf(t.pid)
  const result = await autocannon({
    url: `${t.url}${post ? '/tokens' : `/tokens/${t.tokenId}`}`,
    connections,
    duration: seconds,
    method: post ? 'POST' : 'GET',
    headers: post ? { 'svc-api-key': t.key, 'content-type': JSON_TYPE } : { 'svc-api-key': t.key },
    ...(post ? { body: TOKEN_BODY } : {}),
  })
  return {
    rps: result.requests.average,
    cpuUs: (cpuOf(t.pid) - before) / Math.max(1, result.requests.total),
    errors: result.errors + result.timeouts + result.non2xx,
  }
}

/** The pairs compared, as (operation, baseline, goal as the least share of the baseline's requests/s). */
const PAIRS = [
  ['cli', 'vault', { get: 0.85, post: 0.75 }],
  ['cli', 'map', undefined],
  ['native', 'vault', { get: 0.9, post: 0.9 }],
  ['fetch', 'native', { get: 0.8, post: 0.8 }],
  ['core', 'vault', undefined],
  ['native', 'core', undefined],
] as const

const LABELS: Record<Target['name'], string> = {
  map: 'raw node:http, bytes from a Map',
  vault: 'vault floor in plain Node (key hash, Map, AES-GCM, JSON)',
  cli: 'tokenvault serve (memory store, text log)',
  native: 'toNodeListener(handler)',
  fetch: 'fetch path (Request in, Response out)',
  core: 'the client behind a bare node:http listener (no HTTP adapter)',
}

export async function run(opts: BenchOptions): Promise<BenchRow[]> {
  const seconds = opts.quick ? 1 : 2
  const rounds = opts.quick ? 1 : 5
  // Each server's JIT reaches its steady state only after some seconds of load: the larger the code,
  // the later (the CLI server was still getting faster after 10 s; the floors, a screen of code,
  // after 1 s). Every server gets the same warm-up before any round counts.
  const warmSeconds = opts.quick ? 1 : 4
  const children: ChildProcess[] = []
  const rows: BenchRow[] = []
  try {
    const cli = await startCli()
    children.push(cli.child)
    const setup = await prepareCli(cli.url)
    const targets: Target[] = [
      { name: 'cli', url: cli.url, pid: cli.child.pid!, key: setup.key, tokenId: setup.tokenId },
    ]
    for (const role of ['map', 'vault', 'native', 'fetch', 'core'] as const) {
      const { child, ready } = await fork1(role, setup)
      children.push(child)
      targets.push({ name: role, url: `http://127.0.0.1:${ready.port}`, pid: child.pid!, ...ready })
    }
    for (const t of targets) {
      for (const post of [false, true]) await load(t, post, 10, warmSeconds)
    }
    for (const post of [false, true]) {
      for (const connections of [10, 50]) {
        for (const t of targets) await load(t, post, connections, 1)
        const best = new Map<Target['name'], Load>()
        for (let i = 0; i < rounds; i++) {
          // Rotate the order each round, so no server always runs right after the same one.
          for (let j = 0; j < targets.length; j++) {
            const t = targets[(i + j) % targets.length]!
            const l = await load(t, post, connections, seconds)
            const prior = best.get(t.name)
            if (!prior || l.rps > prior.rps)
              best.set(t.name, { ...l, errors: l.errors + (prior?.errors ?? 0) })
            else prior.errors += l.errors
          }
        }
        const route = post ? 'POST /tokens' : 'GET /tokens/{id}'
        for (const [op, base, goals] of PAIRS) {
          const a = best.get(op)!
          const b = best.get(base)!
          const goal = goals?.[post ? 'post' : 'get']
          const share = a.rps / b.rps
          rows.push({
            group: 'http floors',
            operation: `${route}, ${connections} connections: ${LABELS[op]}`,
            opsPerSec: a.rps,
            baseline: LABELS[base],
            baselineOpsPerSec: b.rps,
            ratio: b.rps / a.rps,
            goal: goal === undefined ? '' : `≥ ${goal}`,
            note:
              `${share.toFixed(2)} of the baseline's requests/s${goal !== undefined && share < goal ? ' (below the goal)' : ''}; ` +
              `server CPU ${a.cpuUs.toFixed(0)} vs ${b.cpuUs.toFixed(0)} µs per request (${(b.cpuUs / a.cpuUs).toFixed(2)} by CPU)` +
              (a.errors + b.errors ? `; ${a.errors + b.errors} failed requests` : ''),
          })
          console.error(`${rows.at(-1)!.operation} vs ${base}: ${rows.at(-1)!.note}`)
        }
      }
    }
  } finally {
    for (const child of children) child.kill()
  }
  return rows
}

const at = process.argv.indexOf(ROLE_FLAG)
if (at >= 0) {
  const role = process.argv[at + 1] as Role
  process.once('message', async (setup) => process.send!(await serve(role, setup as Setup)))
} else if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import('./report.js')
  printRows(await run({ quick: process.env.BENCH_QUICK === '1' }))
  process.exit(0)
}

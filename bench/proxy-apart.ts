/**
 * The pieces of `bench/proxy.bench.ts` for its default mode, each party in a process of its own:
 * the destination (a raw `node:http` server answering a fixed JSON, after `BENCH_DEST_DELAY_MS`)
 * is this file forked with `--destination`; the vault is the CLI server (`tokenvault serve`, run
 * from `bin/` with tsx, memory store, log off, the destination on its `--egress` list); autocannon
 * drives both from the parent. Also the body and helpers both modes share.
 */
import { type ChildProcess, fork, spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'

const DESTINATION_FLAG = '--destination'
const MANAGEMENT_KEY = `key_${'p'.repeat(32)}`

/** The destination's answer, in both modes. */
export const ANSWER = '{"id":"ch_1","status":"succeeded"}'

/** A ~1 KB JSON body: two values (expressions or their plaintext) and filler. */
export function bodyOf(number: string, cvc: string): string {
  const filler = Object.fromEntries(
    Array.from({ length: 24 }, (_, i) => [`field_${i}`, `value-${i}-abcdefghij`]),
  )
  return JSON.stringify({ amount: 1999, currency: 'usd', card: { number, cvc }, metadata: filler })
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

export const listen = async (server: Server) => {
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/**
 * The destination: reads the body, answers `ANSWER` after `delayMs` (none at 0). Counts the
 * connections it accepted in `counter.accepted`.
 */
export function destinationServer(delayMs: number, counter: { accepted: number }): Server {
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      const answer = () => {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(ANSWER)
      }
      if (delayMs > 0) setTimeout(answer, delayMs)
      else answer()
    })
  })
  server.on('connection', () => {
    counter.accepted++
  })
  return server
}

/** A process's CPU time so far (user + system), in µs, from /proc; NaN where there is none. */
export function cpuOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    // utime and stime are fields 14 and 15 of stat; after "pid (comm) " they are 11 and 12 (0-based).
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100
  } catch {
    return Number.NaN
  }
}

/** The destination in a child: its origin, and its count of accepted connections on request. */
export interface DestinationChild {
  child: ChildProcess
  origin: string
  accepted: () => Promise<number>
}

/** Forks this file as the destination, answering after `delayMs`. */
export async function startDestination(delayMs: number): Promise<DestinationChild> {
  const child = fork(fileURLToPath(import.meta.url), [DESTINATION_FLAG, String(delayMs)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const origin = await new Promise<string>((resolve, reject) => {
    child.once('message', (m) => resolve(m as string))
    child.once('exit', (code) => reject(new Error(`the destination exited (${code})`)))
  })
  const accepted = () =>
    new Promise<number>((resolve) => {
      child.once('message', (m) => resolve(m as number))
      child.send('accepted')
    })
  return { child, origin, accepted }
}

/** `tokenvault serve` from `bin/` (tsx): memory store, log off, `origin` on the egress list. */
export async function startVault(
  origin: string,
  connections: number,
): Promise<{ child: ChildProcess; url: string }> {
  const bin = fileURLToPath(new URL('../bin/tokenvault.ts', import.meta.url))
  const args = ['serve', '--port', '0', '--host', '127.0.0.1', '--store', 'memory', '--log', 'none']
  const bounds = ['--egress', origin, '--max-in-flight-per-tenant', String(Math.max(32, connections))]
  // BENCH_VAULT_NODE_ARGS: node flags for the vault alone, e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`.
  const node = (process.env['BENCH_VAULT_NODE_ARGS'] ?? '').split(' ').filter(Boolean)
  const child = spawn(process.execPath, [...node, '--import', 'tsx', bin, ...args, ...bounds], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, TOKENVAULT_MANAGEMENT_KEY: MANAGEMENT_KEY },
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
  return { child, url }
}

/** An application with `token:create` and `token:use` on the CLI server, and two tokens. */
export async function prepareVault(url: string): Promise<{ key: string; card: string; cvc: string }> {
  const call = async (path: string, key: string, body: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'bt-api-key': key },
      body: JSON.stringify(body),
    })
    const text = await response.text()
    if (!response.ok) throw new Error(`POST ${path}: ${response.status} ${text}`)
    return JSON.parse(text) as { id: string; key: string }
  }
  const app = await call('/applications', MANAGEMENT_KEY, {
    name: 'bench',
    type: 'private',
    permissions: ['token:create', 'token:use'],
  })
  const card = await call('/tokens', app.key, { type: 'token', data: '4242424242424242' })
  const cvc = await call('/tokens', app.key, { type: 'token', data: '123' })
  return { key: app.key, card: card.id, cvc: cvc.id }
}

/** The destination child's body: listen, say the origin, answer counts until told to stop. */
async function destinationMain(delayMs: number) {
  const counter = { accepted: 0 }
  const server = destinationServer(delayMs, counter)
  const origin = await listen(server)
  process.on('message', () => process.send!(counter.accepted))
  process.on('disconnect', () => process.exit(0))
  process.send!(origin)
}

if (process.argv[2] === DESTINATION_FLAG) await destinationMain(Number(process.argv[3] ?? 0))

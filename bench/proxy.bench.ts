/**
 * The proxy against its floor, in the same run, on loopback: a POST of a ~1 KB JSON body with two
 * detokenization expressions through the vault's `/proxy` (HTTP, `BT-PROXY-URL`), against the same
 * request (its plaintext) sent straight to the same local destination (autocannon, 16 connections).
 * Goals (issue "the proxy"): throughput ≥ 0.5 of the direct path; p50 added ≤ 300 µs through the
 * in-process client (`client.proxy.invoke`, one call at a time, against raw node `fetch` to the
 * destination, one at a time).
 *
 * Rounds alternate (direct, proxied, …) so a busy machine weighs on both alike; figures are the
 * medians. Under 60 s. Run: `npm run bench:proxy` (`BENCH_QUICK=1`: shorter rounds).
 */
import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import autocannon from 'autocannon'
import { createHttpHandler, toNodeListener } from '../adapters/http/index.js'
import { memoryStore } from '../adapters/memory/index.js'
import { createService, systemClock } from '../entry/index.js'

const QUICK = process.env['BENCH_QUICK'] === '1'
const SECONDS = QUICK ? 3 : 6
const ROUNDS = 2
const CONNECTIONS = 16
const SEQUENTIAL = QUICK ? 500 : 1500

const listen = async (server: Server) => {
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** The destination: reads the body, answers a small JSON. */
/** Connections the destination accepted; each proxied round prints its own (kept alive: at most 16 a round, not one a request). */
let accepted = 0
const destination = createServer((req, res) => {
  req.resume()
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end('{"id":"ch_1","status":"succeeded"}')
  })
})

/** A ~1 KB JSON body: two values (expressions or their plaintext) and filler. */
function bodyOf(number: string, cvc: string): string {
  const filler = Object.fromEntries(
    Array.from({ length: 24 }, (_, i) => [`field_${i}`, `value-${i}-abcdefghij`]),
  )
  return JSON.stringify({ amount: 1999, currency: 'usd', card: { number, cvc }, metadata: filler })
}

destination.on('connection', () => {
  accepted++
})

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

async function load(url: string, headers: Record<string, string>, body: string) {
  const result = await autocannon({
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
    connections: CONNECTIONS,
    duration: SECONDS,
  })
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(`${result.non2xx} non-2xx, ${result.errors} errors`)
  return result.requests.average
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

async function main() {
  const origin = await listen(destination)
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
  const vault = createServer(
    toNodeListener(
      createHttpHandler(service, { headerPrefix: 'BT', log: () => {}, maxInFlightPerTenant: 64 }),
    ),
  )
  const vaultUrl = await listen(vault)
  const plain = bodyOf('4242424242424242', '123')
  const proxied = bodyOf(`{{ ${card.id} }}`, `{{ ${cvc.id} }}`)
  console.log(`body: ${Buffer.byteLength(proxied)} bytes (proxied), ${Buffer.byteLength(plain)} (direct)`)

  const direct: number[] = []
  const through: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    direct.push(await load(`${origin}/v1/charges`, {}, plain))
    const before = accepted
    through.push(
      await load(`${vaultUrl}/proxy/v1/charges`, { 'BT-API-KEY': key, 'BT-PROXY-URL': origin }, proxied),
    )
    console.log(`proxied round ${round + 1}: ${accepted - before} connections to the destination`)
  }
  const ratio = median(through) / median(direct)
  console.log(`HTTP req/s: direct ${median(direct).toFixed(0)}, proxied ${median(through).toFixed(0)}`)
  console.log(`throughput ratio proxied/direct: ${ratio.toFixed(2)} (goal >= 0.5)`)

  const invoke = () =>
    client.proxy.invoke({
      method: 'POST',
      url: origin,
      path: '/v1/charges',
      headers: { 'content-type': 'application/json' },
      body: proxied,
    })
  const raw = () =>
    fetch(`${origin}/v1/charges`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: plain,
    }).then((r) => r.text())
  await p50(100, invoke)
  await p50(100, raw)
  const rawP50 = await p50(SEQUENTIAL, raw)
  const invokeP50 = await p50(SEQUENTIAL, invoke)
  console.log(
    `in-process p50: raw fetch ${rawP50.toFixed(0)} µs, client.proxy.invoke ${invokeP50.toFixed(0)} µs`,
  )
  console.log(`p50 added: ${(invokeP50 - rawP50).toFixed(0)} µs (goal <= 300)`)

  vault.closeAllConnections()
  vault.close()
  destination.closeAllConnections()
  destination.close()
  await service.close()
}

await main()

/**
 * Where a proxied request's CPU goes, step by step, in one process: each step is run one call at a
 * time, N calls a round, three rounds alternating (the first a warm-up), and its CPU time per call
 * (`process.cpuUsage`, this process: the client, the vault and the destination alike) is the
 * median of the last two. The floor is one raw `node:http` POST of the plaintext body to the same
 * loopback destination, over a kept-alive connection.
 *
 * Steps: the floor; two `tokens.get` (what two expressions read); `client.proxy.invoke` with no
 * expression and with two; over HTTP, a token GET, then `/proxy` with no expression and with two.
 * The difference between two rows is what a step adds. Run: `npx tsx bench/proxy-steps.bench.ts`
 * (`BENCH_QUICK=1`: 300 calls a round; under 60 s either way).
 */
import { once } from 'node:events'
import { Agent, createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createHttpHandler, toNodeListener } from '../adapters/http/index.js'
import { memoryStore } from '../adapters/memory/index.js'
import { createService, systemClock } from '../entry/index.js'

const N = process.env['BENCH_QUICK'] === '1' ? 300 : 1500

const listen = async (server: Server) => {
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

const destination = createServer((req, res) => {
  req.resume()
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end('{"id":"ch_1","status":"succeeded"}')
  })
})

/** The ~1 KB JSON body of `bench/proxy.bench.ts`. */
function bodyOf(number: string, cvc: string): string {
  const filler = Object.fromEntries(
    Array.from({ length: 24 }, (_, i) => [`field_${i}`, `value-${i}-abcdefghij`]),
  )
  return JSON.stringify({ amount: 1999, currency: 'usd', card: { number, cvc }, metadata: filler })
}

const agent = new Agent({ keepAlive: true })

/** One request over the kept-alive agent, its answer read whole. */
function post(url: string, method: string, headers: Record<string, string>, body?: string) {
  return new Promise<void>((resolve, reject) => {
    const length = body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) }
    const req = request(url, { method, headers: { ...headers, ...length }, agent }, (res) => {
      res.resume()
      res.on('end', () =>
        (res.statusCode ?? 500) < 300 ? resolve() : reject(new Error(`status ${res.statusCode}`)),
      )
    })
    req.on('error', reject)
    req.end(body)
  })
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

async function main() {
  const origin = await listen(destination)
  const service = createService({ store: memoryStore(), clock: systemClock, runner: null, egress: [origin] })
  const tenant = await service.admin.createTenant({ name: 'bench' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'b',
    type: 'private',
    permissions: ['token:create', 'token:use', 'token:read'],
  })
  const client = service.connect(key)
  const card = await client.tokens.create({ type: 'token', data: '4242424242424242' })
  const cvc = await client.tokens.create({ type: 'token', data: '123' })
  const handler = createHttpHandler(service, { headerPrefix: 'BT', log: () => {}, maxInFlightPerTenant: 64 })
  const vault = createServer(toNodeListener(handler))
  const vaultUrl = await listen(vault)
  const plain = bodyOf('4242424242424242', '123')
  const proxied = bodyOf(`{{ ${card.id} }}`, `{{ ${cvc.id} }}`)
  const json = { 'content-type': 'application/json' }
  const invoke = (body: string) => () =>
    client.proxy.invoke({ method: 'POST', url: origin, path: '/v1/charges', headers: json, body })
  const viaHttp = (body: string) => () =>
    post(`${vaultUrl}/proxy/v1/charges`, 'POST', { ...json, 'BT-API-KEY': key, 'BT-PROXY-URL': origin }, body)
  const steps: [string, () => Promise<unknown>][] = [
    ['floor: raw node:http POST to the destination', () => post(`${origin}/v1/charges`, 'POST', json, plain)],
    ['two tokens.get', async () => [await client.tokens.get(card.id), await client.tokens.get(cvc.id)]],
    ['client.proxy.invoke, no expression', invoke(plain)],
    ['client.proxy.invoke, two expressions', invoke(proxied)],
    ['HTTP GET /tokens/:id', () => post(`${vaultUrl}/tokens/${card.id}`, 'GET', { 'BT-API-KEY': key })],
    ['HTTP /proxy, no expression', viaHttp(plain)],
    ['HTTP /proxy, two expressions', viaHttp(proxied)],
  ]
  const cpu = new Map<string, number[]>(steps.map(([name]) => [name, []]))
  for (let round = 0; round < 3; round++) {
    for (const [name, step] of steps) {
      const before = process.cpuUsage()
      for (let i = 0; i < N; i++) await step()
      const used = process.cpuUsage(before)
      if (round > 0) cpu.get(name)!.push((used.user + used.system) / N)
    }
  }
  const floor = median(cpu.get(steps[0]![0])!)
  for (const [name] of steps) {
    const us = median(cpu.get(name)!)
    console.log(
      `${name.padEnd(46)} ${us.toFixed(0).padStart(5)} µs CPU a call, ${(us / floor).toFixed(1)}× the floor`,
    )
  }
  vault.closeAllConnections()
  vault.close()
  destination.closeAllConnections()
  destination.close()
  agent.destroy()
  await service.close()
}

await main()

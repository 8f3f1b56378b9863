/**
 * What a page of large tokens costs the server's garbage collector: `GET /v2/tokens?size=100` over
 * tokens of about 900 KB (four to a 4 MiB page, as attack (b) of `bench/attacks.bench.ts` sends it),
 * served by the HTTP adapter on node:http over loopback and read whole by a client in this same
 * process, two pages in flight. Prints, per page, the collections seen (`PerformanceObserver`
 * `gc` entries: scavenges and mark-compacts, their count and pause) and this process's CPU time.
 * Counts per page hold on a busy machine; pauses and CPU time swing with it.
 *
 * `npx tsx bench/page-gc.bench.ts` (BENCH_PAGES, default 60; about 20 s with seeding).
 */
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { Agent, createServer, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { constants, PerformanceObserver } from 'node:perf_hooks'
import { createHttpHandler, toNodeListener } from '../adapters/http/index.js'
import { memoryStore } from '../adapters/memory/index.js'
import { createService, systemClock } from '../entry/index.js'

const PAGES = Number(process.env['BENCH_PAGES'] ?? 60)
const service = await createService({
  store: memoryStore(),
  clock: systemClock,
  masterKey: randomBytes(32),
  runner: null,
})
const tenant = await service.admin.createTenant({ name: 'a' })
const permissions = ['token:create' as const, 'token:read' as const]
const { key } = await service.admin.createApplication({
  tenantId: tenant.id,
  name: 'a',
  type: 'private',
  permissions,
  rules: [{ description: 'all', priority: 1, container: '/', transform: 'reveal', permissions }],
})
const client = service.connect(key)
for (let i = 0; i < 40; i++) await client.tokens.create({ type: 'big', data: `${i}`.padEnd(900_000, 'x') })
const server = createServer(toNodeListener(createHttpHandler(service, { log: () => {} })))
server.listen(0, '127.0.0.1')
await once(server, 'listening')
const { port } = server.address() as AddressInfo
const agent = new Agent({ keepAlive: true, maxSockets: 2 })

/** One page read whole: its bytes. */
const page = () =>
  new Promise<number>((resolve, reject) => {
    const headers = { 'svc-api-key': key }
    const req = request({ host: '127.0.0.1', port, path: '/v2/tokens?size=100', agent, headers }, (res) => {
      let bytes = 0
      res.on('data', (chunk: Buffer) => (bytes += chunk.length))
      res.on('end', () => resolve(bytes))
    })
    req.on('error', reject)
    req.end()
  })

for (let i = 0; i < 6; i++) await page()
const seen: { kind: number; ms: number }[] = []
const observer = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    seen.push({ kind: (entry as unknown as { detail: { kind: number } }).detail.kind, ms: entry.duration })
  }
})
observer.observe({ entryTypes: ['gc'] })
const cpu = process.cpuUsage()
let bytes = 0
for (let i = 0; i < PAGES; i += 2) bytes += (await Promise.all([page(), page()])).reduce((x, y) => x + y)
const used = process.cpuUsage(cpu)
await new Promise((resolve) => setTimeout(resolve, 100))
observer.disconnect()
const per = (n: number) => (n / PAGES).toFixed(2)
const of = (kind: number) => {
  const pauses = seen.filter((g) => g.kind === kind).map((g) => g.ms)
  const sum = pauses.reduce((x, y) => x + y, 0)
  return `${per(pauses.length)} a page (${per(sum)} ms a page, longest ${Math.max(0, ...pauses).toFixed(1)} ms)`
}
console.log(`${PAGES} pages of ${(bytes / PAGES / 1e6).toFixed(2)} MB`)
console.log(`scavenges: ${of(constants.NODE_PERFORMANCE_GC_MINOR)}`)
console.log(`mark-compacts: ${of(constants.NODE_PERFORMANCE_GC_MAJOR)}`)
console.log(
  `CPU time of this process (server and client): ${per((used.user + used.system) / 1000)} ms a page`,
)
agent.destroy()
server.close()
await service.close()

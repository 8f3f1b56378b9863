/**
 * What test mode's request log costs a GET: `GET /tokens/{id}` through the fetch handler of a
 * test-mode service with the request log (every exchange recorded with its journal entries and
 * access traces), against the same handler of the same kind of service without test mode (no log,
 * no traces): the floor. Goal: the ratio stays ≤ 1.10.
 *
 * Both servers hold the same token, read by a private application whose rules mask it (a masked
 * read: its trace is kept). Rounds alternate between the two so a busy shared machine slows both
 * alike, and which of the two goes first alternates too (the garbage one leaves is collected in the
 * other's time); each round's time is this process's CPU time (user + system) for `GETS` requests.
 * Printed: the median of each and their ratio, and the median of the rounds' own ratios (each round
 * against its neighbour, measured within a few milliseconds of it: what a shared machine's swings
 * move least; many short rounds, since at load 11–19 one round of 300 GETs ranged 0.6–2.0× its
 * neighbour).
 * Run: `npm run bench:requests` (under 60 s).
 */

import { createHttpHandler } from '../adapters/http/index.js'
import { RequestLog } from '../adapters/http/request-log.js'
import { memoryStore } from '../adapters/memory/index.js'
import { createService } from '../entry/index.js'
import { manualClock } from '../src/kernel/clock.js'

const GETS = Number(process.env['BENCH_GETS'] ?? 100)
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 101)
/** Alternating rounds of each run first and not counted (the JIT's tiers, the first entries kept). */
const WARM_ROUNDS = 10

async function server(testMode: boolean) {
  const clock = manualClock('2030-01-01T00:00:00.000Z')
  const base = { store: memoryStore(), clock, runner: null, masterKey: Buffer.alloc(32, 7) }
  const service = testMode ? createService({ ...base, testMode: true }) : createService(base)
  const tenant = await service.admin.createTenant({ name: 'bench' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'reader',
    type: 'private',
    permissions: ['token:create', 'token:read'],
    rules: [
      {
        description: 'all',
        priority: 1,
        container: '/',
        transform: 'mask',
        permissions: ['token:create', 'token:read'],
      },
    ],
  })
  const token = await service.connect(key).tokens.create({ type: 'token', data: 'secret', mask: 'masked' })
  const requestLog = testMode ? new RequestLog({ now: () => clock.now() }) : undefined
  const handler = createHttpHandler(service, requestLog ? { requestLog } : {})
  const url = `http://vault/tokens/${token.id}`
  const headers = { 'svc-api-key': key }
  return {
    async round(): Promise<number> {
      const t = process.cpuUsage()
      for (let i = 0; i < GETS; i++) {
        const response = await handler(new Request(url, { headers }))
        if (response.status !== 200) throw new Error(`GET answered ${response.status}`)
        await response.arrayBuffer()
      }
      const used = process.cpuUsage(t)
      return (used.user + used.system) / 1000
    },
    close: () => service.close(),
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const plain = await server(false)
const logged = await server(true)
for (let r = 0; r < WARM_ROUNDS; r++) {
  await plain.round()
  await logged.round()
}
const floor: number[] = []
const test: number[] = []
const pairs: number[] = []
for (let r = 0; r < ROUNDS; r++) {
  const first = r % 2 === 0 ? plain : logged
  const a = await first.round()
  const b = await (first === plain ? logged : plain).round()
  const [f, t] = first === plain ? [a, b] : [b, a]
  floor.push(f)
  test.push(t)
  pairs.push(t / f)
}
const f = median(floor)
const t = median(test)
console.log(`GET /tokens/{id} ×${GETS}, median CPU ms of ${ROUNDS} alternating rounds`)
console.log(`  without test mode (floor): ${f.toFixed(1)} ms (${((f / GETS) * 1000).toFixed(1)} µs a GET)`)
console.log(`  test mode, request log:    ${t.toFixed(1)} ms (${((t / GETS) * 1000).toFixed(1)} µs a GET)`)
console.log(`  ratio: ${(t / f).toFixed(3)} (goal ≤ 1.10)`)
console.log(`  median of the rounds' ratios: ${median(pairs).toFixed(3)}`)
await plain.close()
await logged.close()

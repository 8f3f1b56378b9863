/**
 * What a request's client costs the HTTP handler: a client connected per request (what the handler
 * did for every request with a request id, a transaction or the request log's recorder) against a
 * view of a kept client (`client.withCall`, what it does now), each with the `tokens` area a GET
 * uses built. Rounds alternate so a busy shared machine slows both alike. Printed: µs each (median
 * of the rounds) and the ratio view / connect with its range. Run (about 30 s):
 * `node --import tsx bench/call-view.bench.ts`. Under tsx each closure made is also named
 * (esbuild's keepNames), which the built package does not pay: the figures are tsx's.
 */
import { memoryStore } from '../adapters/memory/index.js'
import { createService } from '../entry/index.js'
import { manualClock } from '../src/kernel/clock.js'

const N = Number(process.env['BENCH_VIEWS'] ?? 100_000)
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 7)
const service = createService({
  store: memoryStore(),
  clock: manualClock('2030-01-01T00:00:00.000Z'),
  runner: null,
  masterKey: Buffer.alloc(32, 7),
})
const key = 'key_abcdefghijklmnopqrstuvwxyz0123456789'
const kept = service.connect(key)

/** µs per iteration of `make` over N iterations. */
function time(make: (i: number) => unknown): number {
  const t = performance.now()
  for (let i = 0; i < N; i++) make(i)
  return ((performance.now() - t) / N) * 1000
}

const connectEach = (i: number) => service.connect(key, { requestId: `r${i}` }).tokens
const viewEach = (i: number) => kept.withCall({ requestId: `r${i}` }).tokens
time(connectEach)
time(viewEach)
const connects: number[] = []
const views: number[] = []
for (let r = 0; r < ROUNDS; r++) {
  connects.push(time(connectEach))
  views.push(time(viewEach))
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const ratios = views.map((v, r) => v / connects[r]!)
console.log(`a request's client (tokens area built), median of ${ROUNDS} alternating rounds of ${N}`)
console.log(`  connected per request:    ${median(connects).toFixed(2)} µs`)
console.log(`  view of a kept client:    ${median(views).toFixed(2)} µs`)
console.log(
  `  ratio view / connect: ${median(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`,
)
await service.close()

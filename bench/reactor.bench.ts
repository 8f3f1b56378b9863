import { memoryStore } from '../adapters/memory/index.js'
import { workerRunner } from '../adapters/sandbox/index.js'
import { createService, manualClock } from '../src/index.js'
import type { FormulaRequest } from '../src/runner.js'
import { type BenchOptions, type BenchRow, inFlight } from './harness.js'

const GOAL = 'overhead < 100 µs at 64 in flight'
const SOURCE =
  'async function (req) { return { raw: { sum: req.args.a + req.args.b, region: req.configuration.region } } }'

/** A vault whose one reactor runs a trivial formula, a client that may react, and the same function in-process. */
export async function reactorFixture() {
  const service = createService({ store: memoryStore(), clock: manualClock(), runner: workerRunner() })
  const tenant = await service.admin.createTenant({ name: 'bench' })
  const app = async (type: 'private' | 'management', permissions: string[]) =>
    (await service.admin.createApplication({ tenantId: tenant.id, name: type, type, permissions })).key
  const admin = service.connect(await app('management', ['reactor:create']))
  const client = service.connect(await app('private', ['token:use']))
  const formula = await admin.reactorFormulas.create({
    name: 'sum',
    type: 'private',
    code: `module.exports = ${SOURCE}`,
    configuration: [{ name: 'region', type: 'string' }],
    request_parameters: [],
  })
  const reactor = await admin.reactors.create({
    name: 'sum',
    formula_id: formula.id,
    configuration: { region: 'eu' },
  })
  const plain = new Function(`return ${SOURCE}`)() as (req: FormulaRequest) => Promise<unknown>
  const request: FormulaRequest = { args: { a: 1, b: 2 }, configuration: { region: 'eu' } }
  return {
    service,
    react: () => client.reactors.react(reactor.id, { args: { a: 1, b: 2 } }),
    plain: () => plain(request),
  }
}

/**
 * Invocations per second of a trivial formula through `client.reactors.react` (auth, store reads,
 * args checks, a round trip to a sandbox process) with 1 and 64 calls in flight, against a plain
 * in-process call of the same function, in alternating rounds of the same run. The overhead is the
 * time per invocation beyond the plain call, in µs.
 */
export async function run(opts: BenchOptions): Promise<BenchRow[]> {
  const { service, react, plain } = await reactorFixture()
  const rounds = opts.quick ? 3 : 7
  const rows: BenchRow[] = []
  try {
    for (let i = 0; i < 200; i++) await react()
    for (const concurrency of [1, 64]) {
      const total = (opts.quick ? 1000 : 4000) * (concurrency === 1 ? 1 : 4)
      const ops: number[] = []
      const base: number[] = []
      for (let r = 0; r < rounds; r++) {
        ops.push(await inFlight(react, concurrency, total))
        base.push(await inFlight(plain, concurrency, total * 20))
      }
      const med = (xs: number[]) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)]!
      const opRate = med(ops)
      const baseRate = med(base)
      const overheadUs = (1 / opRate - 1 / baseRate) * 1e6
      rows.push({
        group: 'reactor',
        operation: `reactors.react, ${concurrency} in flight`,
        opsPerSec: opRate,
        baseline: 'the same function called in-process',
        baselineOpsPerSec: baseRate,
        ratio: baseRate / opRate,
        goal: concurrency === 64 ? GOAL : '',
        note: `overhead ${overheadUs.toFixed(1)} µs per invocation`,
      })
    }
  } finally {
    await service.close()
  }
  return rows
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import('./report.js')
  printRows(await run({ quick: process.env.BENCH_QUICK === '1' }))
}

import { createHash, createHmac } from 'node:crypto'
import { Worker } from 'node:worker_threads'
import type { SandboxRunnerOptions } from '../adapters/sandbox/index.js'
import type { Permission } from '../entry/index.js'
import type { FormulaRequest, FormulaRunner } from '../src/kernel/runner.js'
import { built } from './built.js'
import { type BenchOptions, type BenchRow, compare, inFlight } from './harness.js'

const SOURCE =
  'async function (req) { return { raw: { sum: req.args.a + req.args.b, region: req.configuration.region } } }'
const BOMBS = [
  'const a = new Array(1e9); a.fill(0); return { raw: a.length }',
  'let s = "xx"; for (;;) s += s',
  'const a = []; for (;;) a.push("x".repeat(1024) + a.length)',
]
const MIB = 1024 * 1024

/** The sandbox runner as users get it: the compiled one in `dist/` (see `bench/built.ts`). */
async function loadRunner(): Promise<{
  make: (options?: SandboxRunnerOptions) => FormulaRunner
  from: string
}> {
  const { sandbox } = await built()
  return { make: (options) => sandbox.sandboxRunner(options), from: 'dist' }
}

/** A vault with one reactor per tenant (two tenants) running `code`, and clients that may react. */
export async function reactorFixture(runner: FormulaRunner, code = `module.exports = ${SOURCE}`) {
  // The service as an application runs it: the built package (see `bench/built.ts`).
  const {
    entry: { createService, manualClock },
    memory: { memoryStore },
  } = await built()
  const service = createService({ store: memoryStore(), clock: manualClock(), runner })
  const tenant = async (name: string) => {
    const t = await service.admin.createTenant({ name })
    const app = async (type: 'private' | 'management', permissions: Permission[]) =>
      (await service.admin.createApplication({ tenantId: t.id, name: type, type, permissions })).key
    const admin = service.connect(await app('management', ['reactor:create']))
    const client = service.connect(await app('private', ['token:use']))
    const formula = await admin.reactorFormulas.create({
      name: 'sum',
      type: 'private',
      code,
      configuration: [{ name: 'region', type: 'string' }],
      request_parameters: [],
    })
    const reactor = await admin.reactors.create({
      name: 'sum',
      formula_id: formula.id,
      configuration: { region: 'eu' },
    })
    return () => client.reactors.react(reactor.id, { args: { a: 1, b: 2 } })
  }
  return { service, reacts: [await tenant('a'), await tenant('b')] }
}

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!

/**
 * The floor of a thread hop: `count` bare worker threads that answer each message at once, and a
 * call that sends one a message and waits for its answer (turn by turn between them). What a
 * sandbox run costs at least on this machine, under its load of the moment, before any engine.
 */
async function echoes(count: number): Promise<{ hop: () => Promise<unknown>; close: () => Promise<void> }> {
  const workers = Array.from(
    { length: count },
    () =>
      new Worker(
        "const { parentPort } = require('node:worker_threads'); parentPort.on('message', (m) => parentPort.postMessage(m))",
        { eval: true, execArgv: [] },
      ),
  )
  const waiting = new Map<number, () => void>()
  for (const w of workers) w.on('message', (id: number) => waiting.get(id)?.())
  let next = 0
  const hop = () =>
    new Promise<void>((resolve) => {
      const id = next++
      waiting.set(id, () => {
        waiting.delete(id)
        resolve()
      })
      workers[id % count]!.postMessage(id)
    })
  await Promise.all(workers.map(() => hop()))
  return { hop, close: async () => void (await Promise.all(workers.map((w) => w.terminate()))) }
}

/**
 * The idle watch (`idleSpinUs`) off against its default, in alternating rounds on two services:
 * the p50 latency at 1 in flight and the reacts/s at 64 in flight over 2 tenants.
 */
async function watchOff(
  make: (options?: SandboxRunnerOptions) => FormulaRunner,
  opts: BenchOptions,
): Promise<BenchRow> {
  const on = await reactorFixture(make())
  const off = await reactorFixture(make({ idleSpinUs: 0 }))
  try {
    const sides = [on, off].map(({ reacts }) => {
      let turn = 0
      return { reacts, spread: () => reacts[turn++ % 2]!(), p50: [] as number[], rate: [] as number[] }
    })
    for (const side of sides) for (let i = 0; i < (opts.quick ? 300 : 3000); i++) await side.reacts[i % 2]!()
    for (let r = 0; r < (opts.quick ? 1 : 3); r++) {
      for (const side of sides) {
        side.p50.push(median(await latencies(side.reacts[0]!, opts.quick ? 300 : 1000)))
        side.rate.push(await inFlight(side.spread, 64, opts.quick ? 4000 : 20_000))
      }
    }
    const [watching, sleeping] = sides.map((side) => ({ p50: median(side.p50), rate: median(side.rate) }))
    return {
      group: 'reactor',
      operation: 'reactors.react with the idle watch off (idleSpinUs: 0), 1 in flight',
      opsPerSec: 1e6 / sleeping!.p50,
      baseline: 'the same with the watch on (its default, 200 µs)',
      baselineOpsPerSec: 1e6 / watching!.p50,
      ratio: sleeping!.p50 / watching!.p50,
      goal: '—',
      note: `p50 ${sleeping!.p50.toFixed(0)} µs off vs ${watching!.p50.toFixed(0)} µs on; 64 in flight over 2 tenants ${Math.round(sleeping!.rate)} vs ${Math.round(watching!.rate)} reacts/s (medians of alternating rounds)`,
    }
  } finally {
    await on.service.close()
    await off.service.close()
  }
}

/** Per-call latencies (µs) of `fn`, one call in flight. */
async function latencies(fn: () => Promise<unknown>, n: number): Promise<number[]> {
  const out: number[] = []
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    await fn()
    out.push((performance.now() - t) * 1000)
  }
  return out
}

/**
 * The sandbox runner (QuickJS in WebAssembly, worker threads, a fresh context per run) against a
 * plain in-process call of the same function, in the same run:
 * - warm `react` overhead at 1 in flight (p50 latency minus the plain call's);
 * - throughput at 64 in flight, spread over 2 tenants;
 * - the first react after the service starts (loads the engine and starts the workers);
 * - the host's peak RSS over idle while memory bombs run on every worker.
 */
export async function run(opts: BenchOptions): Promise<BenchRow[]> {
  const { make, from } = await loadRunner()
  const rows: BenchRow[] = []
  const plain = new Function(`return ${SOURCE}`)() as (req: FormulaRequest) => Promise<unknown>
  const request: FormulaRequest = { args: { a: 1, b: 2 }, configuration: { region: 'eu' } }
  const plainCall = () => plain(request)

  // First react after start.
  const firsts: number[] = []
  for (let i = 0; i < (opts.quick ? 2 : 5); i++) {
    const { service, reacts } = await reactorFixture(make())
    const t = performance.now()
    await reacts[0]!()
    firsts.push(performance.now() - t)
    await service.close()
  }
  const first = median(firsts)
  rows.push({
    group: 'reactor',
    operation: `first react after start (${from})`,
    opsPerSec: 1000 / first,
    baseline: 'the same function called in-process',
    baselineOpsPerSec: 1000 / ((await latencies(plainCall, 1))[0]! / 1000),
    ratio: Number.NaN,
    goal: '≤ 100 ms',
    note: `${first.toFixed(0)} ms (median of ${firsts.length})`,
  })

  const { service, reacts } = await reactorFixture(make())
  const floor = await echoes(2)
  try {
    for (let i = 0; i < (opts.quick ? 300 : 3000); i++) await reacts[i % 2]!()
    const n = opts.quick ? 500 : 3000
    const before = process.cpuUsage()
    const ours = await latencies(reacts[0]!, n)
    const used = process.cpuUsage(before)
    const cpuOne = (used.user + used.system) / n
    const base = await latencies(plainCall, n)
    const hops = await latencies(floor.hop, n)
    const p50 = median(ours) - median(base)
    const p99 = [...ours].sort((x, y) => x - y)[Math.floor(n * 0.99)]!
    rows.push({
      group: 'reactor',
      operation: 'warm reactors.react, 1 in flight',
      opsPerSec: 1e6 / median(ours),
      baseline: 'the same function called in-process',
      baselineOpsPerSec: 1e6 / median(base),
      ratio: median(ours) / median(base),
      goal: 'p50 overhead ≤ 150 µs',
      note: `p50 overhead ${p50.toFixed(0)} µs, p99 ${p99.toFixed(0)} µs, ${cpuOne.toFixed(0)} µs of CPU per react (every thread); floor: a bare thread hop ${median(hops).toFixed(0)} µs p50 in the same run`,
    })

    const total = opts.quick ? 4000 : 20_000
    let turn = 0
    const spread = () => reacts[turn++ % 2]!()
    const rates: number[] = []
    const baseRates: number[] = []
    const hopRates: number[] = []
    const cpu: number[] = []
    for (let r = 0; r < (opts.quick ? 2 : 5); r++) {
      const before = process.cpuUsage()
      rates.push(await inFlight(spread, 64, total))
      const used = process.cpuUsage(before)
      cpu.push((used.user + used.system) / total)
      baseRates.push(await inFlight(plainCall, 64, total * 10))
      hopRates.push(await inFlight(floor.hop, 64, total))
    }
    const rate = median(rates)
    rows.push({
      group: 'reactor',
      operation: 'reactors.react, 64 in flight over 2 tenants',
      opsPerSec: rate,
      baseline: 'the same function called in-process',
      baselineOpsPerSec: median(baseRates),
      ratio: median(baseRates) / rate,
      goal: '≥ 10 000 reacts/s',
      note: `${Math.round(rate)} reacts/s, ${median(cpu).toFixed(0)} µs of CPU per react (every thread); floor: bare thread hops to 2 workers ${Math.round(median(hopRates))}/s in the same run`,
    })
  } finally {
    await floor.close()
    await service.close()
  }

  rows.push(await watchOff(make, opts))
  rows.push(...(await digests(make)))
  rows.push(await engineRuns(opts))

  // Memory bombs on every worker at once: the host's RSS over idle.
  const bombed = await reactorFixture(make())
  const bombRunner = bombed.service
  try {
    await bombed.reacts[0]!()
    const idle = process.memoryUsage().rss
    let peak = idle
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss)
    }, 2)
    for (const bomb of BOMBS) {
      const { service: s, reacts: r } = await reactorFixture(
        make(),
        `module.exports = async () => { ${bomb} }`,
      )
      await Promise.all([0, 1, 0, 1].map((i) => r[i]!().catch(() => undefined)))
      await s.close()
    }
    clearInterval(sampler)
    rows.push({
      group: 'reactor',
      operation: 'host peak RSS while memory bombs run',
      opsPerSec: Number.NaN,
      baseline: 'the idle host',
      baselineOpsPerSec: Number.NaN,
      ratio: Number.NaN,
      goal: '≤ 512 MiB over idle',
      note: `${((peak - idle) / MIB).toFixed(0)} MiB over idle (${BOMBS.length} bombs, 2 workers each)`,
    })
  } finally {
    await bombRunner.close()
  }
  return rows
}

/**
 * One engine alone (no worker, no service), as a worker runs it: a trivial formula's run (its code
 * compiled afresh, as every run does) and the restore after it, against the same function called in
 * process.
 */
async function engineRuns(opts: BenchOptions): Promise<BenchRow> {
  const { Engine } = (await import(
    new URL('../dist/adapters/sandbox/engine.js', import.meta.url).href
  )) as typeof import('../adapters/sandbox/engine.js')
  const engine = await Engine.load(64, 1_048_576)
  const request = JSON.stringify({ args: { a: 1, b: 2 }, configuration: { region: 'eu' } })
  const code = `module.exports = ${SOURCE}`
  const run = async () => {
    const result = await engine.run(code, request, 5000)
    engine.prepare()
    if (!result.ok) throw new Error(result.message)
  }
  const plain = new Function(`return ${SOURCE}`)() as (req: unknown) => Promise<unknown>
  const direct = () => plain(JSON.parse(request))
  const { op, baseline, ratio } = await compare(run, direct, { rounds: opts.quick ? 3 : 7, ms: 200 })
  return {
    group: 'reactor',
    operation: 'one engine: a trivial run (its code compiled) and its restore',
    opsPerSec: op,
    baseline: 'the same function called in process',
    baselineOpsPerSec: baseline,
    ratio,
    goal: '—',
    note: `${(1e6 / op).toFixed(1)} µs per run`,
  }
}

/**
 * SHA-256 and HMAC-SHA-512 of 1 MB inside a formula (timed inside it, over `rounds` digests) against
 * `node:crypto` on the same bytes in the host.
 */
async function digests(make: () => FormulaRunner): Promise<BenchRow[]> {
  const rows: BenchRow[] = []
  const runner = make()
  const rounds = 50
  const bytes = Buffer.alloc(MIB, 'abc')
  const cases: [string, string, () => string][] = [
    [
      'SHA-256',
      `c.createHash('sha256').update(big).digest('hex')`,
      () => createHash('sha256').update(bytes).digest('hex'),
    ],
    [
      'HMAC-SHA-512',
      `c.createHmac('sha512', 'key').update(big).digest('hex')`,
      () => createHmac('sha512', 'key').update(bytes).digest('hex'),
    ],
  ]
  try {
    for (const [name, call, host] of cases) {
      const code = `module.exports = async () => {
        const c = require('crypto'), big = Buffer.alloc(${MIB}, 'abc'), first = ${call}
        const t = Date.now()
        for (let i = 0; i < ${rounds}; i++) ${call}
        return { ms: (Date.now() - t) / ${rounds}, first }
      }`
      const outcome = await runner.run(code, { args: {}, configuration: {} }, { timeoutMs: 60_000 })
      if (!outcome.ok) throw new Error(`${name}: ${outcome.message}`)
      const { ms, first } = outcome.value as { ms: number; first: string }
      if (first !== host()) throw new Error(`${name}: the formula's digest differs from node:crypto's`)
      host()
      const t = performance.now()
      for (let i = 0; i < rounds; i++) host()
      const hostMs = (performance.now() - t) / rounds
      rows.push({
        group: 'reactor',
        operation: `${name} of 1 MB inside a formula`,
        opsPerSec: 1000 / ms,
        baseline: 'node:crypto on the same bytes',
        baselineOpsPerSec: 1000 / hostMs,
        ratio: ms / hostMs,
        goal: '≤ 3× node:crypto',
        note: `${ms.toFixed(2)} ms against ${hostMs.toFixed(2)} ms`,
      })
    }
  } finally {
    await runner.close()
  }
  return rows
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import('./report.js')
  printRows(await run({ quick: process.env.BENCH_QUICK === '1' }))
}

/**
 * `npm run bench`: runs every benchmark in bench/ and writes bench/results.md, one table whose rows
 * are an operation, its ops/s, its baseline measured in the same run, and the ratio.
 * `BENCH_QUICK=1` runs a short smoke version; `BENCH_ONLY=core,http` picks benchmarks.
 */
import { writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import type { BenchOptions, BenchRow } from './harness.js'
import { table } from './report.js'

const BENCHES = [
  'core',
  'scaling',
  'reactor',
  'http',
  'file',
  'postgres',
  'encryption',
  'keyring',
  'budgets',
] as const

const opts: BenchOptions = { quick: process.env.BENCH_QUICK === '1' }
const only = process.env.BENCH_ONLY?.split(',')
const rows: BenchRow[] = []
const skipped: string[] = []
const started = performance.now()
for (const name of BENCHES) {
  if (only && !only.includes(name)) continue
  const t0 = performance.now()
  try {
    const mod = (await import(`./${name}.bench.js`)) as { run(o: BenchOptions): Promise<BenchRow[]> }
    const got = await mod.run(opts)
    rows.push(...got)
    if (got.length === 0) skipped.push(`${name} (no rows: see its output)`)
  } catch (error) {
    skipped.push(`${name} (${(error as Error).message.split('\n')[0]})`)
  }
  console.error(`bench ${name}: ${((performance.now() - t0) / 1000).toFixed(1)} s`)
}

const cpu = cpus()[0]?.model ?? 'unknown CPU'
const doc = [
  '# Benchmark results',
  '',
  `Machine: ${cpus().length} × ${cpu}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}.`,
  `Command: \`npm run bench\`${opts.quick ? ' (BENCH_QUICK=1)' : ''}; ran ${((performance.now() - started) / 1000).toFixed(0)} s.`,
  'Ratio = time per op relative to the baseline measured in the same process and run (1.00× = as fast).',
  '',
  table(rows),
  '',
  ...(skipped.length ? [`Not measured: ${skipped.join('; ')}.`, ''] : []),
].join('\n')
writeFileSync(new URL('./results.md', import.meta.url), doc)
console.log(doc)
process.exit(0)

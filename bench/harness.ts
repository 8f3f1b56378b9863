/**
 * A small benchmark harness: each benchmark measures an operation against its baseline in the same
 * process and the same run, interleaving rounds so that machine noise hits both alike, and reports
 * the ratio. Bench files export `run(options)` returning rows; `bench/run.ts` runs them all.
 */

/** One row of `bench/results.md`. `ratio` is baseline ops/s over operation ops/s (time per op, relative). */
export interface BenchRow {
  group: string
  operation: string
  opsPerSec: number
  baseline: string
  baselineOpsPerSec: number
  /** How many times slower than the baseline the operation is (1 = as fast). */
  ratio: number
  goal?: string
  /** Free text: p99, memory, etc. */
  note?: string
}

export interface BenchOptions {
  /** Scale factor for iteration counts; `BENCH_QUICK=1` uses a small one for smoke runs. */
  quick: boolean
}

/** Runs `fn` repeatedly for about `ms` milliseconds and returns operations per second. */
export async function opsPerSec(
  fn: () => unknown | Promise<unknown>,
  ms: number,
  batch = 1,
): Promise<number> {
  const start = performance.now()
  let n = 0
  let now = start
  while (now - start < ms) {
    await fn()
    n += batch
    now = performance.now()
  }
  return (n * 1000) / (now - start)
}

/**
 * Measures `op` and `baseline` in alternating rounds (`rounds` each of `ms` ms) after a warm-up,
 * and returns the median ops/s of each.
 */
export async function compare(
  op: () => unknown | Promise<unknown>,
  baseline: () => unknown | Promise<unknown>,
  { rounds = 5, ms = 200, batch = 1 }: { rounds?: number; ms?: number; batch?: number } = {},
): Promise<{ op: number; baseline: number; ratio: number }> {
  await opsPerSec(op, ms / 2, batch)
  await opsPerSec(baseline, ms / 2, batch)
  const a: number[] = []
  const b: number[] = []
  for (let i = 0; i < rounds; i++) {
    a.push(await opsPerSec(op, ms, batch))
    b.push(await opsPerSec(baseline, ms, batch))
  }
  const med = (xs: number[]) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)]!
  const opRate = med(a)
  const baseRate = med(b)
  return { op: opRate, baseline: baseRate, ratio: baseRate / opRate }
}

/** Runs `fn` with `concurrency` calls in flight until `total` calls have finished; returns ops/s. */
export async function inFlight(
  fn: () => Promise<unknown>,
  concurrency: number,
  total: number,
): Promise<number> {
  let started = 0
  const start = performance.now()
  const worker = async () => {
    while (started < total) {
      started++
      await fn()
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return (total * 1000) / (performance.now() - start)
}

/**
 * How long one request's expressions can hold the event loop: for each hostile shape (a mask of
 * 20 000 templates, each spending what it can), the time to spend the whole expression budget and be
 * refused, against the floor of serializing as many characters of token data as a detokenize
 * answer may hold (what the vault does anyway for its largest allowed answer).
 * `npx tsx bench/budgets.bench.ts`.
 */

import { applyMask } from '../src/expressions/index.js'
import { expressionBudget } from '../src/kernel/budget.js'
import type { Json } from '../src/kernel/types.js'
import type { BenchOptions, BenchRow } from './harness.js'

const text = 'a1'.repeat(25_000)
let deep: Json = 'leaf'
for (let i = 0; i < 60; i++) deep = { a: deep, b: [i, { c: i }] }
const objects: Json = Array.from({ length: 5000 }, (_, i) => ({ i, s: 'abc'.repeat(5) }))

/** Each hostile template and the data it runs on. */
const SHAPES: [string, string, Json][] = [
  ['pad_left 999999', '{{ data | pad_left: 999999 }}', 'x'],
  ['reveal', '{{ data | reveal: 2, 2 }}', text],
  ['card_mask', '{{ data | card_mask }}', text],
  ['alias_preserve_format', '{{ data | alias_preserve_format }}', text],
  ['replace every character', "{{ data | replace: '', '' }}", text],
  ["split '' then join", "{{ data | split: '' | join: '' | size }}", text],
  ["split '' then sort", "{{ data | split: '' | sort | size }}", text.slice(0, 10_000)],
  ["split '' then uniq", "{{ data | split: '' | uniq | size }}", text.slice(0, 25_000)],
  ['uniq of objects', '{{ data | uniq | size }}', objects],
  ['sort of objects', '{{ data | sort | size }}', objects],
  ['{{ data }} repeated', '{{ data }}', objects],
  ['stringify', '{{ data | stringify }}', objects],
  ['JSON Path $..*..*..*..*..*', '{{ data | json: "$..*..*..*..*..*" }}', deep],
  ['JSON Path filter', '{{ data | json: "$..[?(@.a == 1)]" }}', deep],
  ['hmac', "{{ data | hmac: 'sha-256', 'k' | to_base64 }}", text],
  ['{{ data }} on a tiny value', '{{ data }}', 'x'],
  // The most replacements the budget lets `escape` finish (3.9 million units with its answer).
  ['escape of 170 000 `<`', '{{ data | escape }}', '<a'.repeat(170_000)],
  ['escape_once of 1 000 000 `&`', '{{ data | escape_once }}', '&'.repeat(1_000_000)],
]

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/**
 * Milliseconds of CPU time (user + system) of one run of `f`, median of `n` after one warm-up: on a
 * shared machine, CPU time is what a run would hold an idle event loop for.
 */
function timed(f: () => void, n: number): number {
  f()
  const times: number[] = []
  for (let i = 0; i < n; i++) {
    const t0 = process.cpuUsage()
    f()
    const used = process.cpuUsage(t0)
    times.push((used.user + used.system) / 1000)
  }
  return median(times)
}

export async function run(opts: BenchOptions): Promise<BenchRow[]> {
  const n = opts.quick ? 3 : 9
  const answer = Array.from({ length: 8 }, () => 'p'.repeat(524_286))
  const floor = timed(() => JSON.stringify(answer), n)
  const rows: BenchRow[] = []
  for (const [name, template, data] of SHAPES) {
    const mask = Array.from({ length: 20_000 }, () => template)
    let refused = false
    const ms = timed(() => {
      try {
        applyMask(mask, data, 'mask', expressionBudget())
      } catch {
        refused = true
      }
    }, n)
    rows.push({
      group: 'budgets',
      operation: `a mask spending the whole expression budget: ${name}`,
      opsPerSec: 1000 / ms,
      baseline: 'JSON.stringify of a 4 MiB detokenize answer',
      baselineOpsPerSec: 1000 / floor,
      ratio: ms / floor,
      goal: '≤ 50 ms',
      note: `${ms.toFixed(1)} ms${refused ? ', refused' : ''}`,
    })
  }
  return rows
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import('./report.js')
  printRows(await run({ quick: process.env.BENCH_QUICK === '1' }))
}

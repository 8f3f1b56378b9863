import type { BenchRow } from './harness.js'

const fmt = (n: number) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2))

/** The rows as a markdown table. */
export function table(rows: BenchRow[]): string {
  const lines = [
    '| group | operation | ops/s | baseline | baseline ops/s | ratio (time vs baseline) | goal | note |',
    '|---|---|---:|---|---:|---:|---|---|',
  ]
  for (const r of rows) {
    lines.push(
      `| ${r.group} | ${r.operation} | ${fmt(r.opsPerSec)} | ${r.baseline} | ${fmt(r.baselineOpsPerSec)} | ${r.ratio.toFixed(2)}× | ${r.goal ?? ''} | ${r.note ?? ''} |`,
    )
  }
  return lines.join('\n')
}

/** Prints the rows as a markdown table on stdout. */
export function printRows(rows: BenchRow[]): void {
  console.log(table(rows))
}

import type { RecoveryProgress } from '../adapters/file/index.js'

/**
 * The CLI's view of a file store opening: once it has taken `afterMs` (default 1 s), a line
 * `recovering: 40 % (120.0 of 300.0 MiB, 1.2 s)` at most once a second, and a last one at 100 %.
 * Quick opens print nothing. `now` is the clock, in ms.
 */
export function recoveryReporter(
  log: (line: string) => void,
  now: () => number = () => performance.now(),
  afterMs = 1000,
): (progress: RecoveryProgress) => void {
  const started = now()
  let printed = -Infinity
  return ({ bytesRead, totalBytes }) => {
    const at = now()
    const done = bytesRead >= totalBytes
    if (at - started < afterMs) return
    if (!done && at - printed < 1000) return
    printed = at
    const percent = totalBytes > 0 ? Math.floor((bytesRead / totalBytes) * 100) : 100
    const mib = (n: number) => (n / 2 ** 20).toFixed(1)
    log(
      `recovering: ${percent} % (${mib(bytesRead)} of ${mib(totalBytes)} MiB, ${((at - started) / 1000).toFixed(1)} s)`,
    )
  }
}

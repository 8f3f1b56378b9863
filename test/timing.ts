/**
 * Cost claims for the slow suite, on a machine shared with other work. A claim is never "took less
 * than N ms": it compares the CPU time of the work with the CPU time of a fixed reference workload
 * measured in the same process, so a slower or busier machine scales both. CPU time (user +
 * system, `process.cpuUsage`) is what a run would hold an idle event loop for; wall-clock time on a
 * loaded machine also counts the time the thread waited for a core. The slow project runs one file
 * per process, one at a time, so the process's CPU time is the test's own.
 */

/** Milliseconds of CPU time this process spent while `f` ran (user + system). */
export function cpuMs(f: () => unknown): number {
  const before = process.cpuUsage()
  f()
  const used = process.cpuUsage(before)
  return (used.user + used.system) / 1000
}

/** Milliseconds of CPU time this process spent while `f`'s promise was pending. */
export async function cpuMsOf(f: () => Promise<unknown>): Promise<number> {
  const before = process.cpuUsage()
  await f()
  const used = process.cpuUsage(before)
  return (used.user + used.system) / 1000
}

/**
 * The least CPU time of `runs` runs of `f` (ms): the run least disturbed by the garbage collector
 * and by other threads of the process.
 */
export function leastCpuMs(f: () => unknown, runs = 3): number {
  let least = Number.POSITIVE_INFINITY
  for (let i = 0; i < runs; i++) least = Math.min(least, cpuMs(f))
  return least
}

const answer = Array.from({ length: 8 }, (_, i) => String.fromCharCode(97 + i).repeat(524_286))

/**
 * The reference workload: serializing and parsing back twice the largest answer a detokenize may
 * hold (8 strings of 524 286 characters, 4 MiB of JSON), which the vault does anyway for its
 * largest allowed answer. About 45 ms of CPU on a 2020s laptop core.
 */
export function referenceWork(): void {
  for (let i = 0; i < 2; i++) JSON.parse(JSON.stringify(answer))
}

/** The reference workload's CPU time on this machine, now (ms, the least of five runs). */
export function referenceMs(): number {
  referenceWork()
  return leastCpuMs(referenceWork, 5)
}

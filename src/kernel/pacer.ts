/**
 * Pacing of background work by its share of the time. The host's monotonic time and a pause come
 * through a port (`Pacer`): the core sets no timer and reads no time of its own, and this time is
 * never the domain's (`Clock`: expiry, timestamps), so a test on a manual clock paces with a fake.
 */

/** Monotonic milliseconds and a pause of some of them: `performance.now()` and `setTimeout` by default. */
export interface Pacer {
  now(): number
  pause(ms: number): Promise<void>
}

/**
 * The longest pause `pacedTurn` makes (ms). A step that waited long on its store (a stalled
 * database) counts the wait as its own time; paced by it alone, a 10 s stall would stop the work
 * for 90 s at share 0.1. Past this, the work has left the callers time enough.
 */
export const MAX_PACED_PAUSE_MS = 5_000

/**
 * `turn` (what background work awaits before each bounded step) kept to `share` of the time while
 * calls come: when a call began (`begun`, a count of calls that only grows) since the work last
 * asked for a turn, and the work since it got that turn took `b` ms, the next turn first pauses
 * `b × (1 − share) / share`, at most `MAX_PACED_PAUSE_MS`.
 * With no call begun meanwhile it does not pause: work with no one to slow runs at full speed (an
 * idle service, a sweep of its own process). `share` 1 is `turn` itself. A step that waits for I/O
 * counts that wait as its own, so under calls the work takes at most its share, often less.
 */
export function pacedTurn(
  turn: () => Promise<void>,
  pacer: Pacer,
  share: number,
  begun: () => number,
): () => Promise<void> {
  if (share >= 1) return turn
  let resumed = pacer.now()
  let seen = begun()
  return async () => {
    const busy = pacer.now() - resumed
    if (begun() !== seen && busy > 0)
      await pacer.pause(Math.min(MAX_PACED_PAUSE_MS, (busy * (1 - share)) / share))
    // Counted from before the turn: a call that came while the work waited for it is one the work
    // then ran beside (the work's awaits on a memory store let no call begin in between).
    seen = begun()
    await turn()
    resumed = pacer.now()
  }
}

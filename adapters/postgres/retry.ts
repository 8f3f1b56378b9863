/**
 * The pause before trying a write again after a deadlock or a serialization failure: exponential
 * (4 ms doubling, at most 200 ms) with full jitter, so that writes that failed together do not
 * collide again at the same instant, as they do when each retries at once.
 */

/** The longest pause before a retry, in milliseconds. */
export const RETRY_PAUSE_CAP_MS = 200

/** Milliseconds to wait before try `attempt + 1` (attempt ≥ 1): uniform in [0, min(200, 4·2^(attempt−1))). */
export function retryPauseMs(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(RETRY_PAUSE_CAP_MS, 4 * 2 ** (attempt - 1))
  return Math.floor(random() * ceiling)
}

/** Resolves after `ms` milliseconds (at once for 0). */
export const pause = (ms: number): Promise<void> =>
  ms <= 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, ms))

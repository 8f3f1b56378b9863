import type { Check } from '../store/index.js'
import { checkFailure } from './checks.js'

/**
 * How many times a compare-and-set write is tried (read, build, write guarded on what was read)
 * before the guard that keeps failing is answered as its error (a 409 "changed concurrently").
 *
 * Back-off: none, each retry reads again at once. A lost compare-and-set means another write landed
 * in between, so the vault as a whole always makes progress; the bound only ends a livelock
 * under extreme contention, and waiting would hold the caller without helping anyone.
 */
export const CAS_ATTEMPTS = 100

/** One try of a compare-and-set write: done with its answer, or lost a race to the guard `lost`. */
export type CasTry<T> = { done: T } | { lost: Check }

/**
 * Runs `attempt` until it is done, at most `CAS_ATTEMPTS` times; throws the error of the last
 * lost guard past that. `attempt` decides which refusals are races worth another try (answers
 * `{ lost }`) and throws for the others.
 */
export async function retryCas<T>(attempt: () => Promise<CasTry<T>>): Promise<T> {
  for (let tries = 1; ; tries++) {
    const outcome = await attempt()
    if ('done' in outcome) return outcome.done
    if (tries >= CAS_ATTEMPTS) throw checkFailure(outcome.lost)
  }
}

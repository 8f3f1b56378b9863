import { addMilliseconds } from 'date-fns/addMilliseconds'
import { isValid } from 'date-fns/isValid'
import { toDate } from 'date-fns/toDate'

/** A source of the current time. Every timestamp the core writes comes from here. */
export interface Clock {
  /** The current instant. */
  now(): Date
}

/** A clock that tests drive by hand. */
export interface ManualClock extends Clock {
  /** Moves the clock to `date`. */
  set(date: Date | string): void
  /** Moves the clock forward by `ms` milliseconds (negative moves it back). */
  advance(ms: number): void
}

/** The real wall clock: the only place in the core that reads the system time. */
export const systemClock: Clock = { now: () => new Date() }

/** A clock that stands still until `set` or `advance` moves it. Starts at `start` (default 2030-01-01T00:00:00Z). */
export function manualClock(start: Date | string = '2030-01-01T00:00:00.000Z'): ManualClock {
  let current = instant(start, 'manualClock')
  return {
    now: () => new Date(current),
    set(date) {
      current = instant(date, 'manualClock.set')
    },
    advance(ms) {
      current = addMilliseconds(current, ms)
    },
  }
}

/**
 * A clock that runs with `base` (default the real time) shifted by an offset that `set` and
 * `advance` change: time passes between calls as it really does, and jumps on demand (a time
 * shift, as Lowkey Vault's). Starts at `base`'s time, or at `start` when given.
 */
export function shiftedClock(base: Clock = systemClock, start?: Date | string): ManualClock {
  let offsetMs = start === undefined ? 0 : instant(start, 'shiftedClock').getTime() - base.now().getTime()
  return {
    now: () => new Date(base.now().getTime() + offsetMs),
    set(date) {
      offsetMs = instant(date, 'shiftedClock.set').getTime() - base.now().getTime()
    },
    advance(ms) {
      offsetMs += ms
    },
  }
}

function instant(date: Date | string, caller: string): Date {
  const at = toDate(date)
  if (!isValid(at)) throw new TypeError(`${caller}: invalid date ${String(date)}`)
  return at
}

/** The ISO 8601 UTC instant `ms` milliseconds after `iso` (before it when negative). */
export function isoAfter(iso: string | Date, ms: number): string {
  return addMilliseconds(iso, ms).toISOString()
}

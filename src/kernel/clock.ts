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

function instant(date: Date | string, caller: string): Date {
  const at = toDate(date)
  if (!isValid(at)) throw new TypeError(`${caller}: invalid date ${String(date)}`)
  return at
}

/** The ISO 8601 UTC instant `ms` milliseconds after `iso` (before it when negative). */
export function isoAfter(iso: string | Date, ms: number): string {
  return addMilliseconds(iso, ms).toISOString()
}

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
  let current = new Date(start).getTime()
  if (Number.isNaN(current)) throw new TypeError(`manualClock: invalid start ${String(start)}`)
  return {
    now: () => new Date(current),
    set(date) {
      const next = new Date(date).getTime()
      if (Number.isNaN(next)) throw new TypeError(`manualClock.set: invalid date ${String(date)}`)
      current = next
    },
    advance(ms) {
      current += ms
    },
  }
}

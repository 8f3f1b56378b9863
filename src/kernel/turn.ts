/**
 * Turns of the event loop for work cut into bounded steps. Never a timer: tests run on a manual
 * clock.
 *
 * Node runs every `setImmediate` queued before its check phase in one go, so if each long piece of
 * work took its own immediate, a short wait of another call (the audit log's group commit waits
 * one turn before its group) would run only after every step queued before it: one tenant with
 * eight pages being written would make another's GET wait for eight steps. `nextTurn` is fair
 * instead: its waiters resolve one per turn of the event loop, first come first served, so the
 * loop polls for I/O and runs other immediates between two steps and a short wait is queued behind
 * one step at most. `lightTurn` is the plain immediate, for a wait that runs no long step after it.
 */

/**
 * The waiters of `nextTurn`, resolved one per turn in the order they came. There is one of these
 * per thread, as there is one event loop per thread (the one thing it orders): a queue per service
 * would let two vaults in one process each run a step per turn, and their callers could not hold
 * one between them.
 */
class FairTurns {
  /** Waiters not yet resolved, in order; `head` is the next one's index. */
  private waiting: (() => void)[] = []
  private head = 0
  /** Whether an immediate that resolves the next waiter is queued. */
  private queued = false

  wait(resolve: () => void): void {
    this.waiting.push(resolve)
    if (this.queued) return
    this.queued = true
    setImmediate(this.resolveOne)
  }

  /** Resolves the first waiter, and queues the next one's turn for the loop's next check phase. */
  private readonly resolveOne = (): void => {
    const resolve = this.waiting[this.head]!
    this.waiting[this.head++] = undefined as never
    if (this.head === this.waiting.length) {
      this.waiting = []
      this.head = 0
      this.queued = false
    } else setImmediate(this.resolveOne)
    resolve()
  }
}

/** This thread's turns (see `FairTurns`). */
const loopTurns = new FairTurns()

/**
 * Resolves on a later turn of the event loop: what a long piece of work awaits between two bounded
 * steps so that waiting calls run. One waiter resolves per turn, in the order they came, so however
 * many steps wait, other work waits behind one of them.
 */
export const nextTurn = (): Promise<void> => new Promise<void>((resolve) => loopTurns.wait(resolve))

/**
 * Resolves on the event loop's next turn (`setImmediate`), not queued behind `nextTurn`'s steps:
 * for a short wait that lets the calls of this turn join it, with no long step after it.
 */
export const lightTurn = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * The calls of one service in flight: begun (a client call counts from before its key is checked)
 * and not yet answered, their audit entry's commit included. Background work (the re-encryption
 * sweep) reads it to yield to them (`backgroundTurn`). One per service, a field of its wiring.
 */
export class CallsInFlight {
  /** Calls begun and not yet ended. */
  count = 0
  /** Calls begun in all (only grows): paced background work pauses when it moved (`pacedTurn`). */
  begun = 0

  begin(): void {
    this.count++
    this.begun++
  }

  end(): void {
    this.count--
  }
}

/**
 * The most turns of the event loop a background step waits while calls are in flight: then it
 * runs anyway, so under calls that never stop it still takes one turn in every
 * `BACKGROUND_MAX_WAIT` (its minimum rate, counted in turns, never in time).
 */
export const BACKGROUND_MAX_WAIT = 16

/**
 * Resolves on a later turn of the event loop in which none of `calls` is in flight, or on the
 * `BACKGROUND_MAX_WAIT`th turn it waited if calls never stopped: what background work awaits
 * before each of its bounded steps, so that a call of fewer turns than that waits behind the one
 * step under way when it began at most (a longer one, one step every `BACKGROUND_MAX_WAIT` turns),
 * and the work still ends under constant load. It checks once a turn
 * (an immediate each), so while it waits the loop polls for I/O without blocking: at most
 * `BACKGROUND_MAX_WAIT` such turns a step.
 */
export const backgroundTurn = (calls: CallsInFlight): Promise<void> =>
  new Promise<void>((resolve) => {
    let waited = 0
    const check = (): void => {
      if (calls.count === 0 || ++waited >= BACKGROUND_MAX_WAIT) resolve()
      else setImmediate(check)
    }
    setImmediate(check)
  })

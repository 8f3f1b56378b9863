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

/**
 * Turns of the event loop for work cut into bounded steps. Never a timer: tests run on a manual
 * clock.
 *
 * Node runs every `setImmediate` queued before its check phase in one go, so if each long piece of
 * work took its own immediate, a short wait of another call (the audit log's group commit waits
 * one turn before its group) would run only after every step queued before it: one tenant with
 * eight pages being written would make another's GET wait for eight steps. The turns here are fair
 * instead, and short waits go first: in each turn of the event loop every light wait (`lightTurn`)
 * queued before it resolves, and the calls it wakes run until they wait again; then one step
 * (`nextTurn`) resolves, first come first served. A short call that arrives while long work is
 * under way waits for the step that runs when it comes, not for one more.
 */

/**
 * The waiters of `nextTurn` and `lightTurn`. There is one of these per thread, as there is one
 * event loop per thread (the one thing it orders): a queue per service would let two vaults in one
 * process each run a step per turn, and their callers could not hold one between them.
 */
class FairTurns {
  /** Steps not yet resolved, in order; `head` is the next one's index. */
  private steps: (() => void)[] = []
  private head = 0
  /** Light waits not yet resolved: all of them go in the next turn, before its step. */
  private light: (() => void)[] = []
  /** Whether this turn's two immediates (the light waits', then the step's) are queued. */
  private queued = false
  /**
   * How many steps had come when this turn's light waits were resolved: a step that came after
   * (from a call they woke) waits for the next turn, never runs in the turn it was queued in.
   */
  private stepsBefore = 0

  step(resolve: () => void): void {
    this.steps.push(resolve)
    this.queue()
  }

  wait(resolve: () => void): void {
    this.light.push(resolve)
    this.queue()
  }

  /**
   * Queues the turn's two immediates side by side: Node runs the promise jobs of one before the
   * next, so the calls the light waits wake run before the step does.
   */
  private queue(): void {
    if (this.queued) return
    this.queued = true
    setImmediate(this.resolveLight)
    setImmediate(this.resolveStep)
  }

  /** Resolves every light wait queued so far; one queued while they run waits for the next turn. */
  private readonly resolveLight = (): void => {
    this.stepsBefore = this.steps.length
    const ready = this.light
    this.light = []
    for (const resolve of ready) resolve()
  }

  /** Resolves the first step that came before this turn, and queues the next turn when anything still waits. */
  private readonly resolveStep = (): void => {
    this.queued = false
    const resolve = this.head < this.stepsBefore ? this.steps[this.head] : undefined
    if (resolve !== undefined) {
      this.steps[this.head++] = undefined as never
      if (this.head === this.steps.length) {
        this.steps = []
        this.head = 0
      }
    }
    if (this.head < this.steps.length || this.light.length > 0) this.queue()
    resolve?.()
  }
}

/** This thread's turns (see `FairTurns`). */
const loopTurns = new FairTurns()

/**
 * Resolves on a later turn of the event loop: what a long piece of work awaits between two bounded
 * steps so that waiting calls run. One waiter resolves per turn, in the order they came, after the
 * turn's light waits, so however many steps wait, other work waits behind one of them at most.
 */
export const nextTurn = (): Promise<void> => new Promise<void>((resolve) => loopTurns.step(resolve))

/**
 * Resolves on the event loop's next turn, before that turn's step of `nextTurn`: for a short wait
 * that lets the calls of this turn join it, with no long step after it.
 */
export const lightTurn = (): Promise<void> => new Promise<void>((resolve) => loopTurns.wait(resolve))

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

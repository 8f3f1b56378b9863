import { type Held, isStuck, PENDING, RECLAIMED, type Slot, STUCK_MS, started, startedAt } from './slots.js'

/**
 * The pool's time limits on its workers: a worker silent past its run's limit plus a grace period
 * is given up (`armSilence`), and the runs sent ahead to wait behind a run that has run `STUCK_MS`
 * are taken back for other workers (`watchStuck`, `takeBack`).
 */

/**
 * Times the worker's first held run: silent past the run's limit plus `graceMs`, `onSilent(head)`
 * is called (unless the worker has moved on to another run by then).
 */
export function armSilence(slot: Slot, graceMs: number, onSilent: (head: Held) => void): void {
  const head = slot.held[0]!
  clearTimeout(slot.timer)
  slot.timer = setTimeout(() => {
    if (slot.held[0] === head) onSilent(head)
  }, head.entry.job.timeoutMs + graceMs)
}

/**
 * Calls `onDue` once the worker's running run has run `STUCK_MS` (nothing while a check is due, or
 * it holds no run behind the one it runs). A run not claimed yet (the worker is restoring its
 * engine, or the run is on its way) is looked at again `STUCK_MS` on.
 */
export function watchStuck(slot: Slot, onDue: () => void): void {
  if (slot.stuckTimer || slot.held.length < 2) return
  const head = slot.held[0]!
  const clock = performance.now()
  const due = started(slot, head) ? startedAt(slot, head, clock) + STUCK_MS - clock : STUCK_MS
  slot.stuckTimer = setTimeout(onDue, Math.max(1, Math.ceil(due) + 1))
  slot.stuckTimer.unref()
}

/**
 * The runs sent ahead to a worker whose run has run `STUCK_MS`, taken back from it (each only if the
 * worker has not claimed it: the exchange in `claims` makes sure exactly one side has it), last
 * first. Null when the run is not stuck (yet).
 */
export function takeBack(slot: Slot): Held[] | null {
  if (!isStuck(slot, performance.now())) return null
  return slot.held
    .slice(1)
    .reverse()
    .filter((one) => Atomics.compareExchange(slot.claims, one.cell, PENDING, RECLAIMED) === PENDING)
}

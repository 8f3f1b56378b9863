/**
 * The work meter of one list or search call: every record it examines and every index entry it
 * reads past without answering (the skipped entries of a join) is a unit of work. A call does at
 * most `cap` units and lets other calls run after every `yieldEvery` units, so no call, however
 * its query is shaped, holds the event loop for long or costs more than its cap.
 */

import { nextTurn } from '../kernel/index.js'

/** Counts one call's units of work, yields as they add up, and says when the cap is spent. */
export class WorkMeter {
  /** Units charged so far. */
  units = 0
  private sinceYield = 0
  /**
   * The candidate the walk examined last: an index entry equal to it is the candidate itself, not
   * a skipped entry, when a source reads past it.
   */
  candidate: string | undefined

  /**
   * @param cap the most units the call may do
   * @param yieldEvery units between two yields to the event loop
   */
  constructor(
    readonly cap: number,
    private readonly yieldEvery: number,
  ) {}

  /** Whether more than the cap is spent: the call stops where it is (and says where to go on). */
  get spent(): boolean {
    return this.units > this.cap
  }

  /** Charges `n` units, yielding to other work when `yieldEvery` units have added up since the last yield. */
  async charge(n: number): Promise<void> {
    if (n <= 0) return
    this.units += n
    await this.pace(n)
  }

  /**
   * Counts `n` units against the cap without yielding: work the call has decided to do and paces
   * where it does it (`pace`), as a walk charges a batch's candidates before it matches them.
   */
  add(n: number): void {
    if (n > 0) this.units += n
  }

  /** Yields to other work when `yieldEvery` units of work done (added or charged) have added up since the last yield. */
  async pace(n: number): Promise<void> {
    this.sinceYield += n
    if (this.sinceYield >= this.yieldEvery) {
      this.sinceYield = 0
      // A store answering from memory never leaves the microtask queue on its own.
      await nextTurn()
    }
  }
}

/**
 * Crash charging: the tenant whose run killed a worker is the one that waits. Its runs wait
 * `crashPenaltyMs` after the kill (doubling with each further kill, up to `maxCrashPenaltyMs`),
 * one at a time in a worker; its kills are forgotten a minute after the last one.
 */

/** A tenant whose runs killed workers lately. */
interface Strikes {
  count: number
  lastAt: number
  /** Its runs wait until then (ms, the pool's `now`). */
  heldUntil: number
}

/** How long a tenant's kills are remembered (ms). */
const STRIKE_MEMORY_MS = 60_000

/** The kills of the tenants lately, and what they cost them. */
export class CrashPenalties {
  private readonly strikes = new Map<string, Strikes>()

  /** `now` is the clock of the penalties (ms). */
  constructor(
    private readonly settings: { crashPenaltyMs: number; maxCrashPenaltyMs: number },
    private readonly now: () => number,
  ) {}

  /** Charges a killed worker to `tenant`: its runs wait, longer with each kill. */
  strike(tenant: string): void {
    const now = this.now()
    const previous = this.struck(tenant, now)
    const count = (previous?.count ?? 0) + 1
    const { crashPenaltyMs, maxCrashPenaltyMs } = this.settings
    const penalty = Math.min(maxCrashPenaltyMs, crashPenaltyMs * 2 ** Math.min(count - 1, 20))
    this.strikes.set(tenant, { count, lastAt: now, heldUntil: now + penalty })
  }

  /** `tenant`'s recent kills, if any (forgotten a minute after the last one). */
  private struck(tenant: string, now: number): Strikes | undefined {
    const strikes = this.strikes.get(tenant)
    if (strikes && now - strikes.lastAt > STRIKE_MEMORY_MS) {
      this.strikes.delete(tenant)
      return undefined
    }
    return strikes
  }

  /** Whether a run of `tenant` may go to a worker now (`running`: one of its runs is in a worker). */
  eligible(tenant: string, now: number, running: boolean): boolean {
    const strikes = this.struck(tenant, now)
    return !strikes || (now >= strikes.heldUntil && !running)
  }

  /** What a refused run of `tenant` is told to wait (s): longer while its runs are held back. */
  retryAfterSec(tenant: string): number {
    const strikes = this.struck(tenant, this.now())
    return strikes ? Math.max(1, Math.ceil((strikes.heldUntil - this.now()) / 1000)) : 1
  }

  /** When the first held-back tenant may run again (the penalties' clock), if any; forgets old kills. */
  nextRelease(now: number): number | undefined {
    let first = Number.POSITIVE_INFINITY
    for (const [tenant, strikes] of this.strikes) {
      if (now - strikes.lastAt > STRIKE_MEMORY_MS) this.strikes.delete(tenant)
      else if (strikes.heldUntil > now) first = Math.min(first, strikes.heldUntil)
    }
    return first === Number.POSITIVE_INFINITY ? undefined : first
  }
}

import { type ServiceError, tooMany } from '../../src/kernel/index.js'

/**
 * Admission on the request path: each tenant ("lane") may have so many requests and so many body
 * bytes in flight (and, while another tenant is active, may begin so many in one turn of the event
 * loop), and the handler as a whole so many; past them a request waits in its own lane's line,
 * unread, and the lines are served in turns. Past a line's bound it is refused (429).
 */

/**
 * The bounds of admission on the request path (options of `createHttpHandler`), each a whole
 * number >= 1. A request is admitted under its key's tenant before its body is read; past its
 * tenant's share it waits, unread, in its tenant's own line (the lines are served in turns), and
 * past its line's bound it answers 429 with `Retry-After: 1`.
 */
export interface AdmissionBounds {
  /** Requests one tenant may have in flight (admitted and not yet answered). @default 32 */
  maxInFlightPerTenant: number
  /**
   * Requests one tenant may have in flight while another tenant has had a request in flight within
   * the last second (`CONTENDED_MS`): each request's CPU-heavy steps then wait behind at most this
   * many steps of each other tenant, instead of behind all of its `maxInFlightPerTenant`. It also
   * bounds the requests such a tenant begins in one turn of the event loop (the rest begin on the
   * next), since a request that ends within its turn never holds a place in flight. @default 2
   */
  maxInFlightPerTenantContended: number
  /**
   * Body bytes one tenant may have in flight: each request counts its `Content-Length`, or the body
   * limit when it has none. A tenant with nothing in flight is admitted whatever its body. @default 2 MiB
   */
  maxInFlightBytesPerTenant: number
  /**
   * Body bytes one tenant may have in flight while another tenant is active (as for
   * `maxInFlightPerTenantContended`): a request of a tenant with nothing in flight is still admitted
   * whatever its body, so one large body at a time passes. Each large body is read, parsed,
   * fingerprinted and sealed in steps of about a millisecond, and another tenant's request then waits
   * behind the steps of one such body rather than two. @default 256 KiB
   */
  maxInFlightBytesPerTenantContended: number
  /** Requests one tenant may have waiting in its line; one more answers 429. @default 128 */
  maxQueuedPerTenant: number
  /** Requests in flight in all tenants. @default 256 */
  maxInFlight: number
  /** Body bytes in flight in all tenants. @default 64 MiB */
  maxInFlightBytes: number
  /** Requests waiting in all lines; one more answers 429. @default 1024 */
  maxQueued: number
}

/**
 * The defaults of `AdmissionBounds`. Body bytes are the tight one: a few large bodies keep the one
 * event loop busy, and more of one tenant's in flight add to every other tenant's wait without adding
 * to its own throughput (`npm run bench:attacks`, attack (a)).
 */
export const DEFAULT_ADMISSION: AdmissionBounds = {
  maxInFlightPerTenant: 32,
  maxInFlightPerTenantContended: 2,
  maxInFlightBytesPerTenant: 2 * 1024 * 1024,
  maxInFlightBytesPerTenantContended: 256 * 1024,
  maxQueuedPerTenant: 128,
  maxInFlight: 256,
  maxInFlightBytes: 64 * 1024 * 1024,
  maxQueued: 1024,
}

/** `given`'s bounds over the defaults; throws a `RangeError` for one that is not a whole number >= 1. */
export function admissionBounds(given: Partial<AdmissionBounds>): AdmissionBounds {
  const out = { ...DEFAULT_ADMISSION }
  for (const name of Object.keys(DEFAULT_ADMISSION) as (keyof AdmissionBounds)[]) {
    const value = given[name]
    if (value === undefined) continue
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new RangeError(`${name} must be a whole number >= 1, not ${String(value)}`)
    }
    out[name] = value
  }
  return out
}

interface Waiter {
  bytes: number
  admit: () => void
}

interface Lane {
  inFlight: number
  bytes: number
  waiting: Waiter[]
}

/** How long (ms) a tenant counts as active after its last request is answered: contention lasts that long. */
export const CONTENDED_MS = 1000

/** How many recently active lanes are remembered at most (oldest out first). */
const RECENT_KEPT = 4096

/**
 * Counts what each lane has in flight. A lane with nothing in flight always gets one request in
 * (whatever its bytes) once the handler has room, so no request is too large to ever run; a request
 * never passes another of its own lane (each line is first in, first out).
 */
export class Admission {
  private readonly lanes = new Map<string, Lane>()
  /** Lanes with requests waiting, in serving order; `turn` is the next one's index. */
  private readonly ring: string[] = []
  private turn = 0
  private inFlight = 0
  private bytes = 0
  private queued = 0
  /** Lanes by the time (ms) their last request was answered, oldest first: who was active lately. */
  private readonly recent = new Map<string, number>()
  /** Requests each lane was let in during this turn of the event loop (cleared at its end: `queueTurn`). */
  private readonly startedThisTurn = new Map<string, number>()
  /** Whether the clearing of `startedThisTurn` is queued (an immediate: at the end of this turn). */
  private turnQueued = false

  /** `now` reads a monotonic time in ms (tests give their own). */
  constructor(
    private readonly bounds: AdmissionBounds,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * Lets a request of `bytes` body bytes in under `lane`: `true` when admitted now, a promise that
   * settles once admitted when it waits in line, `false` when its line (or all lines) is full.
   * Each admission is paired with one `leave(lane, bytes)`.
   */
  enter(lane: string, bytes: number): true | false | Promise<void> {
    const state = this.laneOf(lane)
    if (state.waiting.length === 0 && this.fits(state, bytes, lane)) {
      this.take(lane, state, bytes)
      return true
    }
    if (state.waiting.length >= this.bounds.maxQueuedPerTenant || this.queued >= this.bounds.maxQueued) {
      this.forget(lane, state)
      return false
    }
    return new Promise<void>((resolve) => {
      if (state.waiting.length === 0) this.ring.push(lane)
      state.waiting.push({ bytes, admit: resolve })
      this.queued++
    })
  }

  /**
   * Ends the handler-wide part of an admission of `enter(lane, bytes)` whose answer is still being
   * handed on (a large answer written piece by piece): the handler's totals free at once, the lane
   * keeps its place until `leave(lane, bytes, true)`. A client that stops reading then holds places
   * of its own tenant only.
   */
  settle(bytes: number): void {
    this.inFlight--
    this.bytes -= bytes
    this.serve()
  }

  /**
   * Ends an admission of `enter(lane, bytes)` (`settled` when `settle` ended its handler-wide part),
   * and lets waiting requests in, lane by lane in turns.
   */
  leave(lane: string, bytes: number, settled = false): void {
    const state = this.lanes.get(lane)
    if (state === undefined) return
    state.inFlight--
    state.bytes -= bytes
    if (!settled) {
      this.inFlight--
      this.bytes -= bytes
    }
    this.recent.delete(lane)
    this.recent.set(lane, this.now())
    if (this.recent.size > RECENT_KEPT) this.recent.delete(this.recent.keys().next().value!)
    this.forget(lane, state)
    this.serve()
  }

  /** How many requests `lane` has in flight and waiting (for tests and the log). */
  load(lane: string): { inFlight: number; bytes: number; waiting: number } {
    const state = this.lanes.get(lane)
    return { inFlight: state?.inFlight ?? 0, bytes: state?.bytes ?? 0, waiting: state?.waiting.length ?? 0 }
  }

  /** Admits the head of each waiting lane that fits, in turns, until a whole round admits none. */
  private serve(): void {
    let idle = 0
    while (this.ring.length > 0 && idle < this.ring.length) {
      if (this.turn >= this.ring.length) this.turn = 0
      const lane = this.ring[this.turn]!
      const state = this.lanes.get(lane)!
      const head = state.waiting[0]!
      if (!this.fits(state, head.bytes, lane)) {
        this.turn++
        idle++
        continue
      }
      state.waiting.shift()
      this.queued--
      this.take(lane, state, head.bytes)
      idle = 0
      // Its line empty, the lane leaves the turns; otherwise its next request waits a whole round.
      if (state.waiting.length === 0) this.ring.splice(this.turn, 1)
      else this.turn++
      head.admit()
    }
  }

  private fits(state: Lane, bytes: number, lane: string): boolean {
    const { bounds } = this
    if (this.inFlight >= bounds.maxInFlight) return false
    if (this.inFlight > 0 && this.bytes + bytes > bounds.maxInFlightBytes) return false
    if (state.inFlight >= bounds.maxInFlightPerTenant) return false
    // A lane's requests that end within the turn they began in (a memory store answers in promise
    // jobs) never hold a place: while contended, a lane is let in at most as many requests a turn
    // as it may have in flight, and the rest wait for the next turn. Otherwise it ran every request
    // its connections had sent in one turn of the loop, and another tenant's call, which waits a
    // turn for its audit entry's commit, waited for all of them.
    if (
      (this.startedThisTurn.get(lane) ?? 0) >= bounds.maxInFlightPerTenantContended &&
      this.contended(lane)
    ) {
      this.queueTurn()
      return false
    }
    if (state.inFlight === 0) return true
    if (state.bytes + bytes > bounds.maxInFlightBytesPerTenant) return false
    if (state.inFlight < bounds.maxInFlightPerTenantContended) {
      if (state.bytes + bytes <= bounds.maxInFlightBytesPerTenantContended) return true
    }
    return !this.contended(lane)
  }

  /**
   * Whether a lane other than `lane` has requests in flight or waiting, or had one answered within
   * `CONTENDED_MS`. Lanes quiet for longer are dropped from `recent` on the way (oldest first).
   */
  private contended(lane: string): boolean {
    if (this.lanes.size > (this.lanes.has(lane) ? 1 : 0)) return true
    const since = this.now() - CONTENDED_MS
    for (const [other, at] of this.recent) {
      if (at >= since) {
        if (other !== lane) return true
        continue
      }
      this.recent.delete(other)
    }
    return false
  }

  /** Clears the turn's counts at the end of this turn of the event loop, and lets in who waits for it. */
  private queueTurn(): void {
    if (this.turnQueued) return
    this.turnQueued = true
    setImmediate(() => {
      this.turnQueued = false
      this.startedThisTurn.clear()
      this.serve()
    })
  }

  private take(lane: string, state: Lane, bytes: number): void {
    this.startedThisTurn.set(lane, (this.startedThisTurn.get(lane) ?? 0) + 1)
    this.queueTurn()
    state.inFlight++
    state.bytes += bytes
    this.inFlight++
    this.bytes += bytes
  }

  private laneOf(lane: string): Lane {
    let state = this.lanes.get(lane)
    if (state === undefined) {
      state = { inFlight: 0, bytes: 0, waiting: [] }
      this.lanes.set(lane, state)
    }
    return state
  }

  /** Drops an idle lane's counters, so the map holds only lanes with work. */
  private forget(lane: string, state: Lane): void {
    if (state.inFlight === 0 && state.waiting.length === 0) this.lanes.delete(lane)
  }
}

/** The lane of requests whose key is not known yet: checked there, so a flood of bad keys waits only on itself. */
export const UNKNOWN_KEYS = '\u0000unknown keys'

/** How many keys' tenants a handler remembers (oldest out first). */
const TENANTS_KEPT = 4096

/** What `admitter` needs of the service: the tenant of a key, or `unauthenticated` thrown. */
interface TenantSource {
  tenantOf?(apiKey: string): Promise<string>
}

/** The answer when a line is full: 429, a place frees as soon as one of the lane's requests is answered. */
function full(): ServiceError {
  return tooMany('too many requests of this tenant are in flight and waiting; retry shortly', 1)
}

/**
 * Admits requests under their key's tenant, before their bodies are read. A key seen to
 * authenticate recently is admitted under its tenant at once (its call still checks it); any other
 * is first checked in the `UNKNOWN_KEYS` lane, whose bound holds the lookups of a flood of bad keys,
 * and answers `unauthenticated` from there without its body being read.
 * `admit` answers the lane to `leave` with the same bytes once the request is answered.
 */
export function admitter(service: TenantSource, bounds: AdmissionBounds, now?: () => number) {
  const admission = new Admission(bounds, now)
  // Key lookups hold no body and are quick: their lane is bounded apart, outside the handler's total.
  const lookups = new Admission(bounds)
  const tenants = new Map<string, string>()
  const enter = (lane: string, bytes: number, where = admission): Promise<void> | undefined => {
    const entered = where.enter(lane, bytes)
    if (entered === false) throw full()
    return entered === true ? undefined : entered
  }
  const resolve = async (apiKey: string, keyHash: string | null): Promise<string> => {
    // A stand-in service without `tenantOf`: each key is its own lane.
    if (service.tenantOf === undefined) return keyHash ?? UNKNOWN_KEYS
    await enter(UNKNOWN_KEYS, 0, lookups)
    let tenant: string
    try {
      tenant = await service.tenantOf(apiKey)
    } finally {
      lookups.leave(UNKNOWN_KEYS, 0)
    }
    if (keyHash !== null) {
      if (tenants.size >= TENANTS_KEPT) tenants.delete(tenants.keys().next().value!)
      tenants.set(keyHash, tenant)
    }
    return tenant
  }
  const slow = async (apiKey: string, keyHash: string | null, bytes: number): Promise<string> => {
    const lane = await resolve(apiKey, keyHash)
    await enter(lane, bytes)
    return lane
  }
  return {
    /** The lane the request was admitted under; throws 429 (`too_many_requests`) or 401 (`unauthenticated`). */
    admit(apiKey: string, keyHash: string | null, bytes: number): string | Promise<string> {
      const lane = keyHash === null ? undefined : tenants.get(keyHash)
      if (lane === undefined) return slow(apiKey, keyHash, bytes)
      // A known key with room in its lane: no promise on the common path.
      const waiting = enter(lane, bytes)
      return waiting === undefined ? lane : waiting.then(() => lane)
    },
    /** The lane of `tenantId`, for a request whose tenant is known without a key (a keyless proxy call). */
    admitUnder(tenantId: string, bytes: number): string | Promise<string> {
      const waiting = enter(tenantId, bytes)
      return waiting === undefined ? tenantId : waiting.then(() => tenantId)
    },
    leave: (lane: string, bytes: number, settled = false) => admission.leave(lane, bytes, settled),
    settle: (bytes: number) => admission.settle(bytes),
    admission,
  }
}

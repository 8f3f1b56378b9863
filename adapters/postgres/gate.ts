/**
 * Calls waiting for one of the pool's connections, served one tenant at a time in turn: at most
 * `limit` run at once (the pool's `max`), and when all are busy each call waits in its tenant's own
 * line; a freed place goes to the next tenant's oldest call. So a tenant with hundreds of calls in
 * flight holds another tenant's call back by about one call of each tenant waiting, not by all of
 * its own (a plain pool serves waiting calls in arrival order). A call that waits longer than
 * `waitMs` fails as the pool's own wait for a connection does (`timeout exceeded when trying to
 * connect`: the store answers 503 with `Retry-After`).
 */
export class TenantGate {
  private active = 0
  /** Each tenant's waiting calls, oldest first; the map's order is the tenants' turn. */
  private readonly waiting = new Map<string, { start: () => void; timer: ReturnType<typeof setTimeout> }[]>()

  constructor(
    private readonly limit: number,
    private readonly waitMs: number,
  ) {}

  /** Runs `fn` once a place is free and it is `tenant`'s turn. */
  run<T>(tenant: string, fn: () => Promise<T>): Promise<T> {
    if (this.active < this.limit && this.waiting.size === 0) {
      this.active++
      return this.settle(fn)
    }
    return this.wait(tenant).then(() => this.settle(fn))
  }

  /** Runs `fn` in a place already taken, and frees it when `fn` settles (one promise layer). */
  private settle<T>(fn: () => Promise<T>): Promise<T> {
    let result: Promise<T>
    try {
      result = fn()
    } catch (error) {
      this.release()
      return Promise.reject(error)
    }
    return result.then(
      (value) => {
        this.release()
        return value
      },
      (error: unknown) => {
        this.release()
        throw error
      },
    )
  }

  /** How many calls wait, for tests. */
  get queued(): number {
    let n = 0
    for (const line of this.waiting.values()) n += line.length
    return n
  }

  private wait(tenant: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let line = this.waiting.get(tenant)
      if (!line) {
        line = []
        this.waiting.set(tenant, line)
      }
      const own = line
      const entry = {
        start: resolve,
        timer: setTimeout(() => {
          const at = own.indexOf(entry)
          if (at >= 0) own.splice(at, 1)
          if (own.length === 0 && this.waiting.get(tenant) === own) this.waiting.delete(tenant)
          reject(new Error('postgresStore: timeout exceeded when trying to connect'))
        }, this.waitMs),
      }
      own.push(entry)
    })
  }

  /** Hands the place of a finished call to the next tenant in turn, or frees it. */
  private release(): void {
    for (const [tenant, line] of this.waiting) {
      const next = line.shift()
      this.waiting.delete(tenant)
      // A tenant with more waiting goes to the back of the turn.
      if (line.length) this.waiting.set(tenant, line)
      if (!next) continue
      clearTimeout(next.timer)
      next.start()
      return
    }
    this.active--
  }
}

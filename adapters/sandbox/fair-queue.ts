/**
 * Waiting work grouped by tenant and served round-robin: each `take` serves the next tenant in turn
 * (among those `eligible` now), so a tenant with many queued runs delays another tenant's run by at
 * most one run per worker. Each tenant's backlog is bounded, and so is the whole queue; `push`
 * refuses beyond either.
 */
export class FairQueue<T> {
  private readonly queues = new Map<string, T[]>()
  /** Tenants with queued work, in serving order; `turn` is the next one's index. */
  private readonly ring: string[] = []
  private turn = 0
  private count = 0
  /** The tenant served last: if it comes back after leaving the ring, it goes last in the turns. */
  private lastServed: string | undefined

  constructor(
    private readonly maxPerTenant: number,
    private readonly maxTotal = Number.POSITIVE_INFINITY,
  ) {}

  /** How many items wait, in all. */
  get size(): number {
    return this.count
  }

  /** How many items `tenant` has waiting. */
  sizeOf(tenant: string): number {
    return this.queues.get(tenant)?.length ?? 0
  }

  /** Queues `item` last for `tenant`; false (nothing queued) when its backlog or the queue is full. */
  push(tenant: string, item: T): boolean {
    if (this.sizeOf(tenant) >= this.maxPerTenant || this.count >= this.maxTotal) return false
    this.queueOf(tenant).push(item)
    this.count++
    return true
  }

  /**
   * Queues `item` first for `tenant`, whatever its backlog: work already accepted that comes back
   * (a run to try again) is never refused or put behind later work.
   */
  unshift(tenant: string, item: T): void {
    this.queueOf(tenant).unshift(item)
    this.count++
  }

  /**
   * The next item, taking turns between the tenants for which `eligible` holds (a tenant that is
   * not eligible keeps its place and its items); undefined when nothing eligible waits. A tenant
   * keeps its place in the turns while its queue is empty until its turn comes again, so one served
   * last and refilled at once goes after the tenants that were waiting.
   */
  take(eligible: (tenant: string) => boolean = () => true): T | undefined {
    let seen = 0
    while (seen < this.ring.length) {
      if (this.turn >= this.ring.length) this.turn = 0
      const tenant = this.ring[this.turn]!
      const queue = this.queues.get(tenant)!
      if (!queue.length) {
        this.queues.delete(tenant)
        this.ring.splice(this.turn, 1)
        continue
      }
      this.turn++
      if (!eligible(tenant)) {
        seen++
        continue
      }
      this.count--
      this.lastServed = tenant
      return queue.shift()!
    }
    return undefined
  }

  /** The tenants with items waiting. */
  tenants(): string[] {
    return this.ring.filter((tenant) => this.sizeOf(tenant) > 0)
  }

  /** Removes and returns every waiting item. */
  drain(): T[] {
    const all = [...this.queues.values()].flat()
    this.queues.clear()
    this.ring.length = 0
    this.count = 0
    return all
  }

  private queueOf(tenant: string): T[] {
    let queue = this.queues.get(tenant)
    if (!queue) {
      queue = []
      this.queues.set(tenant, queue)
      if (tenant === this.lastServed) {
        // Served last and back already (its ring place went with its empty queue): the tenants
        // waiting now, or coming next, go first.
        if (this.turn > this.ring.length) this.turn = this.ring.length
        this.ring.splice(this.turn, 0, tenant)
        this.turn++
      } else this.ring.push(tenant)
    }
    return queue
  }
}

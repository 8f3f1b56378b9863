/**
 * Waiting work grouped by tenant and served round-robin: each `take` serves the next tenant in turn
 * (among those `eligible` now), so a tenant with many queued runs delays another tenant's run by at
 * most one run per worker. Each tenant's backlog is bounded; `push` refuses beyond it.
 */
export class FairQueue<T> {
  private readonly queues = new Map<string, T[]>()
  /** Tenants with queued work, in serving order; `turn` is the next one's index. */
  private readonly ring: string[] = []
  private turn = 0
  private count = 0

  constructor(private readonly maxPerTenant: number) {}

  /** How many items wait, in all. */
  get size(): number {
    return this.count
  }

  /** Queues `item` last for `tenant`; false (nothing queued) when the tenant's backlog is full. */
  push(tenant: string, item: T): boolean {
    if ((this.queues.get(tenant)?.length ?? 0) >= this.maxPerTenant) return false
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
   * not eligible keeps its place and its items); undefined when nothing eligible waits.
   */
  take(eligible: (tenant: string) => boolean = () => true): T | undefined {
    for (let seen = 0; seen < this.ring.length; seen++) {
      if (this.turn >= this.ring.length) this.turn = 0
      const tenant = this.ring[this.turn]!
      if (!eligible(tenant)) {
        this.turn++
        continue
      }
      const queue = this.queues.get(tenant)!
      const item = queue.shift()!
      this.count--
      if (!queue.length) {
        this.queues.delete(tenant)
        this.ring.splice(this.turn, 1)
      } else this.turn++
      return item
    }
    return undefined
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
      this.ring.push(tenant)
    }
    return queue
  }
}

/**
 * Waiting work grouped by tenant and served round-robin: each `take` serves the next tenant in turn,
 * so a tenant with many queued runs delays another tenant's run by at most one run per worker.
 * Each tenant's backlog is bounded; `push` refuses beyond it.
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

  /** Queues `item` for `tenant`; false (nothing queued) when the tenant's backlog is full. */
  push(tenant: string, item: T): boolean {
    let queue = this.queues.get(tenant)
    if (!queue) {
      queue = []
      this.queues.set(tenant, queue)
      this.ring.push(tenant)
    }
    if (queue.length >= this.maxPerTenant) return false
    queue.push(item)
    this.count++
    return true
  }

  /** The next item, taking turns between tenants; undefined when nothing waits. */
  take(): T | undefined {
    while (this.ring.length) {
      if (this.turn >= this.ring.length) this.turn = 0
      const tenant = this.ring[this.turn]!
      const queue = this.queues.get(tenant)
      const item = queue?.shift()
      if (!queue?.length) {
        this.queues.delete(tenant)
        this.ring.splice(this.turn, 1)
      } else this.turn++
      if (item !== undefined) {
        this.count--
        return item
      }
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
}

import { BySize } from './by-size.js'

/** One entry: its value and its place in its tenant's order (`Partition.tick` when last moved). */
interface Kept<V> {
  value: V
  stamp: number
}

/** One tenant's entries in the order they were last moved, oldest first, and the moves so far. */
interface Partition<V> {
  tenant: string
  entries: Map<string, Kept<V>>
  tick: number
}

/**
 * A least-recently-used cache partitioned by tenant: at most `perTenant` entries of one tenant,
 * whose next entry evicts its own least recently used, and `total` in all, where the next entry
 * evicts the least recently used entry of the tenant holding the most. So a tenant that floods the
 * cache with distinct keys evicts only its own entries, and another tenant's hot entries stay.
 *
 * A hit moves an entry to the back of its tenant's order only when more than a quarter of the
 * tenant's entries were moved since it was: moving on every hit (a `Map` delete and set) cost each
 * hit about 0.3 µs, several times a call (a card's mask looks three templates up). An entry hit at
 * least once in every `n - 1 - floor(n / 4)` moves of its tenant's `n` entries is never evicted
 * (374 of 500); the entry evicted is still the one moved least recently.
 */
export class TenantLru<V> {
  private readonly byTenant = new Map<string, Partition<V>>()
  /** The tenants' partitions filed by how many entries each holds: full in all, the largest at once. */
  private readonly bySize = new BySize<Partition<V>>()
  private count = 0

  constructor(
    readonly perTenant: number,
    readonly total: number,
  ) {}

  /** The entry of `tenant` under `key`, marked as used recently; undefined when absent. */
  get(tenant: string, key: string): V | undefined {
    const own = this.byTenant.get(tenant)
    const kept = own?.entries.get(key)
    if (!own || kept === undefined) return undefined
    if (own.tick - kept.stamp > own.entries.size >> 2) {
      own.entries.delete(key)
      kept.stamp = ++own.tick
      own.entries.set(key, kept)
    }
    return kept.value
  }

  /** Keeps `value` under `key` for `tenant`, evicting as the class says. */
  set(tenant: string, key: string, value: V): void {
    if (this.perTenant <= 0 || this.total <= 0) return
    let own = this.byTenant.get(tenant)
    if (!own) {
      own = { tenant, entries: new Map(), tick: 0 }
      this.byTenant.set(tenant, own)
    }
    const had = own.entries.size
    if (own.entries.delete(key)) {
      this.count--
      this.bySize.moved(own, had, had - 1)
    }
    if (own.entries.size >= this.perTenant) this.evictOldest(own)
    else if (this.count >= this.total) {
      this.evictOldest(this.bySize.evictee(own, own.entries.size))
    }
    // Evicting its own last entry (one place per tenant) dropped the partition: keep it again.
    if (this.byTenant.get(tenant) !== own) this.byTenant.set(tenant, own)
    const size = own.entries.size
    own.entries.set(key, { value, stamp: ++own.tick })
    this.count++
    this.bySize.moved(own, size, size + 1)
  }

  /** Whether `tenant` has an entry under `key` (not marking it used). */
  has(tenant: string, key: string): boolean {
    return this.byTenant.get(tenant)?.entries.has(key) ?? false
  }

  /** How many entries are kept: `tenant`'s, or in all. */
  size(tenant?: string): number {
    return tenant === undefined ? this.count : (this.byTenant.get(tenant)?.entries.size ?? 0)
  }

  private evictOldest(partition: Partition<V>): void {
    const oldest = partition.entries.keys().next()
    if (oldest.done) return
    const size = partition.entries.size
    partition.entries.delete(oldest.value)
    this.count--
    this.bySize.moved(partition, size, size - 1)
    if (partition.entries.size === 0 && this.byTenant.get(partition.tenant) === partition) {
      this.byTenant.delete(partition.tenant)
    }
  }
}

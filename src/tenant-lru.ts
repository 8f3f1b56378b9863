/**
 * A least-recently-used cache partitioned by tenant: at most `perTenant` entries of one tenant,
 * whose next entry evicts its own least recently used, and `total` in all, where the next entry
 * evicts the least recently used entry of the tenant holding the most. So a tenant that floods the
 * cache with distinct keys evicts only its own entries, and another tenant's hot entries stay.
 */
export class TenantLru<V> {
  /** Each tenant's entries, least recently used first (a hit moves an entry to the back). */
  private readonly byTenant = new Map<string, Map<string, V>>()
  private count = 0

  constructor(
    readonly perTenant: number,
    readonly total: number,
  ) {}

  /** The entry of `tenant` under `key`, marked as used most recently; undefined when absent. */
  get(tenant: string, key: string): V | undefined {
    const own = this.byTenant.get(tenant)
    const value = own?.get(key)
    if (own && value !== undefined) {
      own.delete(key)
      own.set(key, value)
    }
    return value
  }

  /** Keeps `value` under `key` for `tenant`, evicting as the class says. */
  set(tenant: string, key: string, value: V): void {
    if (this.perTenant <= 0 || this.total <= 0) return
    let own = this.byTenant.get(tenant)
    if (!own) {
      own = new Map()
      this.byTenant.set(tenant, own)
    }
    if (own.delete(key)) this.count--
    if (own.size >= this.perTenant) this.evictOldest(tenant, own)
    else if (this.count >= this.total) {
      let largest: [string, Map<string, V>] = [tenant, own]
      for (const pair of this.byTenant) if (pair[1].size > largest[1].size) largest = pair
      this.evictOldest(...largest)
    }
    own.set(key, value)
    this.count++
  }

  /** Whether `tenant` has an entry under `key` (not marking it used). */
  has(tenant: string, key: string): boolean {
    return this.byTenant.get(tenant)?.has(key) ?? false
  }

  /** How many entries are kept: `tenant`'s, or in all. */
  size(tenant?: string): number {
    return tenant === undefined ? this.count : (this.byTenant.get(tenant)?.size ?? 0)
  }

  private evictOldest(tenant: string, own: Map<string, V>): void {
    const oldest = own.keys().next()
    if (oldest.done) return
    own.delete(oldest.value)
    this.count--
    if (own.size === 0 && this.byTenant.get(tenant) === own) this.byTenant.delete(tenant)
  }
}

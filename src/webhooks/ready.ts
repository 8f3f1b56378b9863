import type { OutboxEntry } from '../kernel/index.js'

/**
 * Due entries kept for one tenant at most, and for all tenants at most. A pass reads up to 4096 due
 * entries; a tenant's backlog keeps a quarter of them, so each entry of a backlog is read about four
 * times before it goes out (sixteen at 256), and four tenants' backlogs fit at once.
 */
export const READY_PER_TENANT = 1024
export const READY_IN_ALL = 4096

/** An entry's key in the dispatcher: tenant and id. */
export const entryKey = (e: OutboxEntry) => `${e.tenant_id}\u0000${e.id}`

/**
 * Due entries a delivery pass read but could not start because their tenant had its share of
 * attempts running, per tenant in the order the pass read them (due order). When one of that
 * tenant's attempts ends, the next one here starts in its place, without another pass: a pass reads
 * up to thousands of due entries, so a backlog of one tenant that ran a pass per finished attempt
 * read its whole backlog again for each delivery. Bounded per tenant and in all; what does not fit
 * is read again by a later pass. An entry kept here may be stale by the time it starts (another
 * process claimed it, an admin call changed it): its claim is a compare-and-set against what was
 * read, so a stale one loses its claim and nothing is sent; a pass that reads it again keeps the
 * newer copy.
 */
export class ReadyEntries {
  private readonly byTenant = new Map<string, Map<string, OutboxEntry>>()
  private count = 0

  has(key: string, tenantId: string): boolean {
    return this.byTenant.get(tenantId)?.has(key) ?? false
  }

  /** Keeps `entry` (or refreshes the copy kept); false when the bounds leave no room for it. */
  keep(entry: OutboxEntry): boolean {
    const k = entryKey(entry)
    let own = this.byTenant.get(entry.tenant_id)
    if (own?.has(k)) {
      own.set(k, entry)
      return true
    }
    if (this.count >= READY_IN_ALL || (own?.size ?? 0) >= READY_PER_TENANT) return false
    if (!own) {
      own = new Map()
      this.byTenant.set(entry.tenant_id, own)
    }
    own.set(k, entry)
    this.count++
    return true
  }

  /** Takes the first entry kept for `tenantId`, if any. */
  take(tenantId: string): OutboxEntry | undefined {
    const own = this.byTenant.get(tenantId)
    if (!own) return undefined
    const [k, entry] = own.entries().next().value as [string, OutboxEntry]
    own.delete(k)
    this.count--
    if (own.size === 0) this.byTenant.delete(tenantId)
    return entry
  }

  clear(): void {
    this.byTenant.clear()
    this.count = 0
  }
}

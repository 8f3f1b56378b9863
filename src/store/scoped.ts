/**
 * Records by tenant, then id: two lookups with the strings as given, rather than one lookup with a
 * joined key, which would build and hash a new string on every call. `null` is the no-tenant scope.
 */
export class Scoped<T> {
  private readonly byTenant = new Map<string, Map<string, T>>()

  get(tenantId: string | null, id: string): T | undefined {
    return this.byTenant.get(tenantId ?? '')?.get(id)
  }
  has(tenantId: string | null, id: string): boolean {
    return this.byTenant.get(tenantId ?? '')?.has(id) ?? false
  }
  set(tenantId: string | null, id: string, value: T): void {
    const scope = this.byTenant.get(tenantId ?? '')
    if (scope) scope.set(id, value)
    else this.byTenant.set(tenantId ?? '', new Map([[id, value]]))
  }
  delete(tenantId: string | null, id: string): boolean {
    const scope = this.byTenant.get(tenantId ?? '')
    if (!scope?.delete(id)) return false
    if (scope.size === 0) this.byTenant.delete(tenantId ?? '')
    return true
  }
  clear(): void {
    this.byTenant.clear()
  }
  /** One tenant's records (empty when it has none). */
  of(tenantId: string | null): ReadonlyMap<string, T> {
    return this.byTenant.get(tenantId ?? '') ?? EMPTY
  }
  /** Each tenant's records, tenant by tenant (the maps themselves: read them, never change them). */
  scopes(): IterableIterator<[tenantId: string, records: ReadonlyMap<string, T>]> {
    return this.byTenant.entries()
  }
  *values(): IterableIterator<T> {
    for (const scope of this.byTenant.values()) yield* scope.values()
  }
  *entries(): IterableIterator<[tenantId: string, id: string, value: T]> {
    for (const [tenantId, scope] of this.byTenant)
      for (const [id, value] of scope) yield [tenantId, id, value]
  }
}
const EMPTY: ReadonlyMap<string, never> = new Map<string, never>()

import type { KeyOwner, Op } from '../../src/store/index.js'

/** How long a cached key lookup is trusted by default: other processes' revocations show within it. */
export const DEFAULT_KEY_CACHE_MS = 500

/** Entries one tenant's keys may hold in the cache by default. */
export const DEFAULT_KEY_CACHE_PER_TENANT = 1000
/** Entries the cache may hold in all by default. */
export const DEFAULT_KEY_CACHE_ENTRIES = 10_000

/** How many entries the cache holds: per tenant, and in all. */
export interface KeyCacheLimits {
  perTenant: number
  total: number
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const member of Object.values(value)) deepFreeze(member)
  }
  return value
}

/** True for the ops that can change who a key belongs to or what it may do. */
function touchesKeys(op: Op): boolean {
  switch (op.op) {
    case 'application.put':
    case 'application.delete':
    case 'session.put':
    case 'session.delete':
    case 'tenant.put':
    case 'tenant.delete':
      return true
    default:
      return false
  }
}

/** The tenant a key belongs to. */
const tenantOf = (owner: KeyOwner): string =>
  owner.kind === 'application' ? owner.application.tenant_id : owner.session.tenant_id

/**
 * A per-process cache of key hash → owner. An entry lives `ttlMs` as `now` counts (by default the
 * monotonic `performance.now()`; the store's `clock` when it has one), so a deletion or permission change made by another process takes effect here within that
 * time; a write in this process that touches applications, sessions or tenants clears the cache at
 * once. Unknown keys are never cached (a key created elsewhere works at once). A lookup that started
 * before a clear does not fill the cache. `ttlMs` 0 disables the cache.
 *
 * Bounded per tenant and in all (`limits`): a tenant at its bound makes room by evicting its own
 * oldest entry; with the cache full, the tenant holding the most entries loses its oldest. So a
 * tenant that authenticates with many keys (sessions are keys) evicts only its own entries, never
 * the few of another tenant. An eviction costs only a lookup in the database.
 */
export function keyCache(
  ttlMs: number,
  lookup: (keyHash: string) => Promise<KeyOwner | null>,
  limits: KeyCacheLimits = { perTenant: DEFAULT_KEY_CACHE_PER_TENANT, total: DEFAULT_KEY_CACHE_ENTRIES },
  /** The time in ms that entries age by. @default performance.now */
  now: () => number = () => performance.now(),
) {
  const entries = new Map<string, { owner: KeyOwner; tenant: string; until: number }>()
  /** Each tenant's cached key hashes, oldest first. */
  const byTenant = new Map<string, Set<string>>()
  let generation = 0
  const forget = (keyHash: string) => {
    const entry = entries.get(keyHash)
    if (!entry) return
    entries.delete(keyHash)
    const own = byTenant.get(entry.tenant)
    own?.delete(keyHash)
    if (own && !own.size) byTenant.delete(entry.tenant)
  }
  const evictOldestOf = (tenant: string) => {
    const oldest = byTenant.get(tenant)?.values().next().value
    if (oldest !== undefined) forget(oldest)
  }
  const largest = () => {
    let tenant: string | undefined
    let most = 0
    for (const [t, own] of byTenant) {
      if (own.size > most) {
        most = own.size
        tenant = t
      }
    }
    return tenant
  }
  const remember = (keyHash: string, owner: KeyOwner) => {
    forget(keyHash)
    const tenant = tenantOf(owner)
    if ((byTenant.get(tenant)?.size ?? 0) >= limits.perTenant) evictOldestOf(tenant)
    if (entries.size >= limits.total) evictOldestOf(largest() ?? tenant)
    entries.set(keyHash, { owner, tenant, until: now() + ttlMs })
    let own = byTenant.get(tenant)
    if (!own) {
      own = new Set()
      byTenant.set(tenant, own)
    }
    own.add(keyHash)
  }
  return {
    find: async (keyHash: string): Promise<KeyOwner | null> => {
      if (ttlMs <= 0) return lookup(keyHash)
      const hit = entries.get(keyHash)
      if (hit && hit.until > now()) return hit.owner
      const started = generation
      const owner = await lookup(keyHash)
      if (owner === null) {
        forget(keyHash)
        return null
      }
      deepFreeze(owner)
      if (started === generation) remember(keyHash, owner)
      return owner
    },
    /** Called after a write commits (and after a failed one): clears the cache when `ops` touch keys. */
    written: (ops: readonly Op[]): void => {
      if (ops.some(touchesKeys)) {
        generation++
        entries.clear()
        byTenant.clear()
      }
    },
    /** How many entries are cached: `tenant`'s, or in all. */
    size: (tenant?: string): number =>
      tenant === undefined ? entries.size : (byTenant.get(tenant)?.size ?? 0),
  }
}

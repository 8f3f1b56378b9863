import type { KeyOwner } from '../../src/store/contract.js'
import type { Op } from '../../src/types.js'

/** How long a cached key lookup is trusted by default: other processes' revocations show within it. */
export const DEFAULT_KEY_CACHE_MS = 500

const MAX_ENTRIES = 10_000

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

/**
 * A per-process cache of key hash → owner. An entry lives `ttlMs` (wall-clock freshness, not domain
 * time), so a deletion or permission change made by another process takes effect here within that
 * time; a write in this process that touches applications, sessions or tenants clears the cache at
 * once. Unknown keys are never cached (a key created elsewhere works at once). A lookup that started
 * before a clear does not fill the cache. `ttlMs` 0 disables the cache.
 */
export function keyCache(ttlMs: number, lookup: (keyHash: string) => Promise<KeyOwner | null>) {
  const entries = new Map<string, { owner: KeyOwner; until: number }>()
  let generation = 0
  return {
    find: async (keyHash: string): Promise<KeyOwner | null> => {
      if (ttlMs <= 0) return lookup(keyHash)
      const hit = entries.get(keyHash)
      if (hit && hit.until > performance.now()) return hit.owner
      const started = generation
      const owner = await lookup(keyHash)
      if (owner === null) {
        entries.delete(keyHash)
        return null
      }
      deepFreeze(owner)
      if (started === generation) {
        if (entries.size >= MAX_ENTRIES) entries.clear()
        entries.set(keyHash, { owner, until: performance.now() + ttlMs })
      }
      return owner
    },
    /** Called after a write commits (and after a failed one): clears the cache when `ops` touch keys. */
    written: (ops: readonly Op[]): void => {
      if (ops.some(touchesKeys)) {
        generation++
        entries.clear()
      }
    },
  }
}

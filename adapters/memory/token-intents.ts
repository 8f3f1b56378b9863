import type { StoredTokenIntent } from '../../src/kernel/index.js'
import type { RecordKey } from '../../src/store/index.js'
import { byKey, copy, Scoped } from '../../src/store/index.js'

/**
 * The token intents of a memory state, by tenant and id (data sealed by the sealed store above).
 * Plain data, one field of `MemoryMaps`, with the functions over it below; expiry is read as the session's is, over the records.
 */
export interface TokenIntentMaps {
  readonly intents: Scoped<StoredTokenIntent>
}

/** Empty maps. */
export function emptyTokenIntentMaps(): TokenIntentMaps {
  return { intents: new Scoped() }
}

export function put(m: TokenIntentMaps, intent: StoredTokenIntent): void {
  m.intents.set(intent.tenant_id, intent.id, intent)
}

export function remove(m: TokenIntentMaps, tenantId: string, id: string): void {
  m.intents.delete(tenantId, id)
}

export function get(m: TokenIntentMaps, tenantId: string, id: string): StoredTokenIntent | null {
  const i = m.intents.get(tenantId, id)
  return i ? copy(i) : null
}

/** Keys of at most `limit` intents with `expires_at <= before`. */
export function expired(m: TokenIntentMaps, before: string, limit: number): RecordKey[] {
  const out: RecordKey[] = []
  for (const i of m.intents.values()) {
    if (out.length >= limit) break
    if (i.expires_at <= before) out.push({ tenant_id: i.tenant_id, id: i.id })
  }
  return out
}

export function dump(m: TokenIntentMaps): StoredTokenIntent[] {
  return [...m.intents.values()].sort(byKey((i) => `${i.tenant_id}\u0000${i.id}`)).map(copy)
}

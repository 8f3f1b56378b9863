import type { StoredTokenIntent } from '../../src/kernel/index.js'
import type { RecordKey } from '../../src/store/index.js'
import { byKey, copy, Scoped } from '../../src/store/index.js'

/**
 * The token intents of a memory state, by tenant and id (data sealed by the sealed store above).
 * Composed into `MemoryMaps` (one field); expiry is read as the session's is, over the records.
 */
export class TokenIntentMaps {
  readonly intents = new Scoped<StoredTokenIntent>()

  put(intent: StoredTokenIntent): void {
    this.intents.set(intent.tenant_id, intent.id, intent)
  }

  delete(tenantId: string, id: string): void {
    this.intents.delete(tenantId, id)
  }

  get(tenantId: string, id: string): StoredTokenIntent | null {
    const i = this.intents.get(tenantId, id)
    return i ? copy(i) : null
  }

  /** Keys of at most `limit` intents with `expires_at <= before`. */
  expired(before: string, limit: number): RecordKey[] {
    const out: RecordKey[] = []
    for (const i of this.intents.values()) {
      if (out.length >= limit) break
      if (i.expires_at <= before) out.push({ tenant_id: i.tenant_id, id: i.id })
    }
    return out
  }

  dump(): StoredTokenIntent[] {
    return [...this.intents.values()].sort(byKey((i) => `${i.tenant_id}\u0000${i.id}`)).map(copy)
  }
}

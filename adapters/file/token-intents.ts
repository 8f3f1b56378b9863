import type { StoredTokenIntent } from '../../src/kernel/index.js'
import type { Op } from '../../src/store/index.js'
import type { Databases } from './env.js'
import { key, prefix, read } from './keys.js'

/** Keeps a record's entry in the `expiring` index (`apply.ts`'s `reindexTime`). */
type Reindex = (
  dbs: Databases,
  kind: string,
  tenantId: string,
  id: string,
  old?: string,
  next?: string,
) => void

/**
 * Applies a `token_intent.*` op in the current write transaction (the intent's data sealed by the
 * sealed store above), keeping its `expires_at` in the `expiring` index that `listExpired` reads;
 * false for any other op.
 */
export function applyTokenIntentOp(dbs: Databases, op: Op, reindexTime: Reindex): boolean {
  if (op.op === 'token_intent.put') {
    const k = key(op.intent.tenant_id, op.intent.id)
    const old = dbs.tokenIntents.get(k) as StoredTokenIntent | undefined
    reindexTime(dbs, 'token_intent', op.intent.tenant_id, op.intent.id, old?.expires_at, op.intent.expires_at)
    dbs.tokenIntents.put(k, op.intent)
  } else if (op.op === 'token_intent.delete') {
    const k = key(op.tenant_id, op.id)
    const old = dbs.tokenIntents.get(k) as StoredTokenIntent | undefined
    if (!old) return true
    reindexTime(dbs, 'token_intent', op.tenant_id, op.id, old.expires_at, undefined)
    dbs.tokenIntents.remove(k)
  } else return false
  return true
}

/** The token intent reads, over the databases `fresh()` answers (a current snapshot). */
export function tokenIntentReads(fresh: () => Databases) {
  return {
    getTokenIntent: async (t: string, id: string) =>
      (read(fresh().tokenIntents, t, id) as StoredTokenIntent | undefined) ?? null,
    listTokenIntents: async (t: string, query: { after?: string; limit: number }) => {
      if (query.limit <= 0) return []
      const range = prefix(t)
      const start =
        query.after === undefined ? range.start : Buffer.concat([key(t, query.after), Buffer.from([0])])
      const out: StoredTokenIntent[] = []
      for (const { value } of fresh().tokenIntents.getRange({ start, end: range.end, limit: query.limit }))
        out.push(value as StoredTokenIntent)
      return out
    },
  }
}

/** Every token intent, by tenant then id (the dump). */
export const allTokenIntents = (dbs: Databases): StoredTokenIntent[] =>
  [...dbs.tokenIntents.getRange({})].map((e) => e.value as StoredTokenIntent)

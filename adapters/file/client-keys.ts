import type { StoredClientKey } from '../../src/kernel/index.js'
import type { Op, Page, Range } from '../../src/store/index.js'
import { byKey } from '../../src/store/index.js'
import type { Databases } from './env.js'
import { key, prefix, read } from './keys.js'

/** Applies a `client_key.*` op in the current write transaction. */
export function applyClientKeyOp(
  dbs: Databases,
  op: Extract<Op, { op: 'client_key.put' | 'client_key.delete' }>,
): void {
  if (op.op === 'client_key.put') dbs.clientKeys.put(key(op.key.tenant_id, op.key.id), op.key)
  else dbs.clientKeys.remove(key(op.tenant_id, op.id))
}

/** The client key reads, over the databases `fresh()` answers (a current snapshot). */
export function clientKeyReads(fresh: () => Databases) {
  return {
    getClientKey: async (t: string, id: string) =>
      (read(fresh().clientKeys, t, id) as StoredClientKey | undefined) ?? null,
    listClientKeys: async (t: string, query: Range): Promise<Page<StoredClientKey>> => {
      // A tenant holds a handful of keys (the core bounds them): its range is read and sorted.
      const all = [...fresh().clientKeys.getRange(prefix(t))]
        .map((e) => e.value as StoredClientKey)
        .sort(byKey((k) => `${k.created_at}\u0000${k.id}`))
      return { items: all.slice(query.offset, query.offset + query.limit), total: all.length }
    },
  }
}

/** Every client key, by tenant then id (the dump). */
export const allClientKeys = (dbs: Databases): StoredClientKey[] =>
  [...dbs.clientKeys.getRange({})].map((e) => e.value as StoredClientKey)

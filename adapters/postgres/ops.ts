import type { Check, Op } from '../../src/kernel/types.js'
import { applicationKeyHashes } from '../../src/store/keys.js'
import { sortKey } from './keys.js'

/**
 * `op` as `tv_write` takes it: the op itself, plus what SQL can't derive exactly as JavaScript does —
 * the byte sort key (hex) of paged lists, the JavaScript-lower-cased name of name filters, and every
 * key hash an application holds. Ops are total: one never fails on missing records (it does nothing
 * instead), exactly as `MemoryState.apply`.
 */
export function opArgument(op: Op): object {
  switch (op.op) {
    case 'application.put': {
      const a = op.application
      const hashes = applicationKeyHashes(a)
      return { ...op, sort_key: sortKey(a.created_at, a.id).toString('hex'), hashes }
    }
    case 'formula.put': {
      const f = op.formula
      return { ...op, name_lower: f.name.toLowerCase(), sort_key: sortKey(f.name, f.id).toString('hex') }
    }
    case 'reactor.put': {
      const r = op.reactor
      return {
        ...op,
        name_lower: r.name.toLowerCase(),
        sort_key: sortKey(r.created_at, r.id).toString('hex'),
      }
    }
    default:
      return op
  }
}

/**
 * The ops of a batch as `tv_write` takes them (`opArgument`), the first `token.put` of each token the
 * batch's checks find `token.absent` marked `fresh`: under that token's lock, with the guard held,
 * no row can be there, so `tv_write` inserts it without the upsert's conflict check.
 */
export function opArguments(checks: readonly Check[], ops: readonly Op[]): object[] {
  const absent = new Set<string>()
  for (const c of checks) if (c.check === 'token.absent') absent.add(`${c.tenant_id}\u0000${c.id}`)
  return ops.map((op) => {
    if (op.op !== 'token.put' || absent.size === 0) return opArgument(op)
    const key = `${op.token.tenant_id}\u0000${op.token.id}`
    if (!absent.delete(key)) return op
    return { ...op, fresh: true }
  })
}

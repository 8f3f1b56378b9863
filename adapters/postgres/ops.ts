import type { LogEntry, OutboxEntry, StoredToken } from '../../src/kernel/index.js'
import type { Check, Op } from '../../src/store/index.js'
import { applicationKeyHashes } from '../../src/store/index.js'
import { sortKey } from './keys.js'
import { logPutsTogether } from './logs.js'

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
 * no row can be there, so `tv_write` inserts it without the upsert's conflict check; and the
 * write's audit entries in one op when it has several (`logPutsTogether`).
 */
export function opArguments(checks: readonly Check[], ops: readonly Op[]): object[] {
  const absent = new Set<string>()
  for (const c of checks) if (c.check === 'token.absent') absent.add(`${c.tenant_id}\u0000${c.id}`)
  const args = ops.map((op) => {
    if (op.op !== 'token.put' || absent.size === 0) return opArgument(op)
    const key = `${op.token.tenant_id}\u0000${op.token.id}`
    if (!absent.delete(key)) return op
    return { ...op, fresh: true }
  })
  return logPutsTogether(args)
}

/** What `tv_write` takes for a batch: its checks and ops as JSON values, and whether the first check is deferred. */
export interface WriteArguments {
  checks: readonly object[]
  ops: object[]
  /**
   * The first check, `token.absent`, is left to its put's INSERT: a violation of `tokens_pkey` (or of
   * `token_terms_pkey`, written in the same statement) is its failure.
   */
  deferred: boolean
}

/**
 * The arguments of `tv_write` for a batch: its checks, and its ops as `opArguments` gives them. When
 * the first check is `token.absent` and the first op on that token is its put (a plain INSERT, marked
 * `fresh`), that check is marked `deferred`: `tv_write` does not read it before the ops, only when a
 * later check fails (so the first failing check is still the one answered), and otherwise the
 * INSERT is the guard: under the token's lock, the primary key refuses a row that is there with a
 * unique violation, which rolls back the whole call (nothing written) and answers the first check.
 * No other put can meet a row, so a `tokens_pkey` violation of that call means this guard failed
 * (or a `token_terms_pkey` one: the statement writes the token's terms too, in no set order, and a
 * term row of that id exists only while the token does).
 * (The server logs that error with the key it met: a tenant id and a token id, which are not secret.)
 */
export function writeArguments(checks: readonly Check[], ops: readonly Op[]): WriteArguments {
  const first = checks[0]
  const opArgs = opArguments(checks, ops)
  if (first?.check !== 'token.absent') return { checks, ops: opArgs, deferred: false }
  const put = ops.findIndex(
    (op) =>
      (op.op === 'token.put' && op.token.tenant_id === first.tenant_id && op.token.id === first.id) ||
      (op.op === 'token.delete' && op.tenant_id === first.tenant_id && op.id === first.id),
  )
  if (put < 0 || ops[put]!.op !== 'token.put') return { checks, ops: opArgs, deferred: false }
  return { checks: [{ ...first, deferred: true }, ...checks.slice(1)], ops: opArgs, deferred: true }
}

/** A plain create (`plainCreate`): its token, and its write's audit entries (none with the log off). */
export interface PlainCreate {
  token: StoredToken
  entries: LogEntry[]
}

/**
 * A plain create: a write whose one guard is `token.absent` and whose ops are that token's put (what
 * the core sends for a token whose id it made itself), then only `log.put`s of its tenant, each id
 * once (its audit entries); else null. Such a write needs no `tv_write`: its guard is the primary
 * key of the INSERT, the only lock it must take is its fingerprint's, shared (see
 * `statements.create`), and its entries take none (see `recordNames`).
 */
export function plainCreate(checks: readonly Check[], ops: readonly Op[]): PlainCreate | null {
  if (checks.length !== 1 || ops.length === 0) return null
  const [check] = checks
  const [op] = ops
  if (check?.check !== 'token.absent' || op?.op !== 'token.put') return null
  const { token } = op
  if (token.tenant_id !== check.tenant_id || token.id !== check.id) return null
  const entries: LogEntry[] = []
  for (let i = 1; i < ops.length; i++) {
    const o = ops[i]!
    if (o.op !== 'log.put' || o.entry.tenant_id !== token.tenant_id) return null
    // One INSERT may not meet one key twice: such a write goes through `tv_write`.
    if (entries.some((e) => e.id === o.entry.id)) return null
    entries.push(o.entry)
  }
  return { token, entries }
}

/** A create with webhook deliveries (`hookedCreate`): a plain create, its pending outbox entries, and their bound. */
export interface HookedCreate extends PlainCreate {
  outbox: OutboxEntry[]
  bound: Extract<Check, { check: 'count.within' }>
}

/**
 * A create with webhook deliveries: a plain create's guard and ops (`plainCreate`) plus the bound of
 * its tenant's pending deliveries (`count.within` of `outbox.pending`, the second guard) and puts of
 * pending outbox entries of that tenant, each id once; else null. What the core sends for a create
 * of a tenant with a webhook on `token.created` (see `webhookEffect` in src/webhooks/outbox.ts).
 * Such a write needs no `tv_write` either (see `statements.createHooked`).
 */
export function hookedCreate(checks: readonly Check[], ops: readonly Op[]): HookedCreate | null {
  const [absent, bound] = checks
  if (checks.length !== 2 || !absent || bound?.check !== 'count.within') return null
  if (bound.kind !== 'outbox.pending') return null
  const created = plainCreate(
    [absent],
    ops.filter((op) => op.op !== 'outbox.put'),
  )
  if (!created || created.token.tenant_id !== bound.tenant_id) return null
  const outbox: OutboxEntry[] = []
  for (const op of ops) {
    if (op.op !== 'outbox.put') continue
    const e = op.entry
    if (e.tenant_id !== bound.tenant_id || e.state !== 'pending' || typeof e.due_at !== 'string') return null
    // One INSERT may not meet one key twice: such a write goes through `tv_write`.
    if (outbox.some((o) => o.id === e.id)) return null
    outbox.push(e)
  }
  // Its fields named, not `{ ...created, outbox, bound }`: Node 20 adds keys after a spread on a slow path.
  return outbox.length > 0 ? { token: created.token, entries: created.entries, outbox, bound } : null
}

/**
 * Whether `token`'s terms are its one container and nothing else (no metadata, no search index):
 * the usual token, whose one term row `statements.create` writes from a parameter.
 */
export function onlyContainerTerm(token: StoredToken): boolean {
  return (
    Array.isArray(token.containers) &&
    token.containers.length === 1 &&
    typeof token.containers[0] === 'string' &&
    Object.keys(token.metadata ?? {}).length === 0 &&
    !Array.isArray(token.search_index_hashes)
  )
}

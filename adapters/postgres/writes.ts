import type { Pool, QueryConfig } from 'pg'
import type { Check, Op, WriteResult } from '../../src/store/index.js'
import { checkQuery, firstFailed } from './checks.js'
import { boundsShared, type CountSlots, failedOnBound, MARGIN, withMargin } from './count-slots.js'
import type { TenantGate } from './gate.js'
import { type GroupedWrite, groupAfterOf, MAX_GROUP, WriteGroups } from './groups.js'
import { prepared } from './keys.js'
import { hookedCreateNames, type LockKeys, plainCreateNames, recordNames } from './locking.js'
import { entriesOnly } from './logs.js'
import {
  type HookedCreate,
  hookedCreate,
  onlyContainerTerm,
  type PlainCreate,
  plainCreate,
  type WriteArguments,
  writeArguments,
} from './ops.js'
import { pause, retryPauseMs } from './retry.js'
import type { Statements, Tables } from './statements.js'

/** What the writes of one store go through: its pool, schema, statements, lock keys and tenant gate. */
export interface WriteDeps {
  pool: Pool
  schema: string
  t: Tables
  st: Statements
  locks: LockKeys
  gate: TenantGate
  slots: CountSlots
}

/** A batch as `Store.write` takes it. */
type Batch = { checks?: Check[]; ops: Op[]; deferSync?: boolean }

/** SQLSTATEs of a deadlock and of a serialization failure: the write is retried from the start. */
const RETRY = new Set(['40P01', '40001'])
/** How many times one write is tried when the database answers one of `RETRY`, with a jittered pause between (`retryPauseMs`). */
const SERIALIZATION_ATTEMPTS = 10

/** A write's result from `tv_write`'s answer: -1 applied, else the index of the guard that failed. */
function answerOf(checks: Check[], index: number): WriteResult {
  const failed = index < 0 ? undefined : checks[index]
  return failed ? { ok: false, failed } : { ok: true }
}

/**
 * Whether `error` is a fresh put meeting its token's row: a unique violation of this schema's
 * `tokens` primary key, or of `token_terms`' (the insert writes the token and its terms in one
 * statement, whose parts run in no set order, and a term row of that id exists only while the
 * token does).
 */
function isTokenConflict(error: unknown, schema: string): boolean {
  const e = error as { code?: unknown; constraint?: unknown; schema?: unknown }
  return (
    e.code === '23505' &&
    (e.constraint === 'tokens_pkey' || e.constraint === 'token_terms_pkey') &&
    e.schema === schema
  )
}

/**
 * The statement of plain creates (`plainCreate`), no function: one token through `create` (the
 * usual token) or `createAny`, its columns as parameters; several through `createMany` (all usual)
 * or `createManyAny`, their tokens one JSON array; with their audit entries, the `…Logged` forms
 * of each, which write them in the same statement. The locks are their fingerprints', shared.
 */
export function plainCreateQuery(st: Statements, locks: LockKeys, creates: PlainCreate[]): QueryConfig {
  const tokens = creates.map((c) => c.token)
  const entries = creates.flatMap((c) => c.entries)
  const logged = entries.length > 0
  /** The statement with the entries in it when there are any, else the one without. */
  const pick = (without: string, withEntries: string) => (logged ? withEntries : without)
  const keys = locks.sharedKeys(tokens.flatMap(plainCreateNames))
  const [token] = tokens
  if (tokens.length === 1 && token) {
    const usual = onlyContainerTerm(token)
    const values = [
      token.tenant_id,
      token.id,
      token.type,
      token.expires_at ?? null,
      JSON.stringify(token),
      usual ? token.containers[0] : null,
      keys,
    ]
    if (logged) values.push(JSON.stringify(entries))
    const text = usual ? pick(st.create, st.createLogged) : pick(st.createAny, st.createAnyLogged)
    return prepared(text, values)
  }
  const text = tokens.every(onlyContainerTerm)
    ? pick(st.createMany, st.createManyLogged)
    : pick(st.createManyAny, st.createManyAnyLogged)
  const values: unknown[] = [JSON.stringify(tokens), keys]
  if (logged) values.push(JSON.stringify(entries))
  return prepared(text, values)
}

/**
 * The most pending deliveries the tenant of `creates` may hold before them, going in this order:
 * each create's bound asks `MARGIN` more room (`withMargin`), less what the creates before it add.
 */
function hookedRoom(creates: readonly HookedCreate[]): number {
  let room = Number.POSITIVE_INFINITY
  let before = 0
  for (const c of creates) {
    room = Math.min(room, c.bound.max - MARGIN - before)
    before += c.outbox.length
  }
  return room
}

/**
 * The statement of creates with webhook deliveries of one tenant (`hookedCreate`): `createHooked`
 * (each the usual token) or `createHookedAny`, their bound held shared with a count slot (only
 * when `boundsShared` says so: the caller's to ask). Answers `ok`, false when the bound did not
 * hold with the margin (nothing written).
 */
export function hookedCreateQuery(d: WriteDeps, creates: readonly HookedCreate[]): QueryConfig {
  const tokens = creates.map((c) => c.token)
  const { keys, shared } = d.locks.order(hookedCreateNames(creates, d.slots.next()))
  const text = tokens.every(onlyContainerTerm) ? d.st.createHooked : d.st.createHookedAny
  return prepared(text, [
    JSON.stringify(tokens),
    keys,
    shared,
    JSON.stringify(creates.flatMap((c) => c.entries)),
    JSON.stringify(creates.flatMap((c) => c.outbox)),
    creates[0]!.bound.tenant_id,
    hookedRoom(creates),
  ])
}

/**
 * Whether `error` is a create with deliveries meeting a delivery's row: a unique violation of this
 * schema's `outbox` primary key. Its statement inserts them without `ON CONFLICT` (see
 * `hookedCreateSql`); the write then goes through `tv_write`, whose `outbox.put` writes over it.
 */
function isDeliveryConflict(error: unknown, schema: string): boolean {
  const e = error as { code?: unknown; constraint?: unknown; schema?: unknown }
  return e.code === '23505' && e.constraint === 'outbox_pkey' && e.schema === schema
}

/**
 * Whether `error` fails every write alike: no SQL state (the connection failed, the call timed
 * out), or the database unreachable, shutting down or out of resources (classes 08, 53, 57, 58).
 */
function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code
  return typeof code !== 'string' || /^(08|53|57|58)/.test(code)
}

/** The tenant a write is for: its first op's (or check's) `tenant_id`, `''` for none. */
function batchTenant(batch: { checks?: Check[]; ops: Op[] }): string {
  const first = (batch.ops[0] ?? batch.checks?.[0]) as unknown as Record<string, unknown> | undefined
  if (!first) return ''
  if (typeof first['tenant_id'] === 'string') return first['tenant_id']
  for (const value of Object.values(first)) {
    const nested = value as { tenant_id?: unknown } | null
    if (nested && typeof nested === 'object' && typeof nested.tenant_id === 'string') return nested.tenant_id
  }
  return ''
}

/**
 * The call of `tv_write` for one write. Audit entries only (a read's or a refusal's) and a write
 * marked `deferSync` (the re-encryption sweep's) commit without waiting for the WAL flush: a later
 * commit that waits for it flushes the WAL up to its own record, so every commit before it too.
 */
function writeConfig(
  d: WriteDeps,
  checks: Check[],
  ops: Op[],
  args: WriteArguments,
  deferSync: boolean,
  countSlot: number | undefined,
) {
  const entries = entriesOnly(checks, ops)
  if (entries) return prepared(d.st.logsUnsynced, [JSON.stringify(entries)])
  const { keys, shared } = d.locks.order(recordNames(checks, ops, countSlot))
  const values = [JSON.stringify(args.checks), JSON.stringify(args.ops), keys, shared]
  return prepared(deferSync ? d.st.writeUnsynced : d.st.write, values)
}

/** How a write goes alone: whether it is a sweep's (`deferSync`), and whether its bounds must be held exclusive. */
interface AloneOptions {
  deferSync?: boolean
  exclusiveBounds?: boolean
}

/**
 * The one statement of a write alone: a plain create's (`plainCreateQuery`), a create with webhook
 * deliveries' (`hookedCreateQuery`, its bound shared), or `tv_write`'s (`writeConfig`). With it,
 * whether the first guard, `token.absent`, is the primary key of its put's INSERT (a plain or
 * hooked create's is, and so is a deferred one's), and whether its bounds are held shared.
 */
function aloneQuery(d: WriteDeps, checks: Check[], ops: Op[], options: AloneOptions) {
  const created = plainCreate(checks, ops)
  if (created)
    return {
      config: plainCreateQuery(d.st, d.locks, [created]),
      absentIsKey: true,
      sharedBounds: false,
      hooked: false,
    }
  const sharedBounds = !options.exclusiveBounds && boundsShared([{ checks, ops }])
  const hooked = sharedBounds && !options.deferSync ? hookedCreate(checks, ops) : null
  if (hooked) return { config: hookedCreateQuery(d, [hooked]), absentIsKey: true, sharedBounds, hooked: true }
  const args = writeArguments(sharedBounds ? withMargin(checks) : checks, ops)
  const slot = sharedBounds ? d.slots.next() : undefined
  const config = writeConfig(d, checks, ops, args, options.deferSync === true, slot)
  return { config, absentIsKey: args.deferred, sharedBounds, hooked: false }
}

/**
 * One write in one call (`tv_write`, or a plain or hooked create's statement), retried on a
 * deadlock or a serialization failure. A write whose bounds it held shared (`boundsShared`) and
 * whose bound failed with the margin runs again holding them exclusive: only that answer is the
 * bound's.
 */
async function writeAlone(
  d: WriteDeps,
  tenant: string,
  checks: Check[],
  ops: Op[],
  options: AloneOptions = {},
): Promise<WriteResult> {
  const { config, absentIsKey, sharedBounds, hooked } = aloneQuery(d, checks, ops, options)
  for (let attempt = 1; ; attempt++) {
    try {
      const { rows } = await d.gate.run(tenant, () => d.pool.query<{ failed?: number; ok?: boolean }>(config))
      // A create with deliveries answers `ok`: false is its bound's guard (the second) failing.
      const answer = answerOf(checks, rows[0]?.ok === false ? 1 : (rows[0]?.failed ?? -1))
      if (sharedBounds && failedOnBound(answer))
        return writeAlone(d, tenant, checks, ops, { ...options, exclusiveBounds: true })
      return answer
    } catch (error) {
      // The first guard, `token.absent`, failed: its put met the row (the call wrote nothing).
      if (absentIsKey && isTokenConflict(error, d.schema)) return { ok: false, failed: checks[0]! }
      // A delivery's id met its row (the call wrote nothing): through `tv_write`, which writes over it.
      if (hooked && isDeliveryConflict(error, d.schema))
        return writeAlone(d, tenant, checks, ops, { ...options, exclusiveBounds: true })
      const code = (error as { code?: unknown }).code
      if (attempt < SERIALIZATION_ATTEMPTS && typeof code === 'string' && RETRY.has(code)) {
        await pause(retryPauseMs(attempt))
        continue
      }
      throw error
    }
  }
}

/**
 * The one statement of a group that is all plain creates (`plainCreateQuery`) or all creates with
 * webhook deliveries whose bound the group may hold shared (`hookedCreateQuery`); else null. Each
 * entry's and delivery's id once across the group (one INSERT may not meet one key twice).
 */
function togetherQuery(d: WriteDeps, group: readonly GroupedWrite[]): QueryConfig | null {
  const ids = new Set<string>()
  /** Whether none of `records` was met before in the group (and now each is). */
  const fresh = (records: readonly { id: string }[], kind: string) => {
    for (const r of records) {
      const k = `${kind}:${r.id}`
      if (ids.has(k)) return false
      ids.add(k)
    }
    return true
  }
  const plain: PlainCreate[] = []
  const hooked: HookedCreate[] = []
  for (const write of group) {
    const create = plainCreate(write.checks, write.ops)
    const withDeliveries = create ? null : hookedCreate(write.checks, write.ops)
    if (create && fresh(create.entries, 'log')) plain.push(create)
    else if (withDeliveries && fresh(withDeliveries.entries, 'log') && fresh(withDeliveries.outbox, 'outbox'))
      hooked.push(withDeliveries)
    else return null
  }
  if (plain.length === group.length) return plainCreateQuery(d.st, d.locks, plain)
  const tenant = hooked[0]?.bound.tenant_id
  const oneBound = hooked.every((c) => c.bound.tenant_id === tenant)
  if (hooked.length === group.length && oneBound && boundsShared(group)) return hookedCreateQuery(d, hooked)
  return null
}

/**
 * A group of plain creates only, or of creates with webhook deliveries only (`togetherQuery`), in
 * one statement: answers whether it answered them. It did not when the group holds another write,
 * when a hooked group's bound did not hold with the margin, or when the statement failed (it wrote
 * nothing then): the group goes through `tv_write_many`, which answers each write as it would
 * alone. A failure every write would meet alike (the database unreachable) fails them all.
 */
async function createTogether(d: WriteDeps, tenant: string, group: GroupedWrite[]): Promise<boolean> {
  const query = togetherQuery(d, group)
  if (!query) return false
  let ok: boolean | undefined
  try {
    ok = (await d.gate.run(tenant, () => d.pool.query<{ ok?: boolean }>(query))).rows[0]?.ok
  } catch (error) {
    if (!isConnectionError(error)) return false
    for (const write of group) write.reject(error)
    return true
  }
  if (ok === false) return false
  for (const write of group) write.resolve({ ok: true })
  return true
}

/**
 * Several writes of one tenant in one call of `tv_write_many` (one transaction, each write in a
 * subtransaction of its own, the locks of all taken first in the one global order). A write whose
 * answer is not one `tv_write` gives alone (a put that met a row without a deferred guard) runs
 * alone; so do all of them when the call fails as a whole on a SQL error (a deadlock, a
 * serialization failure, an error of one write): each then fails or succeeds as it would alone.
 */
async function writeTogether(d: WriteDeps, tenant: string, group: GroupedWrite[]): Promise<void> {
  if (await createTogether(d, tenant, group)) return
  const sharedBounds = boundsShared(group)
  const slot = sharedBounds ? d.slots.next() : undefined
  const args = group.map((w) => writeArguments(sharedBounds ? withMargin(w.checks) : w.checks, w.ops))
  const { keys, shared } = d.locks.order(group.flatMap((w) => [...recordNames(w.checks, w.ops, slot)]))
  const writes = JSON.stringify(args.map((a) => [a.checks, a.ops]))
  const config = prepared(d.st.writeMany, [writes, keys, shared])
  let answers: number[] | undefined
  try {
    answers = (await d.gate.run(tenant, () => d.pool.query<{ answers: number[] }>(config))).rows[0]?.answers
  } catch (error) {
    // The database unreachable, shutting down, out of resources or the call timed out: every
    // write fails alike. Any other error is one write's (or a deadlock): each runs alone below.
    if (isConnectionError(error)) {
      for (const write of group) write.reject(error)
      return
    }
  }
  await Promise.all(
    group.map(async (write, i) => {
      const answer = answers?.[i]
      try {
        const result = answer !== undefined && answer >= -1 ? answerOf(write.checks, answer) : undefined
        const bound = sharedBounds && result !== undefined && failedOnBound(result)
        if (result && !bound) write.resolve(result)
        else if (bound)
          write.resolve(await writeAlone(d, tenant, write.checks, write.ops, { exclusiveBounds: true }))
        else if (answer === -2 && args[i]!.deferred) write.resolve({ ok: false, failed: write.checks[0]! })
        else write.resolve(await writeAlone(d, tenant, write.checks, write.ops))
      } catch (error) {
        write.reject(error)
      }
    }),
  )
}

/** Guards alone in one SELECT: one statement reads one snapshot, so they hold together; no lock is needed. */
async function checkAlone(d: WriteDeps, batch: Batch, checks: Check[]): Promise<WriteResult> {
  if (checks.length === 0) return { ok: true }
  const query = () => d.pool.query(checkQuery(d.t, checks))
  const failed = firstFailed(checks, (await d.gate.run(batchTenant(batch), query)).rows[0])
  return failed ? { ok: false, failed } : { ok: true }
}

/**
 * The store's `write`, at most one round trip per write: guards alone in one SELECT; else one call
 * of `tv_write` (`writeAlone`), or, while its tenant has `groupAfterOf(poolMax)` write calls in
 * flight, a place in the tenant's next call of `tv_write_many` (`writeTogether`).
 */
export function pgWriter(d: WriteDeps, poolMax: number): (batch: Batch) => Promise<WriteResult> {
  const groups = new WriteGroups(groupAfterOf(poolMax), MAX_GROUP, (tenant, group) =>
    writeTogether(d, tenant, group),
  )
  return async (batch) => {
    const checks = batch.checks ?? []
    // Guards alone in one SELECT (at most 1 664 columns: more go through tv_write, a statement each).
    if (batch.ops.length === 0 && checks.length <= 1000) return checkAlone(d, batch, checks)
    const { ops } = batch
    const created = plainCreate(checks, ops)
    const tenant = created ? created.token.tenant_id : batchTenant(batch)
    // While the tenant has `groupAfter` calls in flight, its writes wait and go together in one call.
    if (groups.busy(tenant)) return groups.add(tenant, { checks, ops })
    groups.began(tenant)
    try {
      return await writeAlone(d, tenant, checks, ops, { deferSync: batch.deferSync === true })
    } finally {
      groups.ended(tenant)
    }
  }
}

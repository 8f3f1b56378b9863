import type { Check, Op } from './protocol.js'

/** One store write as the core hands it over: its guards and its ops (and `Store.write`'s `deferSync`). */
export interface WriteBatch {
  checks?: Check[]
  ops: Op[]
  deferSync?: boolean
}

/**
 * Who acts in a write: an application or session key, the host's admin API, the service itself
 * (sweep), or a pre-configured proxy called without an API key (`require_auth: false`: the caller
 * is known only by the proxy's key).
 */
export type ActorType = 'application' | 'session' | 'admin' | 'system' | 'proxy'

/**
 * What a write's effects are derived from besides the batch: the call it belongs to. Read once per
 * call (`now` is the call's instant), the same for every write the call makes.
 */
export interface WriteEffectContext {
  /** The tenant the call acts in; null for a call that acts in none (an admin call over all tenants). */
  tenantId: string | null
  /** The application, session or proxy id; null for `admin` and `system`. */
  actorId: string | null
  actorType: ActorType
  /** The request id the HTTP adapter answers in `x-request-id`, when the call came through it. */
  requestId: string | null
  /** The call's operation name (`token.create`, `admin.sweep`): as the journal names it. */
  operation: string
  /** The call's instant, ISO 8601 UTC. */
  now: string
  /**
   * The call's tally, shared by every write of the call: the audit log counts the entries its
   * writes landed here, so a call whose writes logged nothing gets an entry of its own.
   */
  tally?: { entries: number }
}

/**
 * What an effect derives for a write: ops, and the guards those ops need kept in the same write
 * (a per-tenant bound, `count.within`), so that concurrent writes can't pass them as a read before
 * the write would let them.
 */
export interface DerivedWrite {
  ops: Op[]
  checks?: Check[]
}

/**
 * Derives the ops that must land with a batch (audit entries, outbox events) from the call and the
 * batch, and any guards they need (`DerivedWrite`). It never changes the batch; what it returns is
 * appended after the batch's own ops and checks. It may refuse the write by throwing (then nothing
 * is written); a guard it added that fails refuses the write with the hook's `refused` error. It
 * runs once per `write` attempt: a write refused by its checks (`{ ok: false }`) lands none of its
 * ops, so a retry derives again.
 */
export type WriteEffect = (
  context: WriteEffectContext,
  batch: Readonly<WriteBatch>,
) => Op[] | DerivedWrite | Promise<Op[] | DerivedWrite>

/**
 * What the effect may learn of how its ops' write ended (for effects that keep state across
 * writes, such as the audit log's per-process chains): `ok` (acknowledged), `refused` (the checks
 * failed: nothing landed) or `unknown` (the store threw: it may or may not have landed).
 */
export type WriteOutcome = 'ok' | 'refused' | 'unknown'

/** A write effect with a hook told how the write its ops rode in ended. */
export interface WriteEffectHook {
  derive: WriteEffect
  /** Called once per write that carried ops of this effect, after the store answered (or threw). */
  settled?(context: WriteEffectContext, ops: readonly Op[], outcome: WriteOutcome): void
  /**
   * The error a write is refused with when a guard this effect added failed: the caller asked for
   * none of them, so it is thrown rather than answered as `{ ok: false }` (which callers read as
   * one of their own guards, and may retry). Without it, the refusal is answered as it is.
   */
  refused?(check: Check): Error
}

/** The effects of a service, in the order their ops are appended. Empty: writes pass through unchanged. */
export type WriteEffects = readonly WriteEffectHook[]

/**
 * Wraps a store's `write` so that every batch first gets the ops `effects` derive from it, in the
 * same atomic write: the change and its derived ops land together or not at all. A batch with no
 * ops (nothing to change) goes through as it is. `context` is read once per write.
 *
 * This is the one place where a call's writes get their derived ops: the service builds each call's
 * `ctx.store` (and its admin and sweep writes) with it; features never add audit or outbox ops.
 */
export function withWriteEffects<R extends { ok: boolean; failed?: Check }>(
  write: (batch: WriteBatch) => Promise<R>,
  effects: WriteEffects,
  context: () => WriteEffectContext,
): (batch: WriteBatch) => Promise<R> {
  if (!effects.length) return write
  return async (batch) => {
    if (!batch.ops.length) return write(batch)
    const at = context()
    const derived: DerivedWrite[] = []
    for (const effect of effects) derived.push(asDerived(await effect.derive(at, batch)))
    const full = withDerived(batch, derived)
    if (!full) return write(batch)
    let outcome: WriteOutcome = 'unknown'
    try {
      const result = await write(full)
      outcome = result.ok ? 'ok' : 'refused'
      if (!result.ok && result.failed) refuseForEffect(effects, derived, result.failed)
      return result
    } finally {
      for (const [i, effect] of effects.entries()) {
        const ops = derived[i]!.ops
        if (ops.length) effect.settled?.(at, ops, outcome)
      }
    }
  }
}

const asDerived = (d: Op[] | DerivedWrite): DerivedWrite => (Array.isArray(d) ? { ops: d } : d)

/**
 * `batch` with the ops and guards of `derived` appended, or null when they add no op. Built as a
 * new object with its fields named, not `{ ...batch, checks, ops }`: Node 20 adds each key written
 * after a spread on a slow path (about 2 µs a write here).
 */
function withDerived(batch: Readonly<WriteBatch>, derived: readonly DerivedWrite[]): WriteBatch | null {
  const ops = batch.ops.slice()
  let checks: Check[] | undefined
  for (const d of derived) {
    for (const op of d.ops) ops.push(op)
    if (!d.checks?.length) continue
    checks ??= batch.checks ? batch.checks.slice() : []
    for (const check of d.checks) checks.push(check)
  }
  if (ops.length === batch.ops.length) return null
  const checksOf = checks ?? batch.checks
  const full: WriteBatch = checksOf ? { checks: checksOf, ops } : { ops }
  if (batch.deferSync !== undefined) full.deferSync = batch.deferSync
  return full
}

/** Throws the `refused` error of the effect whose guard `failed` is (the store answers the check it was given, or an equal one). */
function refuseForEffect(effects: WriteEffects, derived: readonly DerivedWrite[], failed: Check): void {
  const same = (c: Check) => c === failed || JSON.stringify(c) === JSON.stringify(failed)
  for (const [i, effect] of effects.entries()) {
    if (effect.refused && derived[i]!.ops.length && (derived[i]!.checks ?? []).some(same))
      throw effect.refused(failed)
  }
}

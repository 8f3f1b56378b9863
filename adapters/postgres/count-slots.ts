import type { Check, Op, WriteResult } from '../../src/store/index.js'

/**
 * Per-tenant bounds (`count.within`) without one lock per tenant. A write whose bound has room
 * takes the bound's lock *shared* and one of `COUNT_SLOTS` slot locks of it exclusive, and its
 * guard asks for `MARGIN` more room than it needs: so up to `COUNT_SLOTS` writes of one tenant
 * add to one count at once (a tenant's creates with a webhook do not queue on one lock). Near the
 * bound (the guard fails with the margin, or the bound has less room than the margin at all), the
 * write runs again holding the bound's lock exclusive, with the guard exactly as the core gave it.
 *
 * Why the margin is enough: take the writes that committed, and the last of them to read its
 * guard, Z. Every write committed before Z read its guard is in the count Z read. Any other one
 * read its guard before Z and still held its locks then: not exclusive (Z held the bound's lock
 * shared), so shared with a slot of its own — at most `COUNT_SLOTS − 1` of them, each adding at
 * most `SHARED_ADDS` (a write adding more takes the exclusive lock). So the count after all of them
 * is at most what Z read plus what Z adds plus `MARGIN`: within the bound, since Z's guard held.
 * (Writes that only lower a count take no lock: they only make guards hold more often. A write
 * holding the lock exclusive read every committed write and waits for every shared holder.)
 */
export const COUNT_SLOTS = 8
/** What one call's writes may add to one count and still take its lock shared. */
export const SHARED_ADDS = 64
/** The room a shared guard asks for beyond its own write: what the other slots' writes may add. */
export const MARGIN = (COUNT_SLOTS - 1) * SHARED_ADDS

type CountCheck = Extract<Check, { check: 'count.within' }>
type Write = { readonly checks: readonly Check[]; readonly ops: readonly Op[] }

/** What `op` adds at most to `c`'s count, as the tables' triggers count it. */
function addsTo(c: CountCheck, op: Op): number {
  if (c.kind === 'outbox.pending')
    return op.op === 'outbox.put' && op.entry.tenant_id === c.tenant_id && op.entry.state === 'pending'
      ? 1
      : 0
  return op.op === 'webhook.put' && op.webhook.tenant_id === c.tenant_id ? 1 : 0
}

/**
 * Whether `writes`, going in one call (one transaction), hold their bounds shared: they guard at
 * least one, each has at least `MARGIN` of room, and they add at most `SHARED_ADDS` to each.
 */
export function boundsShared(writes: readonly Write[]): boolean {
  const counts = writes.flatMap((w) => w.checks.filter((c): c is CountCheck => c.check === 'count.within'))
  if (counts.length === 0) return false
  for (const c of counts) {
    // A staged count moves by characters, not records: no margin covers it, so it is held exclusive.
    if (c.max < MARGIN || c.kind === 'transaction.staged') return false
    let adds = 0
    for (const w of writes) for (const op of w.ops) adds += addsTo(c, op)
    if (adds > SHARED_ADDS) return false
  }
  return true
}

/** `checks` with each bound asking for `MARGIN` more room (`max` lowered by it), as a shared write sends them. */
export function withMargin(checks: readonly Check[]): Check[] {
  return checks.map((c) => (c.check === 'count.within' ? { ...c, max: c.max - MARGIN } : c))
}

/** Whether a shared write's answer failed on a bound: it runs again with the bound's lock exclusive. */
export function failedOnBound(result: WriteResult): boolean {
  return !result.ok && result.failed.check === 'count.within'
}

/**
 * The slot locks a process hands out: in turn, from a place of its own (so two processes do not
 * begin on the same slot), the one per call.
 */
export class CountSlots {
  private turn = Math.floor(Math.random() * COUNT_SLOTS)

  next(): number {
    this.turn = (this.turn + 1) % COUNT_SLOTS
    return this.turn
  }
}

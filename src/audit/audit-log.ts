import { lightTurn, tooMany } from '../kernel/index.js'
import {
  isStoreError,
  type Op,
  type Store,
  type WriteEffectContext,
  type WriteEffectHook,
  type WriteOutcome,
} from '../store/index.js'
import { type AuditMac, chained, type HeldLane, Lanes } from './chain.js'
import { type EntryDraft, entriesOfWrite } from './entries.js'

/** Entries of calls waiting for their group commit, per tenant, at most; one more call answers 429. */
export const MAX_PENDING_ENTRIES_PER_TENANT = 4096

/** Entries one group commit (one store write) carries at most; the rest wait for the next one. */
export const MAX_FLUSH_ENTRIES = 1024

/** About how many bytes of entries one group commit carries at most (see `entryBytes`). */
export const MAX_FLUSH_BYTES = 1_048_576

/** One call's entries waiting for their group commit, and how to answer it. */
interface Waiting {
  drafts: EntryDraft[]
  bytes: number
  resolve: () => void
  reject: (error: unknown) => void
}

/**
 * Whether a group write of `parts` tenants that failed with `failure` is made again tenant by
 * tenant: when it held more than one, and the store answered (not unreachable, closed or locked).
 */
const writtenAgain = (failure: unknown, parts: number) =>
  parts > 1 && !isStoreError(failure, 'unavailable', 'closed', 'locked')

/** One tenant's part of a group commit: its lane, its calls and their entries' ops. */
interface Sealed {
  lane: HeldLane
  calls: Waiting[]
  ops: Op[]
}

/** A tenant's calls waiting for a group commit, in the order they came, and their entries' count. */
interface Pending {
  calls: Waiting[]
  entries: number
}

/**
 * About the bytes an entry takes in a store write: its strings' lengths and 256 for its id, lane,
 * seq, MAC and field names. Bounds a group commit without encoding anything twice.
 */
function entryBytes(d: EntryDraft): number {
  return (
    256 +
    d.tenant_id.length +
    d.actor_type.length +
    d.entity_type.length +
    d.operation.length +
    d.message.length +
    d.outcome.length +
    d.created_at.length +
    (d.actor_id?.length ?? 0) +
    (d.entity_id?.length ?? 0) +
    (d.request_id?.length ?? 0)
  )
}

/**
 * The audit log of one service process: the write effect that puts each write's entries in the
 * write itself, and the group commit of the entries of calls that wrote nothing (reads, refusals):
 * the entries of every call that arrives while one commit is under way — of every tenant — wait
 * together for the next one: one store write (one sync, one round trip) for many calls, and each
 * call answers only once its entries are committed. One commit is under way at a time, bounded
 * (`MAX_FLUSH_ENTRIES`, `MAX_FLUSH_BYTES`); it takes the tenants' calls in turn, one call of each
 * tenant a round, so a tenant with many entries waiting holds another's back by at most one commit.
 * Each tenant's entries of a commit are numbered on one lane of that tenant, in the order the calls
 * came (its chain order).
 */
export class AuditLog {
  readonly lanes = new Lanes()
  /** Calls waiting for a group commit, per tenant; the tenant whose turn is next comes first. */
  private readonly pending = new Map<string, Pending>()
  /** Whether a group commit is under way (one at a time). */
  private flushing = false
  /** Lanes held by writes under way, by lane id (what `settled` gives back, read from the entries). */
  private readonly held = new Map<string, HeldLane>()

  constructor(
    /**
     * The store entries are committed to: below the write effects (the log's own writes derive
     * nothing) and below the sealed store (entries hold nothing to seal: a group commit skips a
     * sealing pass, a promise per entry).
     */
    private readonly store: Pick<Store, 'write'>,
    readonly mac: AuditMac,
  ) {}

  /** The write effect: each write's entries, numbered on a lane per tenant, in the write itself. */
  get effect(): WriteEffectHook {
    return {
      derive: (context, batch) => this.derive(context, batch.ops),
      settled: (context, ops, outcome) => {
        this.settle(ops, outcome)
        if (outcome === 'ok' && context.tally) context.tally.entries += ops.length
      },
    }
  }

  private async derive(context: WriteEffectContext, ops: readonly Op[]): Promise<Op[]> {
    const drafts = entriesOfWrite(context, ops)
    if (!drafts.length) return []
    const byTenant = new Map<string, EntryDraft[]>()
    for (const d of drafts) {
      const list = byTenant.get(d.tenant_id)
      if (list) list.push(d)
      else byTenant.set(d.tenant_id, [d])
    }
    const held: HeldLane[] = []
    const out: Op[] = []
    try {
      // Lanes are taken in one order of tenants, so two writes over the same tenants never each
      // hold a lane the other waits for (`Lanes.acquire`).
      const tenants = byTenant.size > 1 ? [...byTenant.keys()].sort() : [...byTenant.keys()]
      for (const tenantId of tenants) {
        const list = byTenant.get(tenantId)!
        const taken = this.lanes.acquire(tenantId, list.length)
        const lane = 'lane' in taken ? taken : await taken
        held.push(lane)
        const sealed = chained(this.mac, lane, list)
        for (const entry of Array.isArray(sealed) ? sealed : await sealed) out.push({ op: 'log.put', entry })
      }
    } catch (error) {
      // Nothing was written: every lane is given back as if refused.
      for (const lane of held) this.lanes.settle(lane, 'refused')
      throw error
    }
    for (const lane of held) this.held.set(lane.lane.id, lane)
    return out
  }

  private settle(ops: readonly Op[], outcome: WriteOutcome): void {
    for (const op of ops) {
      if (op.op !== 'log.put') continue
      const lane = this.held.get(op.entry.lane)
      if (!lane) continue
      this.held.delete(op.entry.lane)
      this.lanes.settle(lane, outcome)
    }
  }

  /**
   * Commits `drafts` (entries of one tenant's call that wrote nothing) with the other calls' entries
   * waiting, and resolves once they are in the store. Rejects when the commit failed (the call then
   * answers 503, never its data without its entry), or at once with 429 when the tenant has
   * `MAX_PENDING_ENTRIES_PER_TENANT` entries waiting.
   */
  commit(tenantId: string, drafts: EntryDraft[]): Promise<void> {
    if (!drafts.length) return Promise.resolve()
    let p = this.pending.get(tenantId)
    if ((p?.entries ?? 0) + drafts.length > MAX_PENDING_ENTRIES_PER_TENANT) {
      return Promise.reject(tooMany('audit log entries waiting for their commit', 1))
    }
    if (!p) {
      p = { calls: [], entries: 0 }
      this.pending.set(tenantId, p)
    }
    let bytes = 0
    for (const d of drafts) bytes += entryBytes(d)
    const own = p
    const done = new Promise<void>((resolve, reject) => {
      own.calls.push({ drafts, bytes, resolve, reject })
    })
    own.entries += drafts.length
    if (!this.flushing) void this.flush()
    return done
  }

  /**
   * Group commits, one after the other, while calls wait. The first waits for the event loop's
   * next turn: every call whose entries are made in this turn joins it (on a store that answers at
   * once, as the memory store does, each wave of promises would otherwise make a group of its own,
   * and each group costs a MAC and a store write); the next ones take the calls that came while the
   * one before was under way.
   */
  private async flush(): Promise<void> {
    this.flushing = true
    try {
      await lightTurn()
      while (this.pending.size > 0) await this.writeGroup(this.nextGroup())
    } finally {
      this.flushing = false
    }
  }

  /**
   * The calls of the next group commit, by tenant: one call of each tenant waiting in turn, round
   * after round, while the group stays within `MAX_FLUSH_ENTRIES` and `MAX_FLUSH_BYTES` (its first
   * call always goes: a call has at most `MAX_CALL_ENTRIES` + 1 entries). A tenant whose calls did
   * not all go moves to the back of the turn.
   */
  private nextGroup(): Map<string, Waiting[]> {
    const group = new Map<string, Waiting[]>()
    let entries = 0
    let bytes = 0
    let full = false
    while (!full && this.pending.size > 0) {
      // One tenant waiting: no one to take turns with, its calls go in order while they fit.
      const alone = this.pending.size === 1
      for (const [tenantId, p] of [...this.pending]) {
        let took = 0
        do {
          const call = p.calls[took]!
          if (
            entries > 0 &&
            (entries + call.drafts.length > MAX_FLUSH_ENTRIES || bytes + call.bytes > MAX_FLUSH_BYTES)
          ) {
            full = true
            break
          }
          p.entries -= call.drafts.length
          entries += call.drafts.length
          bytes += call.bytes
          const taken = group.get(tenantId)
          if (taken) taken.push(call)
          else group.set(tenantId, [call])
          took++
        } while (alone && took < p.calls.length)
        p.calls.splice(0, took)
        if (full && took === 0) break
        // Its turn is over: next round (or the next commit) it comes after the others.
        this.pending.delete(tenantId)
        if (p.calls.length > 0) this.pending.set(tenantId, p)
        if (full) break
      }
    }
    return group
  }

  /**
   * One store write of a group's entries, each tenant's numbered on one of its lanes; answers the
   * group's calls once it returned. A tenant whose entries cannot be sealed (its key is gone) fails
   * alone. A write that fails for anything but the store being unreachable is made again tenant by
   * tenant, so an entry the store refuses fails its own tenant's calls, never another's.
   */
  private async writeGroup(group: Map<string, Waiting[]>): Promise<void> {
    const sealed: Sealed[] = []
    for (const [tenantId, calls] of group) {
      const drafts = calls.length === 1 ? calls[0]!.drafts : calls.flatMap((c) => c.drafts)
      const lane = this.lanes.take(tenantId, drafts.length)
      try {
        const entries = chained(this.mac, lane, drafts)
        const ops: Op[] = []
        for (const entry of Array.isArray(entries) ? entries : await entries)
          ops.push({ op: 'log.put', entry })
        sealed.push({ lane, calls, ops })
      } catch (error) {
        this.lanes.settle(lane, 'refused')
        for (const c of calls) c.reject(error)
      }
    }
    if (!sealed.length) return
    const failed = await this.commitParts(sealed)
    if (failed === undefined || !writtenAgain(failed, sealed.length)) return
    for (const part of sealed) await this.commitParts([part])
  }

  /**
   * Writes `parts` in one store write, answers their calls and gives their lanes back: the error when
   * it threw or was refused (their calls then fail with it, unless more parts than one were written,
   * which are left waiting to be written again one by one), else undefined.
   */
  private async commitParts(parts: Sealed[]): Promise<unknown> {
    const ops = parts.length === 1 ? parts[0]!.ops : parts.flatMap((p) => p.ops)
    let outcome: WriteOutcome = 'unknown'
    let failure: unknown
    try {
      const result = await this.store.write({ ops })
      outcome = result.ok ? 'ok' : 'refused'
      if (!result.ok) failure = new Error('audit log commit refused')
    } catch (error) {
      failure = error
    }
    const again = failure !== undefined && writtenAgain(failure, parts.length)
    // Left to be written again alone: nothing landed (a store write is all or nothing, and the store
    // answered), so each part keeps its lane, its seqs and its entries as sealed.
    if (again) return failure
    for (const part of parts) {
      for (const c of part.calls) failure === undefined ? c.resolve() : c.reject(failure)
      this.lanes.settle(part.lane, outcome)
    }
    return failure
  }
}

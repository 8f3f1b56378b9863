import { tooMany } from '../kernel/index.js'
import type { Op, Store, WriteEffectContext, WriteEffectHook, WriteOutcome } from '../store/index.js'
import { type AuditMac, chained, type HeldLane, Lanes } from './chain.js'
import { type EntryDraft, entriesOfWrite } from './entries.js'

/** Entries of calls waiting for their group commit, per tenant, at most; one more call answers 429. */
export const MAX_PENDING_ENTRIES_PER_TENANT = 4096

/** Calls waiting on one tenant's group commit, with their drafts. */
interface Pending {
  drafts: EntryDraft[]
  waiters: { resolve: () => void; reject: (error: unknown) => void }[]
}

/**
 * The audit log of one service process: the write effect that puts each write's entries in the
 * write itself, and the group commit of the entries of calls that wrote nothing (reads, refusals):
 * per tenant, the entries of every call that arrives while one commit is under way wait together
 * for the next one — one store write (one sync) for many calls — and each call answers only once
 * its entries are committed. Tenants commit independently: one tenant's volume never queues
 * another's entries.
 */
export class AuditLog {
  readonly lanes = new Lanes()
  private readonly pending = new Map<string, Pending>()
  private readonly flushing = new Set<string>()
  /** Lanes held by writes under way, by lane id (what `settled` gives back, read from the entries). */
  private readonly held = new Map<string, HeldLane>()

  constructor(
    /** The store entries are committed to (below the write effects: the log's own writes derive nothing). */
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
      for (const [tenantId, list] of byTenant) {
        const lane = this.lanes.take(tenantId, list.length)
        held.push(lane)
        for (const entry of await chained(this.mac, lane, list)) out.push({ op: 'log.put', entry })
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
   * waiting for that tenant, and resolves once they are in the store. Rejects when the commit
   * failed (the call then answers 503, never its data without its entry), or at once with 429 when
   * the tenant has `MAX_PENDING_ENTRIES_PER_TENANT` entries waiting.
   */
  commit(tenantId: string, drafts: EntryDraft[]): Promise<void> {
    if (!drafts.length) return Promise.resolve()
    let p = this.pending.get(tenantId)
    if (!p) {
      p = { drafts: [], waiters: [] }
      this.pending.set(tenantId, p)
    }
    if (p.drafts.length + drafts.length > MAX_PENDING_ENTRIES_PER_TENANT) {
      return Promise.reject(tooMany('audit log entries waiting for their commit', 1))
    }
    p.drafts.push(...drafts)
    const done = new Promise<void>((resolve, reject) => p.waiters.push({ resolve, reject }))
    if (!this.flushing.has(tenantId)) void this.flush(tenantId)
    return done
  }

  /** Writes what waits for `tenantId` in one store write, then the next batch if more came meanwhile. */
  private async flush(tenantId: string): Promise<void> {
    this.flushing.add(tenantId)
    try {
      for (let p = this.pending.get(tenantId); p; p = this.pending.get(tenantId)) {
        this.pending.delete(tenantId)
        await this.writeBatch(tenantId, p)
      }
    } finally {
      this.flushing.delete(tenantId)
    }
  }

  private async writeBatch(tenantId: string, p: Pending): Promise<void> {
    const lane = this.lanes.take(tenantId, p.drafts.length)
    let outcome: WriteOutcome = 'unknown'
    try {
      const entries = await chained(this.mac, lane, p.drafts)
      const result = await this.store.write({ ops: entries.map((entry) => ({ op: 'log.put', entry })) })
      outcome = result.ok ? 'ok' : 'refused'
      if (!result.ok) throw new Error('audit log commit refused')
      for (const w of p.waiters) w.resolve()
    } catch (error) {
      for (const w of p.waiters) w.reject(error)
    } finally {
      this.lanes.settle(lane, outcome)
    }
  }
}

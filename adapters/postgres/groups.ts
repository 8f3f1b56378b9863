import type { Check, Op, WriteResult } from '../../src/store/index.js'

/** A write waiting to go in one call with others of its tenant, and how to answer it. */
export interface GroupedWrite {
  checks: Check[]
  ops: Op[]
  resolve: (result: WriteResult) => void
  reject: (error: unknown) => void
}

/** Writes sent together in one call at most. */
export const MAX_GROUP = 16

/**
 * Guards and ops sent together in one call at most (a write bigger than this goes in a call of
 * its own): each names a record whose advisory lock the call holds until it commits, and the
 * server's lock table is shared by every session, so sixteen commits of large transactions in one
 * call must not take sixteen times the locks of one.
 */
export const MAX_GROUP_WEIGHT = 2048

/** What a write weighs in a group: its guards and ops. */
const weightOf = (write: { checks: readonly Check[]; ops: readonly Op[] }) =>
  write.checks.length + write.ops.length

/** A tenant's calls in flight past which its writes wait and go together: a quarter of the pool, at least 2. */
export function groupAfterOf(poolMax: number): number {
  return Math.max(2, Math.floor(poolMax / 4))
}

/**
 * Group commit for one store's writes. While a tenant has fewer than `limit` write calls in flight,
 * a write goes alone at once (one caller's write waits for nothing). Past that, writes wait in the
 * tenant's line, and each time one of its calls ends the line's first `max` go together in one call
 * (`send`), in the order they came: one round trip and one commit for many, which is what lets many
 * callers of one tenant outrun one call per write on a small machine.
 */
export class WriteGroups {
  private readonly calls = new Map<string, number>()
  private readonly lines = new Map<string, GroupedWrite[]>()

  constructor(
    private readonly limit: number,
    private readonly max: number,
    private readonly send: (tenant: string, group: GroupedWrite[]) => Promise<void>,
  ) {}

  /** Whether `tenant`'s next write must wait for a group. */
  busy(tenant: string): boolean {
    return (this.calls.get(tenant) ?? 0) >= this.limit
  }

  /** A call of `tenant` begins. */
  began(tenant: string): void {
    this.calls.set(tenant, (this.calls.get(tenant) ?? 0) + 1)
  }

  /** A call of `tenant` ended: the writes waiting in its line go, as many as one call takes. */
  ended(tenant: string): void {
    const left = (this.calls.get(tenant) ?? 1) - 1
    if (left > 0) this.calls.set(tenant, left)
    else this.calls.delete(tenant)
    const line = this.lines.get(tenant)
    if (!line || this.busy(tenant)) return
    const group = line.splice(0, this.groupSize(line))
    if (!line.length) this.lines.delete(tenant)
    this.began(tenant)
    this.send(tenant, group)
      .catch((error: unknown) => {
        for (const write of group) write.reject(error)
      })
      .finally(() => this.ended(tenant))
  }

  /** How many of `line`'s first writes go in one call: at most `max`, and `MAX_GROUP_WEIGHT` (always one). */
  private groupSize(line: readonly GroupedWrite[]): number {
    let weight = 0
    let size = 0
    for (const write of line) {
      weight += weightOf(write)
      if (size >= this.max || (size > 0 && weight > MAX_GROUP_WEIGHT)) break
      size++
    }
    return size
  }

  /** Queues a write of a busy tenant; it is answered once its group's call has. */
  add(tenant: string, write: Omit<GroupedWrite, 'resolve' | 'reject'>): Promise<WriteResult> {
    return new Promise<WriteResult>((resolve, reject) => {
      let line = this.lines.get(tenant)
      if (!line) {
        line = []
        this.lines.set(tenant, line)
      }
      // Named fields, not `{ ...write, resolve, reject }`: a spread then grown costs about 0.8 µs.
      line.push({ checks: write.checks, ops: write.ops, resolve, reject })
    })
  }
}

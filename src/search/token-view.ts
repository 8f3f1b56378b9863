import type { Ctx } from '../call/index.js'
import type { StagedWrite, StoredToken, StoredTransaction } from '../kernel/index.js'
import { invalid } from '../kernel/index.js'
import type { TokenHead } from '../store/index.js'
import { stagedOf } from '../transactions/index.js'
import { WorkMeter } from './meter.js'
import { below, everyId, type IdSource, isPaused, successor } from './planner.js'

/**
 * The one view every token list and search reads through: the tenant's committed tokens as the
 * caller's transaction sees them (its staged writes over them), walked in id order from a keyset
 * position, candidates from the store's indexes, each matched on its head (plain fields) before
 * anything is decrypted; only the tokens a page answers are read whole (`readWhole`).
 */

/**
 * The most units of work one list or search call does (see `WorkMeter`): each record examined
 * (heads read from the store, or children of a parent) is one unit, or more when the query checks
 * costly terms on each (`walkTokens`'s `cost`), and each index entry a join reads past without
 * answering it is one. Past it a v2 page answers what it has with a cursor to go on, a v1 list
 * or search answers 400 (its `total_items` would need more).
 */
export const MAX_EXAMINED = 10_000

/** Units of work between two yields to the event loop (other tenants' calls run). */
export const YIELD_EVERY = 64

/** The most heads one store read asks for (a synchronous store, LMDB, holds the event loop while it reads). */
const HEAD_BATCH = 128

/** A new meter for one list or search call: `MAX_EXAMINED` units, yielding every `YIELD_EVERY`. */
export const newMeter = () => new WorkMeter(MAX_EXAMINED, YIELD_EVERY)

/** A token the walk answers: its head, and the whole record when a staged write gave it. */
export interface Seen {
  head: TokenHead
  staged?: StoredToken
}

/** What a walk reports once it ends. */
export interface WalkEnd {
  /** True when the walk stopped because its call's work cap was spent (more may match at `resume`). */
  exhausted: boolean
  /** When exhausted: the keyset position to go on from (ids at or after it are undecided). */
  resume?: string
}

/** How many staged records a walk reads at once, as it merges them in id order. */
const STAGED_PAGE = 256

/**
 * The caller's transaction's staged records in token id order from `from` on, read a page at a
 * time as a walk reaches them (none without a transaction, or before it staged anything).
 */
class StagedStream {
  private buffer: StagedWrite[] = []
  private at = 0
  private done: boolean
  private after: string | undefined
  constructor(
    private readonly ctx: Ctx,
    private readonly tx: StoredTransaction | null,
    private readonly from: string | undefined,
  ) {
    this.done = !tx || tx.version === 0
    this.after = from === undefined ? undefined : below(from)
  }
  /** The next staged record, without taking it. */
  async peek(): Promise<StagedWrite | undefined> {
    for (;;) {
      if (this.at < this.buffer.length) {
        const next = this.buffer[this.at]!
        // `below(from)` may let a few ids under `from` through: an earlier page answered them.
        if (this.from === undefined || next.token_id >= this.from) return next
        this.at++
        continue
      }
      if (this.done || !this.tx) return undefined
      this.buffer = await this.ctx.store.listStaged(this.ctx.principal.tenantId, this.tx.id, {
        limit: STAGED_PAGE,
        ...(this.after === undefined ? {} : { after: this.after }),
      })
      this.at = 0
      if (this.buffer.length < STAGED_PAGE) this.done = true
      const last = this.buffer[this.buffer.length - 1]
      if (last) this.after = last.token_id
    }
  }
  take(): void {
    this.at++
  }
}

const live = (t: { expires_at?: string }, now: string) => t.expires_at === undefined || t.expires_at > now

/** Where a walk is asked to go: from `from` on, candidates from `source`, each costing `cost` units. */
export interface WalkOptions {
  /** The keyset position to start at (inclusive); from the first id when absent. */
  from?: string
  /** Candidate ids (every id when null: a scan). */
  source: IdSource | null
  /** The first batch of heads read (doubling, up to 128). */
  first: number
  /** The call's work meter (the one its sources charge). */
  meter: WorkMeter
  /** Units each examined record costs. @default 1 */
  cost?: number
}

/**
 * Walks the live tokens the caller sees, in id order from `from` on: committed candidates from
 * `source` (every id when null: a scan), read as heads in batches (the first of `first`, doubling),
 * replaced or dropped by the transaction's staged records, which are read in id order as the walk
 * reaches them, and its staged creations merged in. `visit` answers whether to go on. Stops once
 * the meter is spent (`exhausted`, with where to go on), yielding to other work as it charges.
 */
export async function walkTokens(
  ctx: Ctx,
  tx: StoredTransaction | null,
  options: WalkOptions,
  visit: (seen: Seen) => boolean,
): Promise<WalkEnd> {
  const tenant = ctx.principal.tenantId
  const now = ctx.now()
  const { from, meter } = options
  const cost = options.cost ?? 1
  const staged = new StagedStream(ctx, tx, from)
  /** Whether the walk merges staged records at all (the caller's transaction staged something). */
  const hasStaged = tx !== null && tx.version > 0
  const source = options.source ?? everyId(ctx.store, tenant, options.first, meter)
  let min = from
  let batch = Math.max(1, Math.min(options.first, HEAD_BATCH))
  /** Visits the staged tokens before `upTo` (all when undefined); false once `visit` says stop. */
  const emitStaged = async (upTo: string | undefined): Promise<boolean> => {
    for (;;) {
      const next = await staged.peek()
      if (!next || (upTo !== undefined && next.token_id >= upTo)) return true
      staged.take()
      const token = next.token
      if (token && live(token, now) && !visit({ head: token, staged: token })) return false
    }
  }
  for (;;) {
    const ids: string[] = []
    let paused: string | undefined
    while (ids.length < batch) {
      if (meter.spent) {
        paused = min ?? ''
        break
      }
      const found = await source.atLeast(min)
      if (found === undefined) break
      if (isPaused(found)) {
        paused = found.resume
        break
      }
      ids.push(found)
      meter.candidate = found
      min = successor(found)
      // Counted now, paced as each is matched (`visitBatch`): matching is the work, not finding.
      meter.add(cost)
    }
    batch = Math.min(batch * 2, HEAD_BATCH)
    if (ids.length && !(await visitBatch(ids))) return { exhausted: false }
    if (paused !== undefined) {
      if (hasStaged && !(await emitStaged(paused))) return { exhausted: false }
      return { exhausted: true, resume: paused }
    }
    if (!ids.length) break
  }
  if (hasStaged) await emitStaged(undefined)
  return { exhausted: false }

  /** Visits the candidates `ids` (in order) and the staged tokens among and before them. */
  async function visitBatch(ids: string[]): Promise<boolean> {
    const heads = new Map((await ctx.store.getTokenHeads(tenant, ids)).map((h) => [h.id, h]))
    for (const id of ids) {
      if (hasStaged && !(await emitStaged(id))) return false
      if (!visitOne(id, hasStaged ? await staged.peek() : undefined, heads.get(id))) return false
      await meter.pace(cost)
    }
    return true
  }

  /** Visits candidate `id`: the staged record `next` when it is that token's, else its committed `head`. */
  function visitOne(id: string, next: StagedWrite | undefined, head: TokenHead | undefined): boolean {
    if (next?.token_id === id) {
      staged.take()
      const token = next.token
      return !token || !live(token, now) || visit({ head: token, staged: token })
    }
    return !head || !live(head, now) || visit({ head })
  }
}

/**
 * Walks the live children of `parentId` the caller sees, in link order: links read from the store
 * in batches (the first of 100, doubling up to 128), each child read as a head, replaced or dropped
 * by the transaction's staged records of those children (links never enlist: only staged deletes
 * drop children, and a staged delete of the parent drops them all). `visit` answers whether to go
 * on. Each link examined is a unit of the call's work meter (`meter`, a new one by default): the
 * walk examines at most its cap, yielding to other work as units add up, and is `exhausted` when
 * links are left past the cap.
 */
export async function walkChildren(
  ctx: Ctx,
  tx: StoredTransaction | null,
  parentId: string,
  visit: (seen: Seen) => boolean,
  meter: WorkMeter = newMeter(),
): Promise<WalkEnd> {
  const tenant = ctx.principal.tenantId
  const now = ctx.now()
  if ((await stagedOf(ctx, tx, [parentId])).get(parentId) === null) return { exhausted: false }
  const linksAfter = (after: string | undefined, limit: number) =>
    ctx.store.findChildIds(tenant, parentId, { limit, ...(after === undefined ? {} : { after }) })
  let after: string | undefined
  let batch = 100
  for (;;) {
    const limit = Math.min(batch, meter.cap - meter.units)
    // The cap is spent: the walk is exhausted if any link is left.
    if (limit <= 0) return { exhausted: (await linksAfter(after, 1)).length > 0 }
    const links = await linksAfter(after, limit)
    batch = Math.min(batch * 2, HEAD_BATCH)
    if (!links.length) return { exhausted: false }
    after = links[links.length - 1]!.key
    const staged = await stagedOf(
      ctx,
      tx,
      links.map((l) => l.id),
    )
    const committed = links.filter((l) => !staged.has(l.id)).map((l) => l.id)
    const heads = new Map((await ctx.store.getTokenHeads(tenant, committed)).map((h) => [h.id, h]))
    for (const { id } of links) {
      await meter.charge(1)
      const token = staged.has(id) ? staged.get(id) : undefined
      if (token === null) continue
      const head = token ?? heads.get(id)
      if (!head || !live(head, now)) continue
      if (!visit(token ? { head, staged: token } : { head })) return { exhausted: false }
    }
    if (links.length < limit) return { exhausted: false }
  }
}

/**
 * The whole records of `seen` (in their order): staged ones as staged, committed ones read (and
 * decrypted) in one store call. A committed token gone meanwhile is left out.
 */
export async function readWhole(ctx: Ctx, seen: readonly Seen[]): Promise<StoredToken[]> {
  const committed = seen.filter((s) => !s.staged).map((s) => s.head.id)
  const read = committed.length ? await ctx.store.getTokens(ctx.principal.tenantId, committed) : []
  const byId = new Map(read.map((t) => [t.id, t]))
  return seen.flatMap((s) => {
    const token = s.staged ?? byId.get(s.head.id)
    return token ? [token] : []
  })
}

/**
 * The 400 of a v1 list or search whose count would take more than `MAX_EXAMINED` units of work.
 * It names the work cap, never a count of tokens: the work includes tokens the caller can't read.
 */
export function tooBroad(field: string) {
  return invalid(
    field,
    `is too broad: counting its matches would take more than the ${MAX_EXAMINED} units of work one call may do; narrow it with an exact term (type, id, container, metadata.<key>; data and fingerprint narrow only for a key whose access reaches every token) or use the v2 route, which pages by cursor`,
  )
}

import type { Ctx } from './context.js'
import { invalid } from './errors.js'
import { everyId, type IdSource, successor } from './search-plan.js'
import type { TokenHead } from './store/contract.js'
import { stagedOf } from './txview.js'
import type { StagedWrite, StoredToken, StoredTransaction } from './types.js'

/**
 * The one view every token list and search reads through: the tenant's committed tokens as the
 * caller's transaction sees them (its staged writes over them), walked in id order from a keyset
 * position, candidates from the store's indexes, each matched on its head (plain fields) before
 * anything is decrypted; only the tokens a page answers are read whole (`readWhole`).
 */

/**
 * The most records one call examines (heads read from the store, or children of a parent) before
 * it stops: a v2 page then answers what it has with a cursor to go on, a v1 list or search
 * answers 400 (its `total_items` would need more).
 */
export const MAX_EXAMINED = 10_000

/** How many records a walk examines between two yields to the event loop (other tenants' calls run). */
const YIELD_EVERY = 256

/** Lets other work run: a store answering from memory never leaves the microtask queue on its own. */
export const yieldToOthers = () => new Promise<void>((resolve) => setImmediate(resolve))

/** A token the walk answers: its head, and the whole record when a staged write gave it. */
export interface Seen {
  head: TokenHead
  staged?: StoredToken
}

/** What a walk reports once it ends. */
export interface WalkEnd {
  /** True when the walk stopped at `MAX_EXAMINED` (more may match after `last`). */
  exhausted: boolean
  /** The last id examined (the keyset position to go on from), if any. */
  last?: string
}

/** How many staged records a walk reads at once, as it merges them in id order. */
const STAGED_PAGE = 256

/**
 * The caller's transaction's staged records in token id order after `after`, read a page at a
 * time as a walk reaches them (none without a transaction, or before it staged anything).
 */
class StagedStream {
  private buffer: StagedWrite[] = []
  private at = 0
  private done: boolean
  constructor(
    private readonly ctx: Ctx,
    private readonly tx: StoredTransaction | null,
    private after: string | undefined,
  ) {
    this.done = !tx || tx.version === 0
  }
  /** The next staged record, without taking it. */
  async peek(): Promise<StagedWrite | undefined> {
    if (this.at < this.buffer.length) return this.buffer[this.at]
    if (this.done || !this.tx) return undefined
    this.buffer = await this.ctx.store.listStaged(this.ctx.principal.tenantId, this.tx.id, {
      limit: STAGED_PAGE,
      ...(this.after === undefined ? {} : { after: this.after }),
    })
    this.at = 0
    if (this.buffer.length < STAGED_PAGE) this.done = true
    const last = this.buffer[this.buffer.length - 1]
    if (last) this.after = last.token_id
    return this.buffer[0]
  }
  take(): void {
    this.at++
  }
}

const live = (t: { expires_at?: string }, now: string) => t.expires_at === undefined || t.expires_at > now

/**
 * Walks the live tokens the caller sees, in id order after `after`: committed candidates from
 * `source` (every id when null: a scan), read as heads in batches (the first of `first`, doubling),
 * replaced or dropped by the transaction's staged records, which are read in id order as the walk
 * reaches them, and its staged creations merged in. `visit` answers whether to go on. Examines at
 * most `MAX_EXAMINED` records, yielding to other work as it goes.
 */
export async function walkTokens(
  ctx: Ctx,
  tx: StoredTransaction | null,
  options: { after?: string; source: IdSource | null; first: number },
  visit: (seen: Seen) => boolean,
): Promise<WalkEnd> {
  const tenant = ctx.principal.tenantId
  const now = ctx.now()
  const { after } = options
  const staged = new StagedStream(ctx, tx, after)
  /** Whether the walk merges staged records at all (the caller's transaction staged something). */
  const hasStaged = tx !== null && tx.version > 0
  const source = options.source ?? everyId(ctx.store, tenant, options.first)
  let min = after === undefined ? undefined : successor(after)
  let batch = Math.max(1, options.first)
  let examined = 0
  let last = after
  let sinceYield = 0
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
    while (ids.length < batch && examined + ids.length < MAX_EXAMINED) {
      const id = await source.atLeast(min)
      if (id === undefined) break
      ids.push(id)
      min = successor(id)
    }
    batch = Math.min(batch * 2, 1024)
    if (!ids.length) break
    const heads = new Map((await ctx.store.getTokenHeads(tenant, ids)).map((h) => [h.id, h]))
    for (const id of ids) {
      examined++
      if (hasStaged && !(await emitStaged(id)))
        return { exhausted: false, ...(last === undefined ? {} : { last }) }
      last = id
      const next = hasStaged ? await staged.peek() : undefined
      if (next?.token_id === id) {
        staged.take()
        const token = next.token
        if (token && live(token, now) && !visit({ head: token, staged: token }))
          return { exhausted: false, last: id }
        continue
      }
      const head = heads.get(id)
      if (head && live(head, now) && !visit({ head })) return { exhausted: false, last: id }
    }
    if (examined >= MAX_EXAMINED && (await source.atLeast(min)) !== undefined)
      return { exhausted: true, ...(last === undefined ? {} : { last }) }
    sinceYield += ids.length
    if (sinceYield >= YIELD_EVERY) {
      sinceYield = 0
      await yieldToOthers()
    }
  }
  if (hasStaged) await emitStaged(undefined)
  return { exhausted: false, ...(last === undefined ? {} : { last }) }
}

/**
 * Walks the live children of `parentId` the caller sees, in link order: links read from the store
 * in batches (the first of 100, doubling), each child read as a head, replaced or dropped by the
 * transaction's staged records of those children (links never enlist: only staged deletes drop
 * children, and a staged delete of the parent drops them all). `visit` answers whether to go on.
 * Examines at most `MAX_EXAMINED` children, yielding to other work as it goes.
 */
export async function walkChildren(
  ctx: Ctx,
  tx: StoredTransaction | null,
  parentId: string,
  visit: (seen: Seen) => boolean,
): Promise<WalkEnd> {
  const tenant = ctx.principal.tenantId
  const now = ctx.now()
  if ((await stagedOf(ctx, tx, [parentId])).get(parentId) === null) return { exhausted: false }
  let after: string | undefined
  let batch = 100
  let examined = 0
  for (;;) {
    const limit = Math.min(batch, MAX_EXAMINED - examined)
    if (limit <= 0) {
      const more = await ctx.store.findChildIds(tenant, parentId, {
        limit: 1,
        ...(after === undefined ? {} : { after }),
      })
      return { exhausted: more.length > 0 }
    }
    const links = await ctx.store.findChildIds(tenant, parentId, {
      limit,
      ...(after === undefined ? {} : { after }),
    })
    batch = Math.min(batch * 2, 1024)
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
      examined++
      const token = staged.has(id) ? staged.get(id) : undefined
      if (token === null) continue
      const head = token ?? heads.get(id)
      if (!head || !live(head, now)) continue
      if (!visit(token ? { head, staged: token } : { head })) return { exhausted: false }
    }
    if (links.length < limit) return { exhausted: false }
    await yieldToOthers()
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

/** The 400 of a v1 list or search that would examine more than `MAX_EXAMINED` records to count its total. */
export function tooBroad(field: string) {
  return invalid(
    field,
    `is too broad: counting its matches would examine more than ${MAX_EXAMINED} tokens; narrow it with an exact term (type, id, fingerprint, container, metadata.<key>, data) or use the v2 route, which pages by cursor`,
  )
}

import type { Store, TokenTerm } from '../store/index.js'
import type { WorkMeter } from './meter.js'

/**
 * Candidate sources of the search planner: ids in id order (code-unit order, as the store's token
 * indexes answer), read from the store's indexes a batch at a time as they are needed, and
 * intersected (AND) or merged (OR) without reading more than the walk asks for.
 */

/**
 * Where a source stopped because its call's work meter is spent: no id in `[min, resume)` is in
 * the source (`min` being what it was asked for), and what lies at or after `resume` is undecided.
 */
export interface Paused {
  resume: string
}

/** What `atLeast` answers: an id, `undefined` when none is left, or where it paused. */
export type Found = string | undefined | Paused

/** Whether `found` is a pause (not an id, not the end). */
export const isPaused = (found: Found): found is Paused => typeof found === 'object'

/** Ids in increasing order, read lazily. */
export interface IdSource {
  /**
   * The first id at or after `min` (from the start when undefined), or undefined when none is
   * left, or a pause once the call's meter is spent. Successive calls never ask for a smaller `min`.
   */
  atLeast(min: string | undefined): Promise<Found>
}

/** The smallest string after `id`: `atLeast(after(id))` is the first id past `id`. */
export const successor = (id: string) => `${id}\u0000`

/** The largest batch one index read asks for (a synchronous store read of it stays short). */
const MAX_BATCH = 256

/**
 * A string below `min` with (in practice) nothing of interest between them: the exclusive `after`
 * of a store read that answers from `min` on (the store's `after` is exclusive). Ids between it
 * and `min` may come back; they are skipped.
 */
export function below(min: string): string | undefined {
  if (min === '') return undefined
  const last = min.charCodeAt(min.length - 1)
  const head = min.slice(0, -1)
  return last === 0 ? head : head + String.fromCharCode(last - 1)
}

/**
 * One index of the store (`findTokenIds` of one term, or every id), read in growing batches. Every
 * entry it reads past that is not the walk's candidate is charged to the meter as a skipped entry.
 */
class IndexSource implements IdSource {
  private buffer: string[] = []
  private at = 0
  private last: string | undefined
  private done = false

  constructor(
    private readonly read: (after: string | undefined, limit: number) => Promise<string[]>,
    private batch: number,
    private readonly meter: WorkMeter,
  ) {}

  async atLeast(min: string | undefined): Promise<Found> {
    for (;;) {
      if (min !== undefined) {
        let skipped = 0
        while (this.at < this.buffer.length && this.buffer[this.at]! < min) {
          if (this.buffer[this.at] !== this.meter.candidate) skipped++
          this.at++
        }
        await this.meter.charge(skipped)
      }
      if (this.at < this.buffer.length) return this.buffer[this.at]
      if (this.done) return undefined
      if (this.meter.spent) return { resume: min ?? '' }
      let after = this.last
      const skip = min === undefined ? undefined : below(min)
      if (skip !== undefined && (after === undefined || skip > after)) after = skip
      const limit = this.batch
      this.batch = Math.min(this.batch * 2, MAX_BATCH)
      this.buffer = await this.read(after, limit)
      this.at = 0
      if (this.buffer.length) this.last = this.buffer[this.buffer.length - 1]
      else this.last = after
      if (this.buffer.length < limit) this.done = true
    }
  }
}

/**
 * Ids every source holds (a leapfrog join: each source skips ahead to the others' candidate). What
 * a source skips is charged by the source; once the meter is spent the join pauses at its target
 * (nothing below it is in every source).
 */
class AndSource implements IdSource {
  constructor(
    private readonly sources: readonly IdSource[],
    private readonly meter: WorkMeter,
  ) {}

  async atLeast(min: string | undefined): Promise<Found> {
    let target = await this.sources[0]!.atLeast(min)
    for (;;) {
      if (target === undefined || isPaused(target)) return target
      let agreed = true
      for (const source of this.sources) {
        const id = await source.atLeast(target)
        if (id === undefined || isPaused(id)) return id
        if (id !== target) {
          target = id
          agreed = false
          break
        }
      }
      if (agreed) return target
      if (this.meter.spent) return { resume: target }
    }
  }
}

/** Ids any source holds, merged in order (a pause below every id found pauses the merge). */
class OrSource implements IdSource {
  constructor(private readonly sources: readonly IdSource[]) {}

  async atLeast(min: string | undefined): Promise<Found> {
    let best: Found
    const at = (f: Found) => (f === undefined ? undefined : isPaused(f) ? f.resume : f)
    for (const source of this.sources) {
      const found = await source.atLeast(min)
      const here = at(found)
      const now = at(best)
      if (here !== undefined && (now === undefined || here < now || (here === now && isPaused(found))))
        best = found
    }
    return best
  }
}

/**
 * A query shape the planner reads: AND/OR/NOT of terms, each term either an exact index term or
 * `null` (a wildcard, range or presence test, answered only record by record).
 */
export type PlanNode =
  | { kind: 'and' | 'or'; items: PlanNode[] }
  | { kind: 'not' }
  | { kind: 'all' }
  | { kind: 'term'; term: TokenTerm | null }

/**
 * The candidates of `node` from the store's indexes: a superset of the tokens matching it (each
 * candidate is still matched against the whole query on its head), or `null` when no index
 * narrows it (the walk then reads every id: a scan). Exact terms read their index; AND joins the
 * operands that have one (the others are checked on candidates); OR merges when every operand has
 * one (otherwise it narrows nothing); NOT, wildcards, ranges and presence tests narrow nothing.
 * `first`: the first batch each index read asks for (it doubles with each read, up to 256).
 * Every entry the sources read past without answering it is charged to `meter`.
 */
export function planSource(
  store: Store,
  tenantId: string,
  node: PlanNode,
  first: number,
  meter: WorkMeter,
): IdSource | null {
  const open = (term: TokenTerm) =>
    new IndexSource(
      (after, limit) =>
        store.findTokenIds(tenantId, { term, limit, ...(after === undefined ? {} : { after }) }),
      first,
      meter,
    )
  const plan = (n: PlanNode): IdSource | null => {
    switch (n.kind) {
      case 'term':
        return n.term ? open(n.term) : null
      case 'and': {
        const some = n.items.map(plan).filter((s): s is IdSource => s !== null)
        return some.length === 0 ? null : some.length === 1 ? some[0]! : new AndSource(some, meter)
      }
      case 'or': {
        const all = n.items.map(plan)
        if (all.some((s) => s === null)) return null
        return all.length === 1 ? all[0]! : new OrSource(all as IdSource[])
      }
      case 'not':
      case 'all':
        return null
    }
  }
  return plan(node)
}

/** Every id of the tenant in order: the source of a scan. */
export function everyId(store: Store, tenantId: string, first: number, meter: WorkMeter): IdSource {
  return new IndexSource(
    (after, limit) => store.findTokenIds(tenantId, { limit, ...(after === undefined ? {} : { after }) }),
    first,
    meter,
  )
}

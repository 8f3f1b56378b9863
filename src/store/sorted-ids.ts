/** Most ids one chunk holds before it splits (an insert moves at most this many). */
const CHUNK = 128

/**
 * A number that orders as `id` does, as far as its first 7 code units tell: base-128 digits, one
 * per code unit below 126 (its value plus one), 0 past the id's end. A code unit of 126 or more is
 * digit 127 and ends the number (later units could not keep the order). So `rank(a) < rank(b)`
 * implies `a < b`, and equal ranks leave it to the strings: ids that share their first 7 code units
 * (or a unit of 126 or more) compare as strings. At most 2^49 - 1: exact in a double.
 */
export function rank(id: string): number {
  let n = 0
  for (let i = 0; i < 7; i++) {
    n *= 128
    if (i >= id.length) continue
    const unit = id.charCodeAt(i)
    if (unit >= 126) {
      n += 127
      for (i++; i < 7; i++) n *= 128
      break
    }
    n += unit + 1
  }
  return n
}

/**
 * A set of strings kept in code-unit order (as JavaScript's `<` compares them), in chunks of at
 * most 128: add and delete cost a binary search and a move within one chunk (not a move of the
 * whole set), and a keyset read (`after`) costs a binary search and what it answers. What the
 * memory state keeps its token indexes in.
 *
 * Beside each chunk of ids it keeps their ranks (`rank`) in an array of doubles, and the rank of
 * each chunk's last id in one more: a search compares numbers held side by side in memory, and
 * reads an id's string only when two ranks are equal. Comparing the strings themselves cost a cache
 * miss a step once a set holds many ids (each id a string of its own, anywhere in the heap).
 */
export class SortedIds<V = undefined> {
  private chunks: string[][] = []
  private ranks: number[][] = []
  /** The rank of each chunk's last id. */
  private lasts: number[] = []
  private count = 0
  /** Each id's value beside it, chunk by chunk, in a set made with values (`SortedRecords`); else null. */
  private readonly vals: V[][] | null

  constructor(withValues = false) {
    this.vals = withValues ? [] : null
  }

  /** How many ids the set holds. */
  get size(): number {
    return this.count
  }

  /** The index of the first chunk whose last id is not before `id` (chunks.length when none). */
  private chunkOf(id: string, r: number): number {
    let lo = 0
    let hi = this.chunks.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      const last = this.lasts[mid]!
      if (last < r || (last === r && this.chunks[mid]![this.chunks[mid]!.length - 1]! < id)) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /** The index in chunk `c` of the first id not before `id`. */
  private slot(c: number, id: string, r: number): number {
    const ranks = this.ranks[c]!
    let lo = 0
    let hi = ranks.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      const at = ranks[mid]!
      if (at < r || (at === r && this.chunks[c]![mid]! < id)) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /** Adds `id` (with `value`, in a set with values, in place of the one it had); false when it was there. */
  add(id: string, value?: V): boolean {
    const r = rank(id)
    if (this.chunks.length === 0) {
      this.chunks.push([id])
      this.ranks.push([r])
      this.lasts.push(r)
      this.vals?.push([value as V])
      this.count = 1
      return true
    }
    // After every id (an append: a log's new entries, ids made in order): no search.
    const lastChunk = this.chunks.length - 1
    const tail = this.chunks[lastChunk]!
    const appended = this.afterAll(id, r)
    let c = appended ? lastChunk : this.chunkOf(id, r)
    if (c === this.chunks.length) c-- // after every id: the last chunk takes it
    const at = appended ? tail.length : this.slot(c, id, r)
    const ids = this.chunks[c]!
    const ranks = this.ranks[c]!
    const vals = this.vals?.[c]
    // Another rank there: not this id (its string is read only on a tie).
    if (ranks[at] === r && ids[at] === id) {
      if (vals) vals[at] = value as V
      return false
    }
    if (at === ids.length) {
      // An append (the common case): a push, not a splice (which makes an array of what it removed).
      ids.push(id)
      ranks.push(r)
      vals?.push(value as V)
    } else {
      ids.splice(at, 0, id)
      ranks.splice(at, 0, r)
      vals?.splice(at, 0, value as V)
    }
    if (at === ids.length - 1) this.lasts[c] = r
    this.count++
    if (ids.length > CHUNK) {
      // Both halves as new arrays of their own size: the full one keeps no room it won't use.
      const half = CHUNK >>> 1
      this.chunks.splice(c, 1, ids.slice(0, half), ids.slice(half))
      this.ranks.splice(c, 1, ranks.slice(0, half), ranks.slice(half))
      if (vals) this.vals!.splice(c, 1, vals.slice(0, half), vals.slice(half))
      this.lasts.splice(c, 0, ranks[half - 1]!)
    }
    return true
  }

  /** Deletes `id`; false when it was not there. */
  delete(id: string): boolean {
    const r = rank(id)
    const c = this.chunkOf(id, r)
    const ids = this.chunks[c]
    if (!ids) return false
    const at = this.slot(c, id, r)
    if (ids[at] !== id) return false
    const ranks = this.ranks[c]!
    ids.splice(at, 1)
    ranks.splice(at, 1)
    this.vals?.[c]?.splice(at, 1)
    this.count--
    if (ids.length === 0) {
      this.chunks.splice(c, 1)
      this.ranks.splice(c, 1)
      this.lasts.splice(c, 1)
      this.vals?.splice(c, 1)
    } else if (at === ids.length) this.lasts[c] = ranks[at - 1]!
    return true
  }

  has(id: string): boolean {
    const r = rank(id)
    const c = this.chunkOf(id, r)
    const ids = this.chunks[c]
    return ids !== undefined && ids[this.slot(c, id, r)] === id
  }

  /** Whether `id` (of rank `r`) comes after every id the set holds (so it is not there). */
  private afterAll(id: string, r: number): boolean {
    const last = this.chunks.length - 1
    if (last < 0) return true
    const top = this.lasts[last]!
    if (top !== r) return top < r
    const tail = this.chunks[last]!
    return tail[tail.length - 1]! < id
  }

  /**
   * The value of `id` in a set with values; undefined when `id` is not there (or the set keeps
   * none). An id after every other (a new one, ids made in order) is found missing without a search.
   */
  get(id: string): V | undefined {
    const r = rank(id)
    if (this.afterAll(id, r)) return undefined
    const c = this.chunkOf(id, r)
    const ids = this.chunks[c]
    if (ids === undefined || !this.vals) return undefined
    const at = this.slot(c, id, r)
    return ids[at] === id ? this.vals[c]![at] : undefined
  }

  /** The values of a set with values, in the order of their ids. */
  *values(): Generator<V, void, undefined> {
    for (const chunk of this.vals ?? []) yield* chunk
  }

  /** At most `limit` ids after `after` (every id when it is undefined), in order. */
  after(after: string | undefined, limit: number): string[] {
    const out: string[] = []
    if (limit <= 0) return out
    for (const id of this.from(after)) {
      out.push(id)
      if (out.length >= limit) break
    }
    return out
  }

  /** The ids after `after` (every id when undefined), in order, read lazily: stop when done. */
  *from(after: string | undefined): Generator<string, void, undefined> {
    let c = 0
    let at = 0
    if (after !== undefined) {
      const r = rank(after)
      c = this.chunkOf(after, r)
      if (c < this.chunks.length) {
        at = this.slot(c, after, r)
        if (this.chunks[c]![at] === after) at++
      }
    }
    for (; c < this.chunks.length; c++, at = 0) {
      const chunk = this.chunks[c]!
      for (; at < chunk.length; at++) yield chunk[at]!
    }
  }

  /** The ids before `before` (every id when undefined), last first, read lazily: stop when done. */
  *before(before: string | undefined): Generator<string, void, undefined> {
    let c = this.chunks.length - 1
    let at = c >= 0 ? this.chunks[c]!.length - 1 : -1
    if (before !== undefined) {
      const r = rank(before)
      c = this.chunkOf(before, r)
      // The first id not before `before` is at (c, slot): start one place back.
      if (c === this.chunks.length) {
        c--
        at = c >= 0 ? this.chunks[c]!.length - 1 : -1
      } else at = this.slot(c, before, r) - 1
    }
    for (; c >= 0; c--, at = c >= 0 ? this.chunks[c]!.length - 1 : -1) {
      const chunk = this.chunks[c]!
      for (; at >= 0; at--) yield chunk[at]!
    }
  }

  /** The ids from position `offset` on (0-based), in order, read lazily. */
  *fromOffset(offset: number): Generator<string, void, undefined> {
    let skip = Math.max(0, offset)
    for (const chunk of this.chunks) {
      if (skip >= chunk.length) {
        skip -= chunk.length
        continue
      }
      for (let at = skip; at < chunk.length; at++) yield chunk[at]!
      skip = 0
    }
  }
}

/**
 * Records by id, kept in id order as `SortedIds` keeps ids, each beside its id: a put of an id after
 * every other (ids made in order) is a push at the end, where a `Map` of many records put each one
 * in a slot of a large table (a cache miss, and the whole table copied as it grows).
 */
export class SortedRecords<V> extends SortedIds<V> {
  constructor() {
    super(true)
  }
}

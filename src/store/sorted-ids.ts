/** Most ids one chunk holds before it splits (inserts move at most this many). */
const CHUNK = 512

/** Code-unit order, as JavaScript's `<` compares strings (the order every token list answers in). */
const before = (a: string, b: string) => a < b

/**
 * A set of strings kept in code-unit order, in chunks of at most 512: add and delete cost a binary
 * search and a move within one chunk (not a move of the whole set), and a keyset read (`after`)
 * costs a binary search and what it answers. What the memory state keeps its token indexes in.
 */
export class SortedIds {
  private chunks: string[][] = []
  private count = 0

  /** How many ids the set holds. */
  get size(): number {
    return this.count
  }

  /** The index of the first chunk whose last id is not before `id` (chunks.length when none). */
  private chunkOf(id: string): number {
    let lo = 0
    let hi = this.chunks.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      const chunk = this.chunks[mid]!
      if (before(chunk[chunk.length - 1]!, id)) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /** The index in `chunk` of the first id not before `id`. */
  private static slot(chunk: readonly string[], id: string): number {
    let lo = 0
    let hi = chunk.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (before(chunk[mid]!, id)) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /** Adds `id`; false when it was there. */
  add(id: string): boolean {
    if (this.chunks.length === 0) {
      this.chunks.push([id])
      this.count = 1
      return true
    }
    let c = this.chunkOf(id)
    if (c === this.chunks.length) c-- // after every id: the last chunk takes it
    const chunk = this.chunks[c]!
    const at = SortedIds.slot(chunk, id)
    if (chunk[at] === id) return false
    chunk.splice(at, 0, id)
    this.count++
    if (chunk.length > CHUNK) this.chunks.splice(c + 1, 0, chunk.splice(CHUNK >>> 1))
    return true
  }

  /** Deletes `id`; false when it was not there. */
  delete(id: string): boolean {
    const c = this.chunkOf(id)
    const chunk = this.chunks[c]
    if (!chunk) return false
    const at = SortedIds.slot(chunk, id)
    if (chunk[at] !== id) return false
    chunk.splice(at, 1)
    this.count--
    if (chunk.length === 0) this.chunks.splice(c, 1)
    return true
  }

  has(id: string): boolean {
    const chunk = this.chunks[this.chunkOf(id)]
    return chunk !== undefined && chunk[SortedIds.slot(chunk, id)] === id
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
    let c = after === undefined ? 0 : this.chunkOf(after)
    let at = 0
    if (after !== undefined && c < this.chunks.length) {
      const chunk = this.chunks[c]!
      at = SortedIds.slot(chunk, after)
      if (chunk[at] === after) at++
    }
    for (; c < this.chunks.length; c++, at = 0) {
      const chunk = this.chunks[c]!
      for (; at < chunk.length; at++) yield chunk[at]!
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

import {
  fold,
  type LeakEncoding,
  MIN_PLAINTEXT_LENGTH,
  type Needle,
  needlesOf,
  plaintextsOf,
} from './encodings.js'

/** Characters hashed per window: every needle is at least this long. */
const W = MIN_PLAINTEXT_LENGTH
const B = 0x01000193
/** B^(W-1) mod 2^32: what the character leaving the window weighed. */
const POW = (() => {
  let p = 1
  for (let i = 1; i < W; i++) p = Math.imul(p, B)
  return p
})()

/** What one indexed record holds: a token's plaintexts (or a staged write's). */
interface Entry {
  key: string
  tokenId: string
  canary: boolean
  needles: Needle[]
}

interface Indexed {
  needle: Needle
  entry: Entry
}

/** Where a plaintext was found in one string. */
export interface RawFinding {
  /** The indexed record (a token, a staged write) it belongs to. */
  key: string
  tokenId: string
  canary: boolean
  encoding: LeakEncoding
  /** Offset, in UTF-16 code units, of the first character of the match. */
  offset: number
}

/** The rolling hash of the first W characters of `text` (folded), or of those from `from`. */
function headHash(text: string, from = 0): number {
  let h = 0
  for (let i = from; i < from + W; i++) h = (Math.imul(h, B) + fold(text.charCodeAt(i))) | 0
  return h
}

/** A head shared by more needles than this is split by the needles' second window (see `Split`). */
const SPLIT_FROM = 16

/**
 * The needles of one crowded head, by the hash of their second window (characters W to 2W - 1):
 * plaintexts of one kind share their heads (every card number's base64 begins `NDAw`, its hex
 * `343030`), so a window of a checked text that matched such a head would otherwise compare
 * thousands of needles. Needles shorter than 2W are kept apart (`short`) and always compared.
 */
interface Split {
  short: Indexed[]
  byNext: Map<number, Indexed[]>
}

function splitOf(list: readonly Indexed[]): Split {
  const split: Split = { short: [], byNext: new Map() }
  for (const item of list) {
    const text = item.needle.text
    if (text.length < 2 * W) {
      split.short.push(item)
      continue
    }
    const h = headHash(text, W)
    const same = split.byNext.get(h)
    if (same) same.push(item)
    else split.byNext.set(h, [item])
  }
  return split
}

/**
 * Needles by the hash of their first W characters, with a bit filter in front: a window whose
 * bit is clear (most of them) costs one array read, and only a set bit reaches the map.
 */
class Table {
  private readonly byHash = new Map<number, Indexed[]>()
  /** The crowded heads' splits, made when first searched, dropped when their head changes. */
  private readonly splits = new Map<number, Split>()
  private bits = new Uint32Array(1 << 11)
  private shift = 32 - 16
  private count = 0
  /** Needles removed since the filter was last built: their bits stay set until then. */
  private stale = 0

  add(item: Indexed): void {
    const h = headHash(item.needle.text)
    const list = this.byHash.get(h)
    this.splits.delete(h)
    if (list) list.push(item)
    else this.byHash.set(h, [item])
    this.count++
    if (this.count * 16 > this.bits.length * 32) this.rebuild()
    else this.mark(h)
  }

  remove(item: Indexed): void {
    const h = headHash(item.needle.text)
    const list = this.byHash.get(h)
    const at = list?.indexOf(item) ?? -1
    if (!list || at < 0) return
    list.splice(at, 1)
    this.splits.delete(h)
    if (!list.length) this.byHash.delete(h)
    this.count--
    if (++this.stale > this.count + 1024) this.rebuild()
  }

  private mark(h: number): void {
    const i = Math.imul(h, 0x9e3779b1) >>> this.shift
    this.bits[i >>> 5]! |= 1 << (i & 31)
  }

  /** A filter of 16 bits or more per needle, set from the map alone. */
  private rebuild(): void {
    let size = 1 << 16
    while (size < this.count * 16) size *= 2
    this.bits = new Uint32Array(size / 32)
    this.shift = 32 - Math.log2(size)
    this.stale = 0
    for (const h of this.byHash.keys()) this.mark(h)
  }

  /** The needles whose head hashes to `h` (undefined for most windows, after one filter read). */
  candidates(h: number): Indexed[] | undefined {
    const i = Math.imul(h, 0x9e3779b1) >>> this.shift
    if ((this.bits[i >>> 5]! & (1 << (i & 31))) === 0) return undefined
    return this.byHash.get(h)
  }

  /** Of the needles of a crowded head `h` (its `list`), those that may start at `start` in `s`. */
  split(h: number, list: readonly Indexed[]): Split {
    let split = this.splits.get(h)
    if (!split) {
      split = splitOf(list)
      this.splits.set(h, split)
    }
    return split
  }

  get size(): number {
    return this.count
  }
}

/** Whether `needle` (text view) is written in `s` from `start`. */
function matchesText(s: string, start: number, needle: Needle): boolean {
  const t = needle.text
  if (start + t.length > s.length) return false
  if (needle.exactCase) return s.startsWith(t, start)
  for (let i = 0; i < t.length; i++) if (fold(s.charCodeAt(start + i)) !== t.charCodeAt(i)) return false
  return true
}

const isDigit = (c: number) => c >= 48 && c <= 57
const isSeparator = (c: number) => c === 32 || c === 45

/** Whether the digits of `needle` are written in `s` from `start`, single spaces or dashes between digits skipped. */
function matchesDigits(s: string, start: number, needle: Needle): boolean {
  const t = needle.text
  let j = start
  for (let k = 0; k < t.length; j++) {
    const c = s.charCodeAt(j)
    if (isDigit(c)) {
      if (c !== t.charCodeAt(k++)) return false
    } else if (!(k > 0 && isSeparator(c) && isDigit(s.charCodeAt(j - 1)) && isDigit(s.charCodeAt(j + 1))))
      return false
  }
  return true
}

/**
 * Every plaintext a vault holds, in every encoding leaks take, indexed once: a search reads the
 * text once (a rolling hash of each window of 6 characters, a bit filter, then the few candidates
 * compared), whatever the number of plaintexts. Records are added and removed one by one as the
 * vault's state changes, so the index is never rebuilt for a check.
 */
export class LeakIndex {
  private readonly entries = new Map<string, { entry: Entry; items: Indexed[] }>()
  private readonly text = new Table()
  private readonly digits = new Table()

  /** Indexes the plaintexts of `data` under `key` (a record), replacing what `key` held. */
  set(key: string, tokenId: string, data: unknown, canary = false): void {
    this.delete(key)
    const needles = [...new Set(plaintextsOf(data))].flatMap(needlesOf)
    if (!needles.length) return
    const entry: Entry = { key, tokenId, canary, needles }
    const items = needles.map((needle) => ({ needle, entry }))
    for (const item of items) (item.needle.digits ? this.digits : this.text).add(item)
    this.entries.set(key, { entry, items })
  }

  delete(key: string): void {
    const held = this.entries.get(key)
    if (!held) return
    for (const item of held.items) (item.needle.digits ? this.digits : this.text).remove(item)
    this.entries.delete(key)
  }

  has(key: string): boolean {
    return this.entries.has(key)
  }

  /** How many records are indexed. */
  get records(): number {
    return this.entries.size
  }

  /** How many needles (plaintext forms) are indexed. */
  get size(): number {
    return this.text.size + this.digits.size
  }

  /** Calls `found` for each indexed plaintext form written in `s`. */
  search(s: string, found: (f: RawFinding) => void): void {
    if (s.length < W) return
    if (this.text.size) this.searchText(s, found)
    if (this.digits.size) this.searchDigits(s, found)
  }

  private report(list: Indexed[], s: string, start: number, digits: boolean, found: (f: RawFinding) => void) {
    for (const { needle, entry } of list) {
      if (!(digits ? matchesDigits(s, start, needle) : matchesText(s, start, needle))) continue
      found({
        key: entry.key,
        tokenId: entry.tokenId,
        canary: entry.canary,
        encoding: needle.encoding,
        offset: start,
      })
    }
  }

  private searchText(s: string, found: (f: RawFinding) => void): void {
    const table = this.text
    let h = 0
    for (let i = 0; i < W; i++) h = (Math.imul(h, B) + fold(s.charCodeAt(i))) | 0
    let list = table.candidates(h)
    if (list) this.reportText(h, list, s, 0, found)
    for (let i = W; i < s.length; i++) {
      h = (Math.imul(h - Math.imul(fold(s.charCodeAt(i - W)), POW), B) + fold(s.charCodeAt(i))) | 0
      list = table.candidates(h)
      if (list) this.reportText(h, list, s, i - W + 1, found)
    }
  }

  /** `report` of a text window: a crowded head's needles narrowed by the text's next window first. */
  private reportText(h: number, list: Indexed[], s: string, start: number, found: (f: RawFinding) => void) {
    if (list.length <= SPLIT_FROM) return this.report(list, s, start, false, found)
    const split = this.text.split(h, list)
    this.report(split.short, s, start, false, found)
    if (start + 2 * W > s.length) return
    const next = split.byNext.get(headHash(s, start + W))
    if (next) this.report(next, s, start, false, found)
  }

  /** The digit view: runs of digits, a single space or dash between two digits skipped. */
  private searchDigits(s: string, found: (f: RawFinding) => void): void {
    const table = this.digits
    const ring = new Int32Array(W)
    const at = new Int32Array(W)
    let count = 0
    let h = 0
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i)
      if (isDigit(c)) {
        const slot = count % W
        h = count >= W ? Math.imul(h - Math.imul(ring[slot]!, POW), B) + c : Math.imul(h, B) + c
        h |= 0
        ring[slot] = c
        at[slot] = i
        count++
        if (count < W) continue
        const list = table.candidates(h)
        if (list) this.report(list, s, at[count % W]!, true, found)
      } else if (
        !(count > 0 && isSeparator(c) && isDigit(s.charCodeAt(i - 1)) && isDigit(s.charCodeAt(i + 1)))
      ) {
        count = 0
        h = 0
      }
    }
  }
}

import { LeakIndex, type RawFinding } from './leak-index.js'

/**
 * A leak index that forks in constant time: what it held when forked becomes a frozen layer both
 * copies search under their own layer, each hiding the records it changed since. A vault that does
 * not change between forks (seed once, fork per test) shares one frozen layer with all its forks.
 */
export class LeakLayers {
  private own = new LeakIndex()
  /** Records this layer changed or deleted: the layers under it no longer answer for them. */
  private hidden = new Set<string>()

  constructor(private base: LeakLayers | null = null) {}

  set(key: string, tokenId: string, data: unknown, canary = false): void {
    this.own.set(key, tokenId, data, canary)
    if (this.base) this.hidden.add(key)
  }

  delete(key: string): void {
    this.own.delete(key)
    if (this.base) this.hidden.add(key)
  }

  /** Calls `found` for each plaintext form written in `s`, the newest layer's records winning. */
  search(s: string, found: (f: RawFinding) => void, hide?: (key: string) => boolean): void {
    const shown = hide
      ? (f: RawFinding) => {
          if (!hide(f.key)) found(f)
        }
      : found
    this.own.search(s, shown)
    if (!this.base) return
    const hidden = this.hidden
    this.base.search(s, found, hide ? (key) => hidden.has(key) || hide(key) : (key) => hidden.has(key))
  }

  /** A copy that sees what this one holds now; neither sees what the other is given later. */
  fork(): LeakLayers {
    if (this.own.records === 0 && this.hidden.size === 0) return new LeakLayers(this.base)
    const frozen = new LeakLayers(this.base)
    frozen.own = this.own
    frozen.hidden = this.hidden
    this.base = frozen
    this.own = new LeakIndex()
    this.hidden = new Set()
    return new LeakLayers(frozen)
  }
}

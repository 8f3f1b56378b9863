/**
 * Partitions filed by how many entries each holds, so that a bounded cache or log full in all
 * finds a partition holding the most at once: a scan of every partition cost each call about
 * 10 µs with 1 000 tenants in the operation journal. The owner tells each change of a partition's
 * count (`moved`); a count of 0 is not filed.
 */
export class BySize<P> {
  private filed: (Set<P> | undefined)[] = []
  private top = 0

  /** The largest count a filed partition holds (0 when none is filed). */
  get largestSize(): number {
    return this.top
  }

  /** A partition holding `largestSize` entries (the first filed at that count), if any. */
  largest(): P | undefined {
    return this.filed[this.top]?.values().next().value
  }

  /** Files `partition` under `to` entries instead of `from`. */
  moved(partition: P, from: number, to: number): void {
    if (from > 0) this.filed[from]?.delete(partition)
    if (to > 0) {
      let same = this.filed[to]
      if (!same) {
        same = new Set()
        this.filed[to] = same
      }
      same.add(partition)
    }
    if (to > this.top) this.top = to
    while (this.top > 0 && !this.filed[this.top]?.size) this.top--
  }

  /** Forgets every partition. */
  clear(): void {
    this.filed = []
    this.top = 0
  }
}

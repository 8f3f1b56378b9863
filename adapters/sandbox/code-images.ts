/**
 * Compiled formulas kept as images of the engine's memory. Compiling a formula's code (its module
 * wrapper) is most of what a trivial run costs in the engine, and it is the same work every time:
 * from the same restored memory, the same code compiles to the same bytes. So the first run of a
 * code in a worker records what compiling it changed in the engine's memory (an image: the bytes that
 * differ from the engine's snapshot, and those it wrote past the snapshot's end); a later run of the
 * same code, once the engine is restored, writes that image back instead of compiling, which leaves
 * the memory exactly as compiling would have. Only code whose compile ran none of it is kept (`keep`
 * in adapters/sandbox/prelude/driver.js checks that the compiled function's source is the whole
 * wrapper), so an image holds no state of any run: it is taken after the compile, before the module
 * body runs and before the request reaches the engine, and every run still starts from the snapshot
 * (with that code compiled). Nor can a compile that called the host be kept: it would have made host
 * functions (the prelude's), and a compile that did is never recorded. What a code could still
 * smuggle into its own image, were it written to close its wrapper and rebuild the whole wrapper's
 * text with `eval` (a quine), is what the engine's built-ins compute with nothing from outside: the
 * time of that compile. Images are kept per tenant (the engine's caller says whose run it is).
 */

/** A range of the engine's memory and the bytes it holds. */
export interface Chunk {
  at: number
  bytes: Uint8Array
}

/** What compiling one code changed in the engine's memory (see the file comment). */
export interface CodeImage {
  chunks: Chunk[]
  /** Bytes it holds. */
  size: number
}

/**
 * How much memory past the snapshot's end is cleared before a compile that is to be recorded. The
 * allocator writes its own (nonzero) record of the free memory right past the last block it hands
 * out, so the last nonzero byte of the zone after the compile bounds every byte the compile placed
 * there, zeros included.
 */
export const ZONE_BYTES = 256 * 1024
/** The end of the zone the compile must not reach. */
const ZONE_MARGIN = 64 * 1024
/** How much memory past that zone is copied before such a compile, and must be unchanged after it. */
const GUARD_BYTES = 256 * 1024
/**
 * The longest code kept as an image (longer code is compiled on every run): what compiling it
 * allocates stays far within the zone (formulas are at most 12 000 characters).
 */
export const MAX_IMAGE_CODE = 16 * 1024
/** Block sizes of the comparison with the snapshot: large blocks first, then the changed ones finely. */
const BLOCK = 4096
/** Changed bytes this close make one chunk of an image. */
const GAP = 32

/**
 * The images of one engine's codes, the most recently used kept within `maxEntries` and `maxBytes`.
 * A code is recorded the second time it is compiled (`seen` says whether it was once already), so a
 * code run once costs no recording.
 */
export class CodeImages {
  private readonly images = new Map<string, CodeImage>()
  private readonly once = new Set<string>()
  private bytes = 0

  constructor(
    private readonly maxEntries: number,
    private readonly maxBytes: number,
  ) {}

  /** The image of `code`, if kept (it becomes the most recently used). */
  get(code: string): CodeImage | undefined {
    const image = this.images.get(code)
    if (image) {
      this.images.delete(code)
      this.images.set(code, image)
    }
    return image
  }

  /** Keeps `image` for `code`, forgetting the least recently used ones beyond the bounds. */
  put(code: string, image: CodeImage): void {
    if (image.size > this.maxBytes) return
    const previous = this.images.get(code)
    if (previous) {
      this.images.delete(code)
      this.bytes -= previous.size
    }
    this.images.set(code, image)
    this.bytes += image.size
    for (const [oldest, kept] of this.images) {
      if (this.images.size <= this.maxEntries && this.bytes <= this.maxBytes) break
      this.images.delete(oldest)
      this.bytes -= kept.size
    }
  }

  /**
   * Whether `code` was compiled once before without being recorded; notes that it was. Forgets the
   * oldest such codes beyond `maxEntries` × 4.
   */
  seen(code: string): boolean {
    if (this.once.delete(code)) return true
    this.once.add(code)
    if (this.once.size > this.maxEntries * 4) this.once.delete(this.once.values().next().value!)
    return false
  }

  /** Whether an image of `code` is kept (it stays where it is in the order of use). */
  has(code: string): boolean {
    return this.images.has(code)
  }

  get size(): number {
    return this.images.size
  }
}

/** What `clearZone` found past the zone, to check after the compile. */
export interface Zone {
  /** The memory's size before the compile. */
  length: number
  /** A copy of the memory past the zone (up to `GUARD_BYTES`). */
  guard: Uint8Array
}

/**
 * Before a compile to be recorded: zeroes up to `ZONE_BYTES` of memory from `end` (the snapshot's
 * end), as far as the memory goes, and copies what lies past that zone.
 */
export function clearZone(memory: { buffer: ArrayBuffer }, end: number): Zone {
  const all = new Uint8Array(memory.buffer)
  const stop = Math.min(end + ZONE_BYTES, all.length)
  all.fill(0, Math.min(end, all.length), stop)
  return { length: all.length, guard: all.slice(stop, Math.min(stop + GUARD_BYTES, all.length)) }
}

/**
 * The image of what changed in `memory` since it was `base` (the snapshot's ranges, with the zone
 * past `end` cleared by `clearZone`), or undefined when the compile may have written past that
 * zone: it reached the zone's last 64 KiB, grew the memory, or changed what lay past the zone.
 */
export function captureImage(
  memory: { buffer: ArrayBuffer },
  base: Chunk[],
  end: number,
  cleared: Zone,
): CodeImage | undefined {
  const all = new Uint8Array(memory.buffer)
  if (all.length !== cleared.length) return undefined
  const past = Math.min(end + ZONE_BYTES, all.length)
  if (Buffer.compare(all.subarray(past, past + cleared.guard.length), cleared.guard) !== 0) return undefined
  const chunks: Chunk[] = []
  const words = new Int32Array(all.buffer, 0, all.length >> 2)
  for (const { at, bytes } of base) {
    const now = all.subarray(at, at + bytes.length)
    // Word by word where the bytes are word-aligned (the snapshot's ranges are), else byte by byte.
    const aligned = at % 4 === 0 && bytes.byteOffset % 4 === 0
    const was = aligned ? new Int32Array(bytes.buffer, bytes.byteOffset, bytes.length >> 2) : undefined
    let from = -1
    let to = -1
    const changed = (start: number, stop: number) => {
      // Changes closer than `GAP` bytes make one chunk.
      if (from >= 0 && start - to <= GAP) to = stop
      else {
        if (from >= 0) chunks.push({ at: at + from, bytes: all.slice(at + from, at + to) })
        from = start
        to = stop
      }
    }
    for (let block = 0; block < bytes.length; block += BLOCK) {
      const stop = Math.min(block + BLOCK, bytes.length)
      if (Buffer.compare(now.subarray(block, stop), bytes.subarray(block, stop)) === 0) continue
      if (was && stop % 4 === 0) {
        const first = at >> 2
        for (let w = block >> 2; w < stop >> 2; w++)
          if (words[first + w] !== was[w]) changed(w * 4, w * 4 + 4)
      } else for (let b = block; b < stop; b++) if (now[b] !== bytes[b]) changed(b, b + 1)
    }
    if (from >= 0) chunks.push({ at: at + from, bytes: all.slice(at + from, at + to) })
  }
  const zone = all.subarray(Math.min(end, all.length), Math.min(end + ZONE_BYTES, all.length))
  const used = usedEnd(zone)
  if (used > ZONE_BYTES - ZONE_MARGIN) return undefined
  if (used > 0) chunks.push({ at: end, bytes: zone.slice(0, used) })
  return { chunks, size: chunks.reduce((sum, chunk) => sum + chunk.bytes.length, 0) }
}

/** Zeros to compare memory with. */
const ZEROS = new Uint8Array(65_536)

/** The index just past the last nonzero byte of `bytes` (0 if all are zero). */
export function usedEnd(bytes: Uint8Array): number {
  const zero = ZEROS
  let end = bytes.length
  while (end > 0) {
    const start = Math.max(0, end - zero.length)
    const chunk = bytes.subarray(start, end)
    if (Buffer.compare(chunk, zero.subarray(0, chunk.length)) !== 0) {
      let i = chunk.length
      while (i > 0 && chunk[i - 1] === 0) i--
      return start + i
    }
    end = start
  }
  return 0
}

/** Writes `image` into `memory` (restored to its snapshot first). */
export function applyImage(memory: { buffer: ArrayBuffer }, image: CodeImage): void {
  const all = new Uint8Array(memory.buffer)
  for (const { at, bytes } of image.chunks) all.set(bytes, at)
}

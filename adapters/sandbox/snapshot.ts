import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { MIB, type Prepared } from './prepared.js'

/** The WebAssembly memory the engine runs in, as the snapshot reads and restores it. */
export type WasmMemory = { buffer: ArrayBuffer }

/**
 * Where the engine's C stack lies in its memory, for the builds of the engine whose layout is
 * known (by the SHA-256 of their WebAssembly file): data from 0, then the stack, growing down from
 * `top` for `bytes`, then the heap from `top`. Only the stack is left out of a snapshot: whatever
 * a run leaves below the stack pointer is dead. Another build is snapshotted whole (still exact,
 * only slower), which `test/reactors/snapshot.test.ts` would notice.
 */
const KNOWN_LAYOUTS: Record<string, { top: number; bytes: number }> = {
  // @jitl/quickjs-wasmfile-release-sync 0.32.0: its stack pointer starts at 5333088, 5 MiB of stack.
  '105c3bed22d457e43e3d1c3c1c6959fda62a8fe06f0fc8a985303c3a2be72232': { top: 5_333_088, bytes: 5 * MIB },
}

/** The stack of the installed engine build, if its layout is known. */
function stackOfBuild(): { top: number; bytes: number } | undefined {
  try {
    const path = createRequire(import.meta.url).resolve('@jitl/quickjs-wasmfile-release-sync/wasm')
    return KNOWN_LAYOUTS[createHash('sha256').update(readFileSync(path)).digest('hex')]
  } catch {
    return undefined
  }
}

/**
 * The engine's WebAssembly memory as it was right after its context was set up, and the host-side
 * state that goes with it. `ranges` are the bytes copied back: all of the memory up to the heap's
 * highest used byte and 256 bytes past it (to a whole 16-byte word), except the C stack of a known
 * build (below the stack pointer between calls, what a run left there is never read). Above that,
 * what a run left is free memory the allocator hands out again only as it does any freed memory
 * (zeroed where it must be).
 *
 * The host side: the ids of the host functions the context holds (`quickjs-emscripten` keeps the
 * functions in a map by id, and frees an id when the engine frees its function, which may happen
 * during a run), and the context wrapper's cached handles (one made during a run would point into
 * memory the restore discards).
 */
export interface Snapshot {
  memory: WasmMemory
  ranges: { at: number; bytes: Uint8Array }[]
  refs: HostRefs
  nextId: number
  freelist: number[]
  groups: [number, [number, unknown][]][]
  context: Record<string, unknown>
  cached: [string, unknown][]
}

/** `quickjs-emscripten`'s map of host functions by id (its `HostRefMap`). */
interface HostRefs {
  nextId: number
  freelist: number[]
  groups: Map<number, Map<number, unknown>>
}

/** The context wrapper's lazily made handles (see `Snapshot`). */
const CACHED_HANDLES = ['_global', '_BigInt', '_Symbol', '_SymbolIterator', '_SymbolAsyncIterator']

/** Zeros to compare memory with. */
const ZEROS = new Uint8Array(65_536)

/** The index just past the last nonzero byte of `bytes` (0 if all are zero). */
function usedEnd(bytes: Uint8Array): number {
  let end = bytes.length
  while (end > 0) {
    const start = Math.max(0, end - ZEROS.length)
    const chunk = bytes.subarray(start, end)
    if (Buffer.compare(chunk, ZEROS.subarray(0, chunk.length)) !== 0) {
      let i = chunk.length
      while (i > 0 && chunk[i - 1] === 0) i--
      return start + i
    }
    end = start
  }
  return 0
}

/** The snapshot's end is a multiple of this (bytes): the allocator's alignment. */
const SNAPSHOT_ALIGN = 16

/** How far past the heap's last nonzero byte the snapshot goes (bytes, all zero when it is taken). */
const SNAPSHOT_MARGIN = 256

export function takeSnapshot(memory: WasmMemory, prepared: Prepared, whole: boolean): Snapshot {
  const all = new Uint8Array(memory.buffer)
  // Past the last nonzero byte: it may be the low byte of a field whose other bytes are zero (the
  // allocator's size of its last block), and the allocator may keep fields that are all zero just
  // past it; a run may write those. So the copy goes `SNAPSHOT_MARGIN` bytes further, to a whole word.
  const used = usedEnd(all) + SNAPSHOT_MARGIN
  const end = Math.min(all.length, Math.ceil(used / SNAPSHOT_ALIGN) * SNAPSHOT_ALIGN)
  const stack = whole ? undefined : stackOfBuild()
  const ranges =
    // The stack's deep end, never reached while setting up, must be zero: the layout is as known.
    stack && stack.top < end && usedEnd(all.subarray(0, stack.top - MIB)) <= stack.top - stack.bytes
      ? [
          { at: 0, bytes: all.slice(0, stack.top - stack.bytes) },
          { at: stack.top, bytes: all.slice(stack.top, end) },
        ]
      : [{ at: 0, bytes: all.slice(0, end) }]
  const runtime = prepared.runtime as unknown as { hostRefs: HostRefs }
  const refs = runtime.hostRefs
  const context = prepared.context as unknown as Record<string, unknown>
  return {
    memory,
    ranges,
    refs,
    nextId: refs.nextId,
    freelist: [...refs.freelist],
    groups: [...refs.groups].map(([id, group]) => [id, [...group]]),
    context,
    cached: CACHED_HANDLES.map((name) => [name, context[name]]),
  }
}

/** Copies the snapshot back (see `Snapshot`); `prepared`'s own run state is reset by `fresh`. */
export function restore(snapshot: Snapshot): void {
  const all = new Uint8Array(snapshot.memory.buffer)
  for (const { at, bytes } of snapshot.ranges) all.set(bytes, at)
  const { refs } = snapshot
  refs.nextId = snapshot.nextId
  refs.freelist = [...snapshot.freelist]
  refs.groups = new Map(snapshot.groups.map(([id, group]) => [id, new Map(group)]))
  for (const [name, value] of snapshot.cached) snapshot.context[name] = value
}

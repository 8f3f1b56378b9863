import * as fs from 'node:fs'
import { MemoryState, type RecordSlice, type StateRecords } from '../../src/store/memory-state.js'
import { crc32 } from './crc32.js'
import { fdatasync, readAt, writeAll } from './io.js'
import { RECORD_HEADER_BYTES, recordEnd } from './record.js'
import { restoreWholeSnapshot } from './snapshot-v2.js'

/**
 * Snapshots: the whole state as one file, written and read as a stream of checksummed frames, so
 * that no step holds the whole state as one string or buffer (V8 strings end at ~512 MiB).
 *
 *   {"format":"tokenvault.snapshot","version":3,"generation":N,"journalBytes":B}\n
 *   frame frame ... end-frame
 *
 * Each frame is framed as a journal record (u32 LE length | u32 LE CRC-32 | payload) and its payload
 * is a JSON array: `["tokens",[record, record, ...]]` holds some records of one kind, in the order
 * `MemoryState.records()` lists them (kinds in `KINDS` order, each parent's associations in link
 * order, `locks` as `[tenant_id, token id, id of the transaction holding the lock]`, with the
 * lock's `expires_at` fourth when it is not the holder's); the last
 * frame is `["end",{"frames":F,"records":R,"journalBytes":B}]`, which a whole file must end with.
 *
 * `journalBytes` (B): the snapshot of generation N also holds the first B bytes of
 * `journal.N.log` (records queued when the compaction began, flushed into the new journal); a
 * reopen replays that journal from byte B.
 *
 * Loading is `MemoryState.fromRecords` of the records read, so a restored state answers every read
 * and check as the original did. Versions 1 and 2 (one JSON body after the header line, with
 * `bytes` and `crc32` of it) still load; version 1 listed under `locks` each token an open
 * transaction lists, with the id of the transaction holding its lock or null.
 */

const FORMAT = 'tokenvault.snapshot'
const VERSION = 3
const KINDS = [
  'tenants',
  'applications',
  'tokens',
  'associations',
  'transactions',
  'locks',
  'sessions',
  'formulas',
  'reactors',
  'idempotency',
  'formulaUses',
] as const satisfies readonly (keyof StateRecords)[]
/** Fails to compile when `StateRecords` gains a kind that `KINDS` does not list. */
const everyKind: Exclude<keyof StateRecords, (typeof KINDS)[number]> extends never ? true : never = true
void everyKind
const KIND_SET: ReadonlySet<string> = new Set(KINDS)

/** Bytes gathered before one `write` of the snapshot file. */
const WRITE_BYTES = 4 * 1024 * 1024
/** Bytes read at a time while loading. */
const READ_BYTES = 8 * 1024 * 1024

/** How a long-running step shares the event loop: it calls `pause()` between slices of work. */
export interface Slicer {
  /** Resolves at once while the slice's time budget lasts, else after other work has run. */
  pause(): Promise<void> | undefined
}

/** A `Slicer` that yields to the event loop (`setImmediate`) once `budgetMs` of work has passed. */
export function slicer(budgetMs: number, check?: () => void): Slicer {
  let since = performance.now()
  return {
    pause() {
      check?.()
      if (performance.now() - since < budgetMs) return undefined
      return new Promise<void>((resolve) =>
        setImmediate(() => {
          check?.()
          since = performance.now()
          resolve()
        }),
      )
    },
  }
}

/**
 * Writes the snapshot of `generation` made of `view` (slices of records, taken at one moment and
 * never changed after) to `fd` from byte 0, a frame per slice, pausing between slices. Returns the
 * bytes written.
 */
export async function writeSnapshot(
  fd: number,
  view: readonly RecordSlice[],
  generation: number,
  journalBytes: number,
  slices: Slicer,
  /** `fdatasync` the file each time this many more bytes are written (0: never). */
  syncEvery = 0,
): Promise<number> {
  // Frames are encoded straight into one reused buffer: no string or buffer per frame beyond the
  // slice's JSON text, which stays small enough to die young (old-space garbage would bring long
  // garbage-collection pauses on a large heap).
  let buffer = Buffer.allocUnsafe(WRITE_BYTES)
  let used = buffer.write(
    `${JSON.stringify({ format: FORMAT, version: VERSION, generation, journalBytes })}\n`,
  )
  let position = 0
  let records = 0
  let synced = 0
  const flush = async () => {
    await writeAll(fd, buffer.subarray(0, used), position)
    position += used
    used = 0
    // Keep little of it unwritten in the page cache: a file system that commits its metadata in
    // order (ext4) would make a journal flush wait for all of it to reach the disk first.
    if (syncEvery > 0 && position - synced >= syncEvery) {
      synced = position
      await fdatasync(fd)
    }
  }
  const frame = async (kind: string, json: string) => {
    const room = RECORD_HEADER_BYTES + kind.length + 4 + json.length * 3
    if (used + room > buffer.length) {
      await flush()
      if (room > buffer.length) buffer = Buffer.allocUnsafe(room)
    }
    const start = used + RECORD_HEADER_BYTES
    let at = start + buffer.write(`["${kind}",`, start, 'latin1')
    at += buffer.write(json, at, 'utf8')
    buffer[at++] = 0x5d // ]
    buffer.writeUInt32LE(at - start, used)
    buffer.writeUInt32LE(crc32(buffer.subarray(start, at)), used + 4)
    used = at
  }
  for (const slice of view) {
    await slices.pause()
    records += slice.records.length
    await frame(slice.kind, JSON.stringify(slice.records))
  }
  await frame('end', JSON.stringify({ frames: view.length, records, journalBytes }))
  await flush()
  return position
}

/** A snapshot file read back: the state, and the bytes of its generation's journal it already holds. */
export interface LoadedSnapshot {
  state: MemoryState
  journalBytes: number
  bytes: number
}

/**
 * Reads, checks and loads the snapshot of `generation` from `file`, a block at a time; `progress`
 * is told the bytes read so far. Throws an Error naming `file` when it is damaged.
 */
export async function readSnapshot(
  file: string,
  generation: number,
  progress: (bytesRead: number) => void = () => {},
): Promise<LoadedSnapshot> {
  const fail = (why: string) => new Error(`fileStore: snapshot ${file} is damaged: ${why}`)
  const fd = fs.openSync(file, 'r')
  try {
    const size = fs.fstatSync(fd).size
    let buffer = Buffer.allocUnsafe(Math.min(READ_BYTES, Math.max(size, 1)))
    let have = await readAt(fd, buffer, 0, buffer.length, 0)
    const newline = buffer.subarray(0, have).indexOf(0x0a)
    if (newline < 0) throw fail('no header line')
    let header: {
      format?: unknown
      version?: unknown
      generation?: unknown
      journalBytes?: unknown
      bytes?: unknown
      crc32?: unknown
    }
    try {
      header = JSON.parse(buffer.toString('utf8', 0, newline))
    } catch {
      throw fail('unreadable header line')
    }
    if (header.format !== FORMAT || ![1, 2, VERSION].includes(header.version as number))
      throw fail(`not a version 1, 2 or ${VERSION} tokenvault snapshot`)
    if (header.generation !== generation) throw fail(`header says generation ${String(header.generation)}`)
    if (header.version !== VERSION) {
      const data = fs.readFileSync(file)
      progress(data.length)
      return { state: restoreWholeSnapshot(data, newline, header, fail), journalBytes: 0, bytes: data.length }
    }
    const journalBytes = header.journalBytes
    if (typeof journalBytes !== 'number' || !Number.isSafeInteger(journalBytes) || journalBytes < 0)
      throw fail('no journalBytes in the header')

    // Records are loaded a frame at a time, as they are read: never all at once.
    const state = new MemoryState()
    let kindIndex = 0
    let base = 0 // file offset of buffer[0]
    let at = newline + 1 // offset in buffer of the next frame
    let frames = 0
    let records = 0
    let ended = false
    for (;;) {
      // A whole frame in the buffer, or read on.
      const length = at + RECORD_HEADER_BYTES <= have ? buffer.readUInt32LE(at) : -1
      const whole = length >= 0 && at + RECORD_HEADER_BYTES + length <= have
      if (!whole) {
        if (base + have >= size) {
          if (ended && at === have) break
          throw fail(
            ended ? `bytes after the end frame at byte offset ${base + at}` : 'cut short: no end frame',
          )
        }
        const need = length >= 0 ? RECORD_HEADER_BYTES + length : RECORD_HEADER_BYTES
        const rest = have - at
        if (need > buffer.length) {
          const grown = Buffer.allocUnsafe(Math.max(need, READ_BYTES))
          buffer.copy(grown, 0, at, have)
          buffer = grown
        } else buffer.copy(buffer, 0, at, have)
        base += at
        at = 0
        const read = await readAt(fd, buffer, rest, buffer.length - rest, base + rest)
        if (read === 0) throw fail('cut short: no end frame')
        have = rest + read
        progress(base + have)
        continue
      }
      if (ended) throw fail(`bytes after the end frame at byte offset ${base + at}`)
      const end = recordEnd(buffer, at)
      if (end < 0) throw fail(`checksum mismatch in the frame at byte offset ${base + at}`)
      let frame: unknown
      try {
        frame = JSON.parse(buffer.toString('utf8', at + RECORD_HEADER_BYTES, end))
      } catch {
        throw fail(`unreadable frame at byte offset ${base + at}`)
      }
      const [kind, body] = Array.isArray(frame) ? frame : []
      if (kind === 'end') {
        const trailer = body as { frames?: unknown; records?: unknown; journalBytes?: unknown } | null
        if (
          trailer?.frames !== frames ||
          trailer.records !== records ||
          trailer.journalBytes !== journalBytes
        )
          throw fail('its end frame does not match what was read')
        ended = true
      } else if (typeof kind === 'string' && KIND_SET.has(kind) && Array.isArray(body)) {
        const index = KINDS.indexOf(kind as (typeof KINDS)[number])
        if (index < kindIndex) throw fail(`"${kind}" frame out of order at byte offset ${base + at}`)
        kindIndex = index
        state.loadSlice({ kind, records: body } as RecordSlice)
        frames++
        records += body.length
      } else {
        throw fail(`unknown frame at byte offset ${base + at}`)
      }
      at = end
    }
    state.finishLoad()
    return { state, journalBytes, bytes: size }
  } finally {
    fs.closeSync(fd)
  }
}

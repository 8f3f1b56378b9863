import { crc32 } from './crc32.js'
import { readAt } from './io.js'

/**
 * Journal records. Each is framed as
 *
 *   u32 LE payload length | u32 LE CRC-32 of the payload | payload
 *
 * where the payload is the UTF-8 JSON array of the ops one `write` applied, after the number
 * `RECORD_FORMAT` (`[2,{"op":…},…]`). A record is valid when it fits in the file, its payload is
 * bracketed by `[` and `]`, and its checksum matches.
 *
 * Records that earlier versions wrote hold the ops alone (`[{"op":…},…]`): they wrote no lock
 * records, and replaying them derives the locks from the transactions (`MemoryState.applyLegacy`).
 */

/** The first element of every record this version writes: its ops are replayed as they are. */
export const RECORD_FORMAT = 2

/** The payload of the record of one write's ops. */
export function recordPayload(ops: readonly unknown[]): string {
  return ops.length ? `[${RECORD_FORMAT},${JSON.stringify(ops).slice(1)}` : `[${RECORD_FORMAT}]`
}

/** The ops of a record's payload, and whether an earlier version wrote it (see `RECORD_FORMAT`). */
export function recordOps<T>(json: string): { ops: T[]; legacy: boolean } {
  const items = JSON.parse(json) as unknown[]
  if (items[0] === RECORD_FORMAT) return { ops: items.slice(1) as T[], legacy: false }
  return { ops: items as T[], legacy: true }
}

/** Bytes of framing before each payload. */
export const RECORD_HEADER_BYTES = 8

const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d

/** The end offset of the valid record starting at `offset` in `data`, or -1 if none starts there. */
export function recordEnd(data: Buffer, offset: number): number {
  if (offset + RECORD_HEADER_BYTES > data.length) return -1
  const length = data.readUInt32LE(offset)
  const start = offset + RECORD_HEADER_BYTES
  const end = start + length
  if (length < 2 || end > data.length) return -1
  if (data[start] !== OPEN_BRACKET || data[end - 1] !== CLOSE_BRACKET) return -1
  return crc32(data.subarray(start, end)) === data.readUInt32LE(offset + 4) ? end : -1
}

/** What a scan of a journal found: `validBytes` is where the last good record ends. */
export interface JournalScan {
  /** Records handed to `onRecord` (those at or past `from`). */
  records: number
  validBytes: number
  /** Bytes after `validBytes`: a torn (partly written) tail to cut off. */
  tornBytes: number
  /** Those bytes (empty when there are none). */
  tail: Buffer
}

/** Bytes of journal read at a time. */
const READ_BYTES = 8 * 1024 * 1024

/**
 * Walks the records of the journal open at `fd` (`size` bytes), a block at a time, handing the
 * payload text of each record that starts at or after byte `from` to `onRecord`, in order (the
 * records before `from` are checked, not replayed); `progress` is told the bytes read so far.
 *
 * A bad record with nothing valid after it is a torn tail (a crash mid-append): it is returned,
 * not replayed. A bad record followed by a valid one is damage in the middle: the scan throws,
 * naming `file` and the byte offset, since dropping it would silently lose acknowledged writes.
 * So does a `from` that is not where a record starts.
 */
export async function scanJournal(
  fd: number,
  size: number,
  file: string,
  from: number,
  onRecord: (json: string, offset: number) => void,
  progress: (bytesRead: number) => void = () => {},
): Promise<JournalScan> {
  let buffer = Buffer.allocUnsafe(Math.min(READ_BYTES, Math.max(size, 1)))
  let base = 0 // file offset of buffer[0]
  let have = 0
  let at = 0 // offset in buffer of the next record
  let records = 0
  for (;;) {
    const offset = base + at
    const length = at + RECORD_HEADER_BYTES <= have ? buffer.readUInt32LE(at) : -1
    const whole = length >= 0 && at + RECORD_HEADER_BYTES + length <= have
    if (!whole && base + have < size) {
      // Read on: keep the partial record, grow the buffer if it is larger than the buffer.
      const need = length >= 0 ? RECORD_HEADER_BYTES + length : RECORD_HEADER_BYTES
      const rest = have - at
      if (need > buffer.length && need <= size - offset) {
        const grown = Buffer.allocUnsafe(need)
        buffer.copy(grown, 0, at, have)
        buffer = grown
      } else buffer.copy(buffer, 0, at, have)
      base = offset
      at = 0
      const read = await readAt(fd, buffer, rest, buffer.length - rest, base + rest)
      have = rest + read
      if (read === 0) size = base + have // the file shrank under us: what is there is all there is
      progress(base + have)
      continue
    }
    const end = whole ? recordEnd(buffer, at) : -1
    if (end < 0) break
    if (offset >= from) {
      try {
        onRecord(buffer.toString('utf8', at + RECORD_HEADER_BYTES, end), offset)
      } catch (error) {
        throw new Error(
          `fileStore: ${file}: record at byte offset ${offset} cannot be replayed: ${String(error)}`,
          { cause: error },
        )
      }
      records++
    } else if (base + end > from) {
      throw new Error(
        `fileStore: ${file}: the snapshot holds its first ${from} bytes, but a record spans byte offset ${from}; ` +
          'the directory is damaged, so the store was not opened',
      )
    }
    at = end
  }
  const validBytes = base + at
  // The rest of the file from the first bad record: a torn tail is small.
  const tail = Buffer.allocUnsafe(size - validBytes)
  const copied = buffer.copy(tail, 0, at, have)
  if (copied < tail.length) await readAt(fd, tail, copied, tail.length - copied, validBytes + copied)
  for (let next = 1; next < tail.length; next++) {
    if (recordEnd(tail, next) >= 0) {
      throw new Error(
        `fileStore: ${file}: corrupt record at byte offset ${validBytes} (a valid record follows at byte offset ${validBytes + next}); ` +
          'the journal is damaged in the middle, not torn at its end, so the store was not opened',
      )
    }
  }
  return { records, validBytes, tornBytes: tail.length, tail }
}

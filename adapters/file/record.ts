import { crc32 } from './crc32.js'

/**
 * Journal records. Each is framed as
 *
 *   u32 LE payload length | u32 LE CRC-32 of the payload | payload
 *
 * where the payload is the UTF-8 JSON array of the ops one `write` applied. A record is valid when
 * it fits in the file, its payload is bracketed by `[` and `]`, and its checksum matches.
 */

/** Bytes of framing before each payload. */
export const RECORD_HEADER_BYTES = 8

const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d

/** Frames a JSON payload (the text of an array) as one journal record. */
export function encodeRecord(json: string): Buffer {
  const length = Buffer.byteLength(json)
  const record = Buffer.allocUnsafe(RECORD_HEADER_BYTES + length)
  record.write(json, RECORD_HEADER_BYTES, 'utf8')
  record.writeUInt32LE(length, 0)
  record.writeUInt32LE(crc32(record.subarray(RECORD_HEADER_BYTES)), 4)
  return record
}

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
  records: number
  validBytes: number
  /** Bytes after `validBytes`: a torn (partly written) tail to cut off. */
  tornBytes: number
}

/**
 * Walks the records of a journal, handing each payload's text to `onRecord` in order. A bad record
 * with nothing valid after it is a torn tail (a crash mid-append): it is reported, not replayed.
 * A bad record followed by a valid one is damage in the middle: the scan throws, naming `file`
 * and the byte offset, since dropping it would silently lose acknowledged writes.
 */
export function scanJournal(
  data: Buffer,
  file: string,
  onRecord: (json: string, offset: number) => void,
): JournalScan {
  let offset = 0
  let records = 0
  while (offset < data.length) {
    const end = recordEnd(data, offset)
    if (end < 0) break
    try {
      onRecord(data.toString('utf8', offset + RECORD_HEADER_BYTES, end), offset)
    } catch (error) {
      throw new Error(
        `fileStore: ${file}: record at byte offset ${offset} cannot be replayed: ${String(error)}`,
        {
          cause: error,
        },
      )
    }
    records++
    offset = end
  }
  for (let next = offset + 1; next < data.length; next++) {
    if (recordEnd(data, next) >= 0) {
      throw new Error(
        `fileStore: ${file}: corrupt record at byte offset ${offset} (a valid record follows at byte offset ${next}); ` +
          'the journal is damaged in the middle, not torn at its end, so the store was not opened',
      )
    }
  }
  return { records, validBytes: offset, tornBytes: data.length - offset }
}

import { createHash } from 'node:crypto'
import type { Database } from 'lmdb'

/**
 * Binary keys that sort as tuples of strings: each part but the last is its UTF-8 bytes with 0x00
 * and 0x01 escaped (0x01 0x01, 0x01 0x02) and a 0x00 terminator; the last part is its UTF-8 bytes
 * as they are. Byte order is then the order of the tuples, part by part, each part in code-point
 * order (tenant, then id): what LMDB's ordered databases keep, and what `getRange` pages through.
 */

/** LMDB's largest key (bytes, at the default page size). */
export const MAX_KEY_BYTES = 1978

/**
 * A part with U+0000 and U+0001 escaped as U+0001 U+0001 and U+0001 U+0002: in UTF-8 exactly the
 * bytes 0x00 and 0x01 escaped as above (no other code point encodes to a byte below 0x80).
 */
const escaped = (part: string): string => {
  if (part.indexOf('\u0000') === -1 && part.indexOf('\u0001') === -1) return part
  let out = ''
  for (const c of part) out += c === '\u0000' ? '\u0001\u0001' : c === '\u0001' ? '\u0001\u0002' : c
  return out
}

/** The key of a tuple of strings (built as one string, encoded once). */
export function key(...parts: string[]): Buffer {
  let text = ''
  for (let i = 0; i < parts.length - 1; i++) text += `${escaped(parts[i]!)}\u0000`
  text += parts[parts.length - 1] ?? ''
  return Buffer.from(text, 'utf8')
}

/** Whether `k` fits in an LMDB key: a longer one can't have been stored. */
export const fits = (k: Buffer): boolean => k.length > 0 && k.length <= MAX_KEY_BYTES

/** The value under `parts`, or undefined (a key too long to store is absent). */
export function read<T>(db: Database, ...parts: string[]): T | undefined {
  const k = key(...parts)
  return fits(k) ? (db.get(k) as T | undefined) : undefined
}

/**
 * The range `{ start, end }` (end exclusive) of every key whose leading parts are `parts`: the
 * escaped parts, each terminated, up to the next byte after the last terminator.
 */
export function prefix(...parts: string[]): { start: Buffer; end: Buffer } {
  let text = ''
  for (const part of parts) text += `${escaped(part)}\u0000`
  const start = Buffer.from(text, 'utf8')
  const end = Buffer.from(start)
  end[end.length - 1] = 1
  return { start, end }
}

/** A sequence number as 12 hex digits: keys that sort in the order they were made. */
export function seq(n: number): string {
  return n.toString(16).padStart(12, '0')
}

/** Longest term key kept as it is in an index key; a longer one (a long metadata value) is hashed. */
const MAX_TERM_BYTES = 1024

/**
 * A term key as a part of an index key: itself, or past 1 024 bytes its SHA-256 (prefixed so no
 * term key can equal it), so every index key fits LMDB's limit whatever a token's metadata holds.
 */
export function termPart(termKey: string): string {
  return Buffer.byteLength(termKey, 'utf8') <= MAX_TERM_BYTES
    ? termKey
    : `\u0001sha256\u0000${createHash('sha256').update(termKey).digest('hex')}`
}

/** The `meta` key of a tenant's token count (every token stored, expired or not). */
export const tokenCountKey = (tenantId: string): Buffer => key('tokenCount', tenantId)

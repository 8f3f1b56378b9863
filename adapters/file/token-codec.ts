import { sealedPayload } from '../../src/encryption/index.js'
import type { StoredToken } from '../../src/kernel/index.js'
import { type Op, StoreError } from '../../src/store/index.js'

/**
 * How the `tokens` database stores a token. A sealed token (its `data` is `{ $sealed: base64 }`, as
 * the core's sealed store writes every token) is kept as one marker byte, the length of its head
 * (4 bytes, little-endian), the head as JSON (every field but `data`) and then the ciphertext's
 * bytes as they are: no base64 (a third larger) to store, and none to decode on every read. It
 * reads back as `{ $sealed: <bytes> }`, which the sealed store opens as it opens base64. Anything
 * else (a token the sealed store did not write, records from before this encoding) is kept as JSON
 * and reads back as written; JSON never starts with the marker byte.
 */
const MARK = 0x01
const HEAD_AT = 5

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'

/** How many bytes `value` decodes to when it is base64 as `sealValue` writes it (whole quads), else -1. */
function decodedLength(value: string): number {
  const n = value.length
  if (n % 4 !== 0) return -1
  const pad = n === 0 || value.charCodeAt(n - 1) !== 61 ? 0 : value.charCodeAt(n - 2) === 61 ? 2 : 1
  return (n / 4) * 3 - pad
}

/**
 * Whether `value`, which Node decoded to `written` bytes, is base64 that those bytes encode back to
 * exactly (what `sealValue` writes), without making that second string: Node's decoder skips
 * characters outside the alphabet (so fewer bytes come out), reads `-` and `_` as `+` and `/`, and
 * ignores the bits a padded last quad leaves over. test/file/token-codec.test.ts checks it against
 * the round trip.
 */
function isExactBase64(value: string, written: number): boolean {
  const n = value.length
  if (written !== decodedLength(value)) return false
  if (value.includes('-') || value.includes('_')) return false
  const pad = (n / 4) * 3 - written
  if (pad === 0) return true
  const last = BASE64.indexOf(value.charAt(n - pad - 1))
  return last >= 0 && (last & (pad === 2 ? 0xf : 0x3)) === 0
}

/** `token` as one marker byte, its head's length, its head as JSON and `ciphertext` after it. */
function sealedRecord(token: StoredToken, ciphertext: Uint8Array | string): Buffer | null {
  const { data: _data, ...head } = token
  const text = JSON.stringify(head)
  const headLength = Buffer.byteLength(text, 'utf8')
  const at = HEAD_AT + headLength
  const size = typeof ciphertext === 'string' ? decodedLength(ciphertext) : ciphertext.length
  if (size < 0) return null
  const out = Buffer.allocUnsafe(at + size)
  out[0] = MARK
  out.writeUInt32LE(headLength, 1)
  out.write(text, HEAD_AT, 'utf8')
  if (typeof ciphertext !== 'string') out.set(ciphertext, at)
  // The base64 decoded straight into the record: no buffer of its own, no string to compare.
  else if (!isExactBase64(ciphertext, out.write(ciphertext, at, 'base64'))) return null
  return out
}

export const tokenCodec = {
  /**
   * A sealed token as its record; any other (or one whose base64 is not exactly what `sealValue`
   * writes: nothing stored changes meaning) as JSON.
   */
  encode(token: StoredToken): Buffer {
    const ciphertext = sealedPayload(token.data)
    const record = ciphertext === undefined ? null : sealedRecord(token, ciphertext)
    return record ?? Buffer.from(JSON.stringify(token), 'utf8')
  },
  /**
   * `bytes` may be lmdb's reused buffer, longer than the value: the value's size is `size` when
   * lmdb passes it (range reads), else the buffer's `length` (lmdb sets it on its reused buffer).
   * Nothing of `bytes` is kept: the ciphertext is copied out.
   */
  decode(bytes: Uint8Array, size?: unknown): StoredToken {
    const end = typeof size === 'number' ? size : bytes.length
    const view = Buffer.isBuffer(bytes)
      ? bytes
      : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    if (view[0] !== MARK) return JSON.parse(view.toString('utf8', 0, end)) as StoredToken
    const headEnd = end < HEAD_AT ? Number.POSITIVE_INFINITY : HEAD_AT + view.readUInt32LE(1)
    if (headEnd > end) throw new StoreError('corrupt', 'fileStore: a token record is cut short')
    const token = JSON.parse(view.toString('utf8', HEAD_AT, headEnd)) as StoredToken
    token.data = { $sealed: Buffer.from(view.subarray(headEnd, end)) } as unknown as StoredToken['data']
    return token
  },
}

/** `token` with its sealed bytes as base64 again, as every other store holds them (for `dump`). */
export function portableToken(token: StoredToken): StoredToken {
  const sealed = sealedPayload(token.data)
  return sealed instanceof Uint8Array
    ? { ...token, data: { $sealed: Buffer.from(sealed).toString('base64') } }
    : token
}

/**
 * The record of each `token.put` of `ops` (by the op's place; none for other ops), or null when
 * there is no such op. The file store makes them as a write is queued, in its caller's turn, so the
 * commit that applies it on the main thread only copies them (`applyOps`): encoding a 400 KB token
 * (its base64 decoded, its bytes copied) took about 2.5 ms of each large create's commit there.
 */
export function tokenRecords(ops: readonly Op[]): (Buffer | undefined)[] | null {
  let records: (Buffer | undefined)[] | null = null
  ops.forEach((op, i) => {
    if (op.op !== 'token.put') return
    records ??= []
    records[i] = tokenCodec.encode(op.token)
  })
  return records
}

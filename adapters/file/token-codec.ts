import { sealedPayload } from '../../src/encryption/index.js'
import type { StoredToken } from '../../src/kernel/index.js'
import { StoreError } from '../../src/store/index.js'

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

/**
 * The ciphertext of a sealed `data`: its bytes as read back (`decode`), or its base64 when that
 * decodes to bytes that give the same base64 back (what `sealValue` writes); else null.
 */
function sealedBytes(data: unknown): Uint8Array | null {
  const value = sealedPayload(data)
  if (value === undefined || value instanceof Uint8Array) return value ?? null
  const bytes = Buffer.from(value, 'base64')
  // Only a value that base64 gives back exactly is stored as bytes: nothing stored changes meaning.
  return bytes.toString('base64') === value ? bytes : null
}

export const tokenCodec = {
  encode(token: StoredToken): Buffer {
    const bytes = sealedBytes(token.data)
    if (bytes === null) return Buffer.from(JSON.stringify(token), 'utf8')
    const { data: _data, ...head } = token
    const text = JSON.stringify(head)
    const headLength = Buffer.byteLength(text, 'utf8')
    const out = Buffer.allocUnsafe(HEAD_AT + headLength + bytes.length)
    out[0] = MARK
    out.writeUInt32LE(headLength, 1)
    out.write(text, HEAD_AT, 'utf8')
    out.set(bytes, HEAD_AT + headLength)
    return out
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

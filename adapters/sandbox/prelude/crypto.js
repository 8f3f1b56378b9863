/** `crypto`: digests, HMACs and random bytes from the host's node:crypto (bytes in, bytes out). */

import { hashDigest, hashNew, hashUpdate, hostRandom } from './host.js'
import { bytesOf, encodeAs, normEncoding, toHex, wrap } from './text.js'

// --- random (from the host: a number in, hex text out) ---
function randomBytesArray(n) {
  if (typeof n !== 'number' || !(n >= 0) || n > 65536 || Math.floor(n) !== n)
    throw new RangeError('size must be an integer from 0 to 65536')
  return new Uint8Array(hostRandom(n))
}
function randomUUID() {
  const b = randomBytesArray(16)
  b[6] = (b[6] & 15) | 0x40
  b[8] = (b[8] & 63) | 0x80
  const h = toHex(b)
  return (
    h.slice(0, 8) + '-' + h.slice(8, 12) + '-' + h.slice(12, 16) + '-' + h.slice(16, 20) + '-' + h.slice(20)
  )
}

// --- digests and HMACs: computed by the host's node:crypto (bytes in, bytes out) ---
const DIGESTS = {
  sha1: 'sha1',
  'sha-1': 'sha1',
  sha256: 'sha256',
  'sha-256': 'sha256',
  sha384: 'sha384',
  'sha-384': 'sha384',
  sha512: 'sha512',
  'sha-512': 'sha512',
  md5: 'md5',
}
function digestName(name) {
  const key = String(name).toLowerCase()
  if (!Object.hasOwn(DIGESTS, key))
    throw new Error(
      'Digest method not supported: ' +
        String(name).slice(0, 100) +
        ' (formulas have sha1, sha256, sha384, sha512 and md5)',
    )
  return DIGESTS[key]
}
/**
 * What the host takes: a string (UTF-8) as it is, else a copy of the bytes as their own ArrayBuffer.
 * A string holding a NUL or a surrogate goes as its UTF-8 bytes (lone surrogates as U+FFFD, as
 * Node encodes them): the host refuses a string it can't copy unchanged.
 */
function hostData(data, encoding) {
  if (
    typeof data === 'string' &&
    (encoding === undefined || encoding === null || normEncoding(encoding) === 'utf8') &&
    !/[\0\uD800-\uDFFF]/.test(data)
  )
    return data
  const b = bytesOf(data, encoding)
  return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength
    ? b.buffer
    : Uint8Array.prototype.slice.call(b).buffer
}
function Hash(name, key) {
  this._id = key === undefined ? hashNew(name) : hashNew(name, hostData(key))
}
Hash.prototype.update = function (data, enc) {
  if (this._id === null) throw new Error('Digest already called')
  hashUpdate(this._id, hostData(data, enc))
  return this
}
Hash.prototype.digest = function (enc) {
  if (this._id === null) throw new Error('Digest already called')
  const id = this._id
  this._id = null
  return encodeAs(new Uint8Array(hashDigest(id)), enc)
}
const Hmac = Hash
const crypto = Object.freeze({
  createHash: (name) => new Hash(digestName(name)),
  createHmac: (name, key) => {
    if (typeof key !== 'string' && !(key instanceof ArrayBuffer) && !ArrayBuffer.isView(key))
      throw new TypeError('The "key" argument must be a string or bytes')
    return new Hmac(digestName(name), key)
  },
  randomBytes: (n) => wrap(randomBytesArray(n)),
  randomUUID: randomUUID,
  getRandomValues: (a) => {
    if (!(a instanceof Uint8Array)) throw new TypeError('getRandomValues takes a Uint8Array')
    a.set(randomBytesArray(a.length))
    return a
  },
  timingSafeEqual: (a, b) => {
    a = bytesOf(a)
    b = bytesOf(b)
    if (a.length !== b.length) throw new RangeError('Input buffers must have the same byte length')
    let d = 0
    for (let i = 0; i < a.length; i++) d |= a[i] ^ b[i]
    return d === 0
  },
  getHashes: () => ['md5', 'sha1', 'sha256', 'sha384', 'sha512'],
})

export { crypto }

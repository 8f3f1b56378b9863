/** UTF-8, hex and base64, and Node's `Buffer` (a `Uint8Array` with Node's basic methods). */

// --- UTF-8 ---
function utf8Encode(s) {
  s = String(s)
  const out = []
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i)
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1)
      if (d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00)
        i++
      } else c = 0xfffd
    } else if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd
    if (c < 0x80) out.push(c)
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63))
    else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63))
    else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63))
  }
  return new Uint8Array(out)
}
function utf8Decode(bytes) {
  const b = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes?.buffer ? bytes.buffer : bytes || [])
  let s = ''
  for (let i = 0; i < b.length; ) {
    let c = b[i++],
      cp = 0xfffd,
      need = 0
    if (c < 0x80) {
      cp = c
    } else if (c >= 0xc2 && c < 0xe0) {
      cp = c & 31
      need = 1
    } else if (c >= 0xe0 && c < 0xf0) {
      cp = c & 15
      need = 2
    } else if (c >= 0xf0 && c < 0xf5) {
      cp = c & 7
      need = 3
    }
    let ok = true
    for (let k = 0; k < need; k++) {
      if (i >= b.length || (b[i] & 0xc0) !== 0x80) {
        ok = false
        break
      }
      cp = (cp << 6) | (b[i++] & 63)
    }
    if (!ok) cp = 0xfffd
    if (cp > 0xffff) {
      cp -= 0x10000
      s += String.fromCharCode(0xd800 + (cp >> 10), 0xdc00 + (cp & 1023))
    } else s += String.fromCharCode(cp)
  }
  return s
}
function TextEncoder() {}
TextEncoder.prototype.encoding = 'utf-8'
TextEncoder.prototype.encode = (s) => utf8Encode(s === undefined ? '' : s)
function TextDecoder(label) {
  const l = label === undefined ? 'utf-8' : String(label).toLowerCase()
  if (l !== 'utf-8' && l !== 'utf8') throw new RangeError('TextDecoder supports only utf-8')
}
TextDecoder.prototype.encoding = 'utf-8'
TextDecoder.prototype.decode = (b) => utf8Decode(b)

// --- bytes ---
const HEX = '0123456789abcdef'
function toHex(b) {
  let s = ''
  for (let i = 0; i < b.length; i++) s += HEX[b[i] >> 4] + HEX[b[i] & 15]
  return s
}
const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
function toBase64(b) {
  let s = ''
  for (let i = 0; i < b.length; i += 3) {
    const n = (b[i] << 16) | ((b[i + 1] || 0) << 8) | (b[i + 2] || 0)
    s +=
      B64[(n >> 18) & 63] +
      B64[(n >> 12) & 63] +
      (i + 1 < b.length ? B64[(n >> 6) & 63] : '=') +
      (i + 2 < b.length ? B64[n & 63] : '=')
  }
  return s
}
function bytesOf(data, encoding) {
  if (typeof data === 'string') return stringBytes(data, encoding)
  if (data instanceof Uint8Array) return data
  if (data instanceof ArrayBuffer) return new Uint8Array(data)
  if (data && data.buffer instanceof ArrayBuffer)
    return new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
  throw new TypeError('data must be a string or bytes')
}
function encodeAs(bytes, encoding) {
  if (encoding === undefined) return wrap(bytes)
  if (encoding === 'hex') return toHex(bytes)
  if (encoding === 'base64') return toBase64(bytes)
  if (encoding === 'base64url')
    return toBase64(bytes).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
  if (encoding === 'utf8' || encoding === 'utf-8') return utf8Decode(bytes)
  throw new TypeError('unsupported encoding: ' + encoding)
}

// --- Buffer (a Uint8Array with Node's basic methods) ---
const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
const B64INDEX = {}
for (let bi = 0; bi < 64; bi++) {
  B64INDEX[B64[bi]] = bi
  B64INDEX[B64URL[bi]] = bi
}
function fromBase64(s) {
  let out = [],
    acc = 0,
    bits = 0
  for (let i = 0; i < s.length; i++) {
    const v = B64INDEX[s[i]]
    if (v === undefined) {
      if (s[i] === '=') break
      continue
    }
    acc = (acc << 6) | v
    bits += 6
    if (bits >= 8) {
      bits -= 8
      out.push((acc >> bits) & 255)
    }
  }
  return new Uint8Array(out)
}
function fromHex(s) {
  let n = 0,
    out = new Uint8Array(s.length >> 1)
  for (; n < out.length; n++) {
    const v = parseInt(s.substr(n * 2, 2), 16)
    if (Number.isNaN(v) || !/^[0-9a-fA-F]{2}$/.test(s.substr(n * 2, 2))) break
    out[n] = v
  }
  return out.subarray(0, n)
}
function fromLatin1(s) {
  const out = new Uint8Array(s.length)
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i) & 255
  return out
}
function toLatin1(b, mask) {
  let s = ''
  for (let i = 0; i < b.length; i++) s += String.fromCharCode(b[i] & mask)
  return s
}
function normEncoding(enc) {
  const e = enc === undefined || enc === null ? 'utf8' : String(enc).toLowerCase()
  if (e === 'utf-8') return 'utf8'
  if (e === 'binary') return 'latin1'
  if (e === 'utf8' || e === 'hex' || e === 'base64' || e === 'base64url' || e === 'latin1' || e === 'ascii')
    return e
  throw new TypeError(
    'Unknown encoding: ' + enc + ' (formulas have utf8, hex, base64, base64url, latin1 and ascii)',
  )
}
function stringBytes(s, enc) {
  switch (normEncoding(enc)) {
    case 'hex':
      return fromHex(s)
    case 'base64':
    case 'base64url':
      return fromBase64(s)
    case 'latin1':
    case 'ascii':
      return fromLatin1(s)
    default:
      return utf8Encode(s)
  }
}
function bytesString(b, enc) {
  switch (normEncoding(enc)) {
    case 'hex':
      return toHex(b)
    case 'base64':
      return toBase64(b)
    case 'base64url':
      return toBase64(b).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
    case 'latin1':
      return toLatin1(b, 255)
    case 'ascii':
      return toLatin1(b, 127)
    default:
      return utf8Decode(b)
  }
}
function wrap(u8) {
  return new Buffer(u8.buffer, u8.byteOffset, u8.length)
}
class Buffer extends Uint8Array {
  static from(value, encodingOrOffset, length) {
    if (typeof value === 'string') return wrap(stringBytes(value, encodingOrOffset))
    if (value instanceof ArrayBuffer)
      return new Buffer(
        value,
        encodingOrOffset || 0,
        length === undefined ? value.byteLength - (encodingOrOffset || 0) : length,
      )
    if (ArrayBuffer.isView(value))
      return wrap(new Uint8Array(value.buffer, value.byteOffset, value.byteLength).slice())
    if (Array.isArray(value)) return wrap(Uint8Array.from(value))
    if (value && value.type === 'Buffer' && Array.isArray(value.data))
      return wrap(Uint8Array.from(value.data))
    throw new TypeError(
      'The first argument must be a string, Buffer, ArrayBuffer, Array or array-like object',
    )
  }
  static alloc(size, fill, encoding) {
    if (typeof size !== 'number' || !(size >= 0) || Math.floor(size) !== size)
      throw new RangeError('The "size" argument must be a non-negative integer')
    const b = new Buffer(size)
    if (fill !== undefined && fill !== 0) b.fill(fill, 0, size, encoding)
    return b
  }
  static allocUnsafe(size) {
    return Buffer.alloc(size)
  }
  static isBuffer(value) {
    return value instanceof Buffer
  }
  static isEncoding(enc) {
    try {
      normEncoding(enc)
      return typeof enc === 'string'
    } catch (_e) {
      return false
    }
  }
  static byteLength(value, enc) {
    if (typeof value === 'string') return stringBytes(value, enc).length
    if (value && typeof value.byteLength === 'number') return value.byteLength
    throw new TypeError('The "string" argument must be a string, Buffer or ArrayBuffer')
  }
  static concat(list, total) {
    if (!Array.isArray(list))
      throw new TypeError('The "list" argument must be an Array of Buffers or Uint8Arrays')
    let out = concat(list.map((b) => bytesOf(b)))
    if (total !== undefined) {
      const sized = new Uint8Array(total)
      sized.set(out.subarray(0, total))
      out = sized
    }
    return wrap(out)
  }
  static compare(a, b) {
    return Buffer.prototype.compare.call(a, b)
  }
  toString(enc, start, end) {
    return bytesString(this.subarray(start || 0, end === undefined ? this.length : end), enc)
  }
  toJSON() {
    return { type: 'Buffer', data: Array.from(this) }
  }
  equals(other) {
    return this.compare(other) === 0
  }
  compare(other) {
    const a = bytesOf(this),
      b = bytesOf(other),
      n = Math.min(a.length, b.length)
    for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1
    return a.length === b.length ? 0 : a.length < b.length ? -1 : 1
  }
  slice(start, end) {
    return this.subarray(start, end)
  }
  subarray(start, end) {
    const u = Uint8Array.prototype.subarray.call(this, start, end)
    return u instanceof Buffer ? u : wrap(u)
  }
  fill(value, offset, end, encoding) {
    if (typeof offset === 'string') {
      encoding = offset
      offset = 0
      end = this.length
    }
    if (typeof value === 'string') {
      const bytes =
        value.length === 1 &&
        (encoding === undefined || normEncoding(encoding) === 'utf8') &&
        value.charCodeAt(0) < 128
          ? [value.charCodeAt(0)]
          : stringBytes(value, encoding)
      const from = offset || 0,
        to = end === undefined ? this.length : end
      if (!bytes.length) return Uint8Array.prototype.fill.call(this, 0, from, to)
      for (let i = from; i < to; i++) this[i] = bytes[(i - from) % bytes.length]
      return this
    }
    return Uint8Array.prototype.fill.call(this, value, offset, end)
  }
  write(string, offset, enc) {
    if (typeof offset === 'string') {
      enc = offset
      offset = 0
    }
    const bytes = stringBytes(string, enc),
      at = offset || 0,
      n = Math.min(bytes.length, this.length - at)
    this.set(bytes.subarray(0, n), at)
    return n
  }
  copy(target, targetStart, sourceStart, sourceEnd) {
    const part = this.subarray(sourceStart || 0, sourceEnd === undefined ? this.length : sourceEnd)
    const at = targetStart || 0,
      n = Math.min(part.length, target.length - at)
    target.set(part.subarray(0, n), at)
    return n
  }
  indexOf(value, from, enc) {
    if (typeof value === 'number') return Uint8Array.prototype.indexOf.call(this, value, from)
    const needle = typeof value === 'string' ? stringBytes(value, enc) : bytesOf(value)
    outer: for (let i = from || 0; i <= this.length - needle.length; i++) {
      for (let k = 0; k < needle.length; k++) if (this[i + k] !== needle[k]) continue outer
      return i
    }
    return -1
  }
  includes(value, from, enc) {
    return this.indexOf(value, from, enc) !== -1
  }
  readUInt8(o) {
    return this[o || 0]
  }
  readUInt16BE(o) {
    o = o || 0
    return (this[o] << 8) | this[o + 1]
  }
  readUInt32BE(o) {
    o = o || 0
    return ((this[o] << 24) >>> 0) + ((this[o + 1] << 16) | (this[o + 2] << 8) | this[o + 3])
  }
  writeUInt8(v, o) {
    this[o || 0] = v
    return (o || 0) + 1
  }
}
const bufferModule = Object.freeze({
  Buffer: Buffer,
  constants: Object.freeze({ MAX_LENGTH: 0x3fffffff }),
  kMaxLength: 0x3fffffff,
})

function concat(parts) {
  let n = 0,
    i
  for (i = 0; i < parts.length; i++) n += parts[i].length
  let out = new Uint8Array(n),
    at = 0
  for (i = 0; i < parts.length; i++) {
    out.set(parts[i], at)
    at += parts[i].length
  }
  return out
}

export {
  Buffer,
  bufferModule,
  bytesOf,
  concat,
  encodeAs,
  normEncoding,
  TextDecoder,
  TextEncoder,
  toHex,
  utf8Decode,
  utf8Encode,
  wrap,
}

/**
 * JavaScript source evaluated inside a formula's fresh context the first time the formula uses
 * `require`, `TextEncoder` or `TextDecoder` (runs that use none of them do not pay for it): the
 * modules `require` answers (the reactor formulas SDK's error classes, `crypto`, `util`) and
 * `TextEncoder`/`TextDecoder`. Everything here is plain engine code; the host functions it uses
 * (on `__host`, removed from the global object before any formula code runs) are described at
 * `installPrelude` in `adapters/sandbox/engine.ts`.
 */
export const PRELUDE = String.raw`(function () {
  'use strict';
  var host = globalThis.__host;
  delete globalThis.__host;
  var refuse = host.refuse, hostFetch = host.fetch;
  var hashNew = host.hashNew, hashUpdate = host.hashUpdate, hashDigest = host.hashDigest, hostRandom = host.random;

  // --- UTF-8 ---
  function utf8Encode(s) {
    s = String(s);
    var out = [];
    for (var i = 0; i < s.length; i++) {
      var c = s.charCodeAt(i);
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
        var d = s.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) { c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00); i++; }
        else c = 0xfffd;
      } else if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
      if (c < 0x80) out.push(c);
      else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
      else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
      else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    }
    return new Uint8Array(out);
  }
  function utf8Decode(bytes) {
    var b = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes && bytes.buffer ? bytes.buffer : bytes || []);
    var s = '';
    for (var i = 0; i < b.length;) {
      var c = b[i++], cp = 0xfffd, need = 0;
      if (c < 0x80) { cp = c; }
      else if (c >= 0xc2 && c < 0xe0) { cp = c & 31; need = 1; }
      else if (c >= 0xe0 && c < 0xf0) { cp = c & 15; need = 2; }
      else if (c >= 0xf0 && c < 0xf5) { cp = c & 7; need = 3; }
      var ok = true;
      for (var k = 0; k < need; k++) {
        if (i >= b.length || (b[i] & 0xc0) !== 0x80) { ok = false; break; }
        cp = (cp << 6) | (b[i++] & 63);
      }
      if (!ok) cp = 0xfffd;
      if (cp > 0xffff) { cp -= 0x10000; s += String.fromCharCode(0xd800 + (cp >> 10), 0xdc00 + (cp & 1023)); }
      else s += String.fromCharCode(cp);
    }
    return s;
  }
  function TextEncoder() {}
  TextEncoder.prototype.encoding = 'utf-8';
  TextEncoder.prototype.encode = function (s) { return utf8Encode(s === undefined ? '' : s); };
  function TextDecoder(label) {
    var l = label === undefined ? 'utf-8' : String(label).toLowerCase();
    if (l !== 'utf-8' && l !== 'utf8') throw new RangeError('TextDecoder supports only utf-8');
  }
  TextDecoder.prototype.encoding = 'utf-8';
  TextDecoder.prototype.decode = function (b) { return utf8Decode(b); };

  // --- bytes ---
  var HEX = '0123456789abcdef';
  function toHex(b) { var s = ''; for (var i = 0; i < b.length; i++) s += HEX[b[i] >> 4] + HEX[b[i] & 15]; return s; }
  var B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  function toBase64(b) {
    var s = '';
    for (var i = 0; i < b.length; i += 3) {
      var n = (b[i] << 16) | ((b[i + 1] || 0) << 8) | (b[i + 2] || 0);
      s += B64[(n >> 18) & 63] + B64[(n >> 12) & 63] + (i + 1 < b.length ? B64[(n >> 6) & 63] : '=') + (i + 2 < b.length ? B64[n & 63] : '=');
    }
    return s;
  }
  function bytesOf(data, encoding) {
    if (typeof data === 'string') return stringBytes(data, encoding);
    if (data instanceof Uint8Array) return data;
    if (data instanceof ArrayBuffer) return new Uint8Array(data);
    if (data && data.buffer instanceof ArrayBuffer) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    throw new TypeError('data must be a string or bytes');
  }
  function encodeAs(bytes, encoding) {
    if (encoding === undefined) return wrap(bytes);
    if (encoding === 'hex') return toHex(bytes);
    if (encoding === 'base64') return toBase64(bytes);
    if (encoding === 'base64url') return toBase64(bytes).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    if (encoding === 'utf8' || encoding === 'utf-8') return utf8Decode(bytes);
    throw new TypeError('unsupported encoding: ' + encoding);
  }

  // --- random (from the host: a number in, hex text out) ---
  function randomBytesArray(n) {
    if (typeof n !== 'number' || !(n >= 0) || n > 65536 || Math.floor(n) !== n) throw new RangeError('size must be an integer from 0 to 65536');
    return new Uint8Array(hostRandom(n));
  }
  function randomUUID() {
    var b = randomBytesArray(16);
    b[6] = (b[6] & 15) | 0x40; b[8] = (b[8] & 63) | 0x80;
    var h = toHex(b);
    return h.slice(0, 8) + '-' + h.slice(8, 12) + '-' + h.slice(12, 16) + '-' + h.slice(16, 20) + '-' + h.slice(20);
  }

  // --- digests and HMACs: computed by the host's node:crypto (bytes in, bytes out) ---
  var DIGESTS = { sha1: 'sha1', 'sha-1': 'sha1', sha256: 'sha256', 'sha-256': 'sha256', sha384: 'sha384', 'sha-384': 'sha384', sha512: 'sha512', 'sha-512': 'sha512', md5: 'md5' };
  function digestName(name) {
    var key = String(name).toLowerCase();
    if (!Object.prototype.hasOwnProperty.call(DIGESTS, key)) throw new Error('Digest method not supported: ' + String(name).slice(0, 100) + ' (formulas have sha1, sha256, sha384, sha512 and md5)');
    return DIGESTS[key];
  }
  /** What the host takes: a string (UTF-8) as it is, else a copy of the bytes as their own ArrayBuffer. */
  function hostData(data, encoding) {
    if (typeof data === 'string' && (encoding === undefined || encoding === null || normEncoding(encoding) === 'utf8')) return data;
    var b = bytesOf(data, encoding);
    return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? b.buffer : Uint8Array.prototype.slice.call(b).buffer;
  }
  function Hash(name, key) { this._id = key === undefined ? hashNew(name) : hashNew(name, hostData(key)); }
  Hash.prototype.update = function (data, enc) {
    if (this._id === null) throw new Error('Digest already called');
    hashUpdate(this._id, hostData(data, enc)); return this;
  };
  Hash.prototype.digest = function (enc) {
    if (this._id === null) throw new Error('Digest already called');
    var id = this._id; this._id = null;
    return encodeAs(new Uint8Array(hashDigest(id)), enc);
  };
  var Hmac = Hash;
  function concat(parts) {
    var n = 0, i; for (i = 0; i < parts.length; i++) n += parts[i].length;
    var out = new Uint8Array(n), at = 0;
    for (i = 0; i < parts.length; i++) { out.set(parts[i], at); at += parts[i].length; }
    return out;
  }
  var crypto = Object.freeze({
    createHash: function (name) { return new Hash(digestName(name)); },
    createHmac: function (name, key) {
      if (typeof key !== 'string' && !(key instanceof ArrayBuffer) && !ArrayBuffer.isView(key)) throw new TypeError('The "key" argument must be a string or bytes');
      return new Hmac(digestName(name), key);
    },
    randomBytes: function (n) { return wrap(randomBytesArray(n)); },
    randomUUID: randomUUID,
    getRandomValues: function (a) {
      if (!(a instanceof Uint8Array)) throw new TypeError('getRandomValues takes a Uint8Array');
      a.set(randomBytesArray(a.length)); return a;
    },
    timingSafeEqual: function (a, b) {
      a = bytesOf(a); b = bytesOf(b);
      if (a.length !== b.length) throw new RangeError('Input buffers must have the same byte length');
      var d = 0; for (var i = 0; i < a.length; i++) d |= a[i] ^ b[i]; return d === 0;
    },
    getHashes: function () { return ['md5', 'sha1', 'sha256', 'sha384', 'sha512']; },
  });

  // --- util ---
  function inspect(v) {
    if (typeof v === 'string') return "'" + v + "'";
    if (typeof v === 'function') return '[Function: ' + (v.name || 'anonymous') + ']';
    if (v instanceof Error) return v.stack || String(v);
    try { var j = JSON.stringify(v); return j === undefined ? String(v) : j; } catch (e) { return String(v); }
  }
  function format(f) {
    var args = Array.prototype.slice.call(arguments, 1);
    var s = typeof f === 'string' ? f.replace(/%[sdifjoO%]/g, function (m) {
      if (m === '%%') return '%';
      if (!args.length) return m;
      var a = args.shift();
      if (m === '%s') return typeof a === 'string' ? a : inspect(a);
      if (m === '%d' || m === '%i') return String(m === '%i' ? parseInt(a, 10) : Number(a));
      if (m === '%f') return String(parseFloat(a));
      if (m === '%j') { try { return JSON.stringify(a); } catch (e) { return '[Circular]'; } }
      return inspect(a);
    }) : inspect(f);
    for (var i = 0; i < args.length; i++) s += ' ' + (typeof args[i] === 'string' ? args[i] : inspect(args[i]));
    return s;
  }
  function deepEqual(a, b) {
    if (Object.is(a, b)) return true;
    if (typeof a !== 'object' || typeof b !== 'object' || !a || !b) return false;
    if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
    var ka = Object.keys(a), kb = Object.keys(b);
    if (ka.length !== kb.length) return false;
    for (var i = 0; i < ka.length; i++) if (!Object.prototype.hasOwnProperty.call(b, ka[i]) || !deepEqual(a[ka[i]], b[ka[i]])) return false;
    return true;
  }
  var util = Object.freeze({
    format: format,
    inspect: inspect,
    isDeepStrictEqual: deepEqual,
    promisify: function (fn) {
      return function () {
        var self = this, args = Array.prototype.slice.call(arguments);
        return new Promise(function (resolve, reject) {
          fn.apply(self, args.concat([function (err, value) { if (err) reject(err); else resolve(value); }]));
        });
      };
    },
    types: Object.freeze({
      isPromise: function (v) { return v instanceof Promise; },
      isDate: function (v) { return v instanceof Date; },
      isRegExp: function (v) { return v instanceof RegExp; },
    }),
    TextEncoder: TextEncoder,
    TextDecoder: TextDecoder,
  });

  // --- Buffer (a Uint8Array with Node's basic methods) ---
  var B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  var B64INDEX = {};
  for (var bi = 0; bi < 64; bi++) { B64INDEX[B64[bi]] = bi; B64INDEX[B64URL[bi]] = bi; }
  function fromBase64(s) {
    var out = [], acc = 0, bits = 0;
    for (var i = 0; i < s.length; i++) {
      var v = B64INDEX[s[i]];
      if (v === undefined) { if (s[i] === '=') break; continue; }
      acc = (acc << 6) | v; bits += 6;
      if (bits >= 8) { bits -= 8; out.push((acc >> bits) & 255); }
    }
    return new Uint8Array(out);
  }
  function fromHex(s) {
    var n = 0, out = new Uint8Array(s.length >> 1);
    for (; n < out.length; n++) {
      var v = parseInt(s.substr(n * 2, 2), 16);
      if (v !== v || !/^[0-9a-fA-F]{2}$/.test(s.substr(n * 2, 2))) break;
      out[n] = v;
    }
    return out.subarray(0, n);
  }
  function fromLatin1(s) { var out = new Uint8Array(s.length); for (var i = 0; i < s.length; i++) out[i] = s.charCodeAt(i) & 255; return out; }
  function toLatin1(b, mask) { var s = ''; for (var i = 0; i < b.length; i++) s += String.fromCharCode(b[i] & mask); return s; }
  function normEncoding(enc) {
    var e = enc === undefined || enc === null ? 'utf8' : String(enc).toLowerCase();
    if (e === 'utf-8') return 'utf8';
    if (e === 'binary') return 'latin1';
    if (e === 'utf8' || e === 'hex' || e === 'base64' || e === 'base64url' || e === 'latin1' || e === 'ascii') return e;
    throw new TypeError('Unknown encoding: ' + enc + ' (formulas have utf8, hex, base64, base64url, latin1 and ascii)');
  }
  function stringBytes(s, enc) {
    switch (normEncoding(enc)) {
      case 'hex': return fromHex(s);
      case 'base64': case 'base64url': return fromBase64(s);
      case 'latin1': case 'ascii': return fromLatin1(s);
      default: return utf8Encode(s);
    }
  }
  function bytesString(b, enc) {
    switch (normEncoding(enc)) {
      case 'hex': return toHex(b);
      case 'base64': return toBase64(b);
      case 'base64url': return toBase64(b).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
      case 'latin1': return toLatin1(b, 255);
      case 'ascii': return toLatin1(b, 127);
      default: return utf8Decode(b);
    }
  }
  function wrap(u8) { return new Buffer(u8.buffer, u8.byteOffset, u8.length); }
  class Buffer extends Uint8Array {
    static from(value, encodingOrOffset, length) {
      if (typeof value === 'string') return wrap(stringBytes(value, encodingOrOffset));
      if (value instanceof ArrayBuffer) return new Buffer(value, encodingOrOffset || 0, length === undefined ? value.byteLength - (encodingOrOffset || 0) : length);
      if (ArrayBuffer.isView(value)) return wrap(new Uint8Array(value.buffer, value.byteOffset, value.byteLength).slice());
      if (Array.isArray(value)) return wrap(Uint8Array.from(value));
      if (value && value.type === 'Buffer' && Array.isArray(value.data)) return wrap(Uint8Array.from(value.data));
      throw new TypeError('The first argument must be a string, Buffer, ArrayBuffer, Array or array-like object');
    }
    static alloc(size, fill, encoding) {
      if (typeof size !== 'number' || !(size >= 0) || Math.floor(size) !== size) throw new RangeError('The "size" argument must be a non-negative integer');
      var b = new Buffer(size);
      if (fill !== undefined && fill !== 0) b.fill(fill, 0, size, encoding);
      return b;
    }
    static allocUnsafe(size) { return Buffer.alloc(size); }
    static isBuffer(value) { return value instanceof Buffer; }
    static isEncoding(enc) { try { normEncoding(enc); return typeof enc === 'string'; } catch (e) { return false; } }
    static byteLength(value, enc) {
      if (typeof value === 'string') return stringBytes(value, enc).length;
      if (value && typeof value.byteLength === 'number') return value.byteLength;
      throw new TypeError('The "string" argument must be a string, Buffer or ArrayBuffer');
    }
    static concat(list, total) {
      if (!Array.isArray(list)) throw new TypeError('The "list" argument must be an Array of Buffers or Uint8Arrays');
      var out = concat(list.map(function (b) { return bytesOf(b); }));
      if (total !== undefined) { var sized = new Uint8Array(total); sized.set(out.subarray(0, total)); out = sized; }
      return wrap(out);
    }
    static compare(a, b) { return Buffer.prototype.compare.call(a, b); }
    toString(enc, start, end) { return bytesString(this.subarray(start || 0, end === undefined ? this.length : end), enc); }
    toJSON() { return { type: 'Buffer', data: Array.from(this) }; }
    equals(other) { return this.compare(other) === 0; }
    compare(other) {
      var a = bytesOf(this), b = bytesOf(other), n = Math.min(a.length, b.length);
      for (var i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
      return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
    }
    slice(start, end) { return this.subarray(start, end); }
    subarray(start, end) { var u = Uint8Array.prototype.subarray.call(this, start, end); return u instanceof Buffer ? u : wrap(u); }
    fill(value, offset, end, encoding) {
      if (typeof offset === 'string') { encoding = offset; offset = 0; end = this.length; }
      if (typeof value === 'string') {
        var bytes = value.length === 1 && (encoding === undefined || normEncoding(encoding) === 'utf8') && value.charCodeAt(0) < 128 ? [value.charCodeAt(0)] : stringBytes(value, encoding);
        var from = offset || 0, to = end === undefined ? this.length : end;
        if (!bytes.length) return Uint8Array.prototype.fill.call(this, 0, from, to);
        for (var i = from; i < to; i++) this[i] = bytes[(i - from) % bytes.length];
        return this;
      }
      return Uint8Array.prototype.fill.call(this, value, offset, end);
    }
    write(string, offset, enc) {
      if (typeof offset === 'string') { enc = offset; offset = 0; }
      var bytes = stringBytes(string, enc), at = offset || 0, n = Math.min(bytes.length, this.length - at);
      this.set(bytes.subarray(0, n), at);
      return n;
    }
    copy(target, targetStart, sourceStart, sourceEnd) {
      var part = this.subarray(sourceStart || 0, sourceEnd === undefined ? this.length : sourceEnd);
      var at = targetStart || 0, n = Math.min(part.length, target.length - at);
      target.set(part.subarray(0, n), at);
      return n;
    }
    indexOf(value, from, enc) {
      if (typeof value === 'number') return Uint8Array.prototype.indexOf.call(this, value, from);
      var needle = typeof value === 'string' ? stringBytes(value, enc) : bytesOf(value);
      outer: for (var i = from || 0; i <= this.length - needle.length; i++) {
        for (var k = 0; k < needle.length; k++) if (this[i + k] !== needle[k]) continue outer;
        return i;
      }
      return -1;
    }
    includes(value, from, enc) { return this.indexOf(value, from, enc) !== -1; }
    readUInt8(o) { return this[o || 0]; }
    readUInt16BE(o) { o = o || 0; return (this[o] << 8) | this[o + 1]; }
    readUInt32BE(o) { o = o || 0; return ((this[o] << 24) >>> 0) + ((this[o + 1] << 16) | (this[o + 2] << 8) | this[o + 3]); }
    writeUInt8(v, o) { this[o || 0] = v; return (o || 0) + 1; }
  }
  var bufferModule = Object.freeze({ Buffer: Buffer, constants: Object.freeze({ MAX_LENGTH: 0x3fffffff }), kMaxLength: 0x3fffffff });

  // --- URLSearchParams and URL (WHATWG URL, for hierarchical URLs) ---
  function formEncode(s) {
    return encodeURIComponent(s).replace(/%20/g, '+').replace(/[!'()~]/g, function (c) { return '%' + c.charCodeAt(0).toString(16).toUpperCase(); });
  }
  function formDecode(s) { try { return decodeURIComponent(s.replace(/\+/g, ' ')); } catch (e) { return s.replace(/\+/g, ' '); } }
  var PARAMS_OWNER = typeof WeakMap === 'function' ? new WeakMap() : null;
  class URLSearchParams {
    constructor(init) {
      this._list = [];
      if (init === undefined || init === null) return;
      if (typeof init === 'object' && typeof init[Symbol.iterator] === 'function') {
        for (var pair of init) {
          var p = Array.from(pair);
          if (p.length !== 2) throw new TypeError('Each query pair must be an iterable [name, value] tuple');
          this._list.push([String(p[0]), String(p[1])]);
        }
      } else if (typeof init === 'object') {
        for (var k of Object.keys(init)) this._list.push([k, String(init[k])]);
      } else this._parse(String(init));
    }
    _parse(s) {
      this._list = [];
      if (s[0] === '?') s = s.slice(1);
      for (var part of s.split('&')) {
        if (!part) continue;
        var eq = part.indexOf('=');
        this._list.push(eq === -1 ? [formDecode(part), ''] : [formDecode(part.slice(0, eq)), formDecode(part.slice(eq + 1))]);
      }
    }
    _update() { var url = PARAMS_OWNER && PARAMS_OWNER.get(this); if (url) url._setQuery(this.toString()); }
    get size() { return this._list.length; }
    append(n, v) { this._list.push([String(n), String(v)]); this._update(); }
    delete(n, v) { n = String(n); this._list = this._list.filter(function (p) { return p[0] !== n || (v !== undefined && p[1] !== String(v)); }); this._update(); }
    get(n) { n = String(n); for (var p of this._list) if (p[0] === n) return p[1]; return null; }
    getAll(n) { n = String(n); return this._list.filter(function (p) { return p[0] === n; }).map(function (p) { return p[1]; }); }
    has(n, v) { n = String(n); return this._list.some(function (p) { return p[0] === n && (v === undefined || p[1] === String(v)); }); }
    set(n, v) {
      n = String(n); v = String(v);
      var i = this._list.findIndex(function (p) { return p[0] === n; });
      if (i === -1) this._list.push([n, v]);
      else { this._list[i] = [n, v]; this._list = this._list.filter(function (p, k) { return k <= i || p[0] !== n; }); }
      this._update();
    }
    sort() { this._list.sort(function (a, b) { return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0; }); this._update(); }
    forEach(fn, self) { for (var p of this._list.slice()) fn.call(self, p[1], p[0], this); }
    keys() { return this._list.map(function (p) { return p[0]; })[Symbol.iterator](); }
    values() { return this._list.map(function (p) { return p[1]; })[Symbol.iterator](); }
    entries() { return this._list.map(function (p) { return [p[0], p[1]]; })[Symbol.iterator](); }
    [Symbol.iterator]() { return this.entries(); }
    toString() { return this._list.map(function (p) { return formEncode(p[0]) + '=' + formEncode(p[1]); }).join('&'); }
  }
  var DEFAULT_PORTS = { 'http:': '80', 'https:': '443', 'ws:': '80', 'wss:': '443', 'ftp:': '21' };
  function invalidUrl(input) { return new TypeError('Invalid URL: ' + String(input).slice(0, 200)); }
  function encodePart(s, keep) {
    return s.replace(keep, function (c) { return encodeURIComponent(c); });
  }
  function normalizePath(path, special) {
    if (special) path = path.replace(/\\/g, '/');
    var out = [];
    var segments = path.split('/');
    for (var i = 1; i < segments.length; i++) {
      var seg = segments[i], last = i === segments.length - 1;
      var low = seg.toLowerCase();
      if (seg === '..' || low === '.%2e' || low === '%2e.' || low === '%2e%2e') { out.pop(); if (last) out.push(''); }
      else if (seg === '.' || low === '%2e') { if (last) out.push(''); }
      else out.push(seg);
    }
    return '/' + out.join('/');
  }
  function parseAuthorityUrl(input, scheme, rest) {
    var special = Object.prototype.hasOwnProperty.call(DEFAULT_PORTS, scheme);
    var end = rest.search(special ? /[\/\\?#]/ : /[\/?#]/);
    var authority = end === -1 ? rest : rest.slice(0, end);
    var tail = end === -1 ? '' : rest.slice(end);
    var at = authority.lastIndexOf('@'), user = '', pass = '';
    if (at !== -1) {
      var info = authority.slice(0, at); authority = authority.slice(at + 1);
      var colon = info.indexOf(':');
      user = encodePart(colon === -1 ? info : info.slice(0, colon), /[^A-Za-z0-9\-._~!$&'()*+,;=%]/g);
      pass = colon === -1 ? '' : encodePart(info.slice(colon + 1), /[^A-Za-z0-9\-._~!$&'()*+,;=%]/g);
    }
    var m = /^(\[[0-9A-Fa-f:.]+\]|[^:\[\]]*)(?::(\d*))?$/.exec(authority);
    if (!m) throw invalidUrl(input);
    var host = m[1], port = m[2] || '';
    if (special) {
      try { host = decodeURIComponent(host); } catch (e) { throw invalidUrl(input); }
      host = host.toLowerCase();
      if (!host || /[\x00-\x20#%\/:<>?@\[\\\]^|]/.test(host.replace(/^\[.*\]$/, 'x'))) throw invalidUrl(input);
      if (/^\d+$/.test(host.split('.').pop())) {
        var parts = host.split('.');
        if (parts.length !== 4 || parts.some(function (p) { return !/^\d+$/.test(p) || Number(p) > 255; })) throw invalidUrl(input);
        host = parts.map(Number).join('.');
      }
    }
    if (port) { if (Number(port) > 65535) throw invalidUrl(input); port = String(Number(port)); }
    if (port === DEFAULT_PORTS[scheme]) port = '';
    return { special: special, user: user, pass: pass, host: host, port: port, tail: tail };
  }
  function splitTail(tail) {
    var h = tail.indexOf('#'), hash = '';
    if (h !== -1) { hash = tail.slice(h); tail = tail.slice(0, h); }
    var q = tail.indexOf('?'), query = '';
    if (q !== -1) { query = tail.slice(q); tail = tail.slice(0, q); }
    return { path: tail, query: query, hash: hash };
  }
  function encodeHash(h) { return h ? '#' + encodePart(h.slice(1), QUERY_KEEP) : ''; }
  var PATH_KEEP = /[^A-Za-z0-9\-._~!$&'()*+,;=:@\/%]/g, QUERY_KEEP = /[^A-Za-z0-9\-._~!$&'()*+,;=:@\/?%]/g;
  class URL {
    constructor(input, base) {
      var s = String(input).replace(/^[\x00-\x20]+|[\x00-\x20]+$/g, '').replace(/[\t\n\r]/g, '');
      var m = /^([A-Za-z][A-Za-z0-9+.\-]*):(.*)$/.exec(s);
      if (!m) {
        if (base === undefined) throw invalidUrl(input);
        var b = base instanceof URL ? base : new URL(base);
        if (!b._host && b._host !== '') throw invalidUrl(input);
        if (/^[\/\\]{2}/.test(s) && b._special || /^\/\//.test(s)) { this._init(input, b._scheme, s.slice(2)); return; }
        var t = splitTail(s), path = b._path, query = b._query;
        if (t.path) {
          path = /^[\/\\]/.test(t.path) ? t.path : b._path.slice(0, b._path.lastIndexOf('/') + 1) + t.path;
          query = t.query;
        } else if (t.query) query = t.query;
        this._scheme = b._scheme; this._special = b._special; this._user = b._user; this._pass = b._pass; this._host = b._host; this._port = b._port;
        this._path = encodePart(normalizePath(path, this._special), PATH_KEEP);
        this._query = encodePart(query, QUERY_KEEP); this._hash = encodeHash(t.hash);
        return;
      }
      var scheme = m[1].toLowerCase() + ':', rest = m[2];
      if (DEFAULT_PORTS[scheme] !== undefined) rest = rest.replace(/^[\/\\]*/, '');
      else if (rest.slice(0, 2) === '//') rest = rest.slice(2);
      else {
        var t2 = splitTail(rest);
        this._scheme = scheme; this._special = false; this._user = ''; this._pass = ''; this._host = null; this._port = '';
        this._path = encodePart(t2.path, PATH_KEEP); this._query = encodePart(t2.query, QUERY_KEEP); this._hash = encodeHash(t2.hash);
        return;
      }
      this._init(input, scheme, rest);
    }
    _init(input, scheme, rest) {
      var a = parseAuthorityUrl(input, scheme, rest);
      var t = splitTail(a.tail);
      this._scheme = scheme; this._special = a.special; this._user = a.user; this._pass = a.pass; this._host = a.host; this._port = a.port;
      this._path = encodePart(normalizePath(t.path || (a.special ? '/' : ''), a.special), PATH_KEEP);
      if (!a.special && !t.path) this._path = '';
      this._query = encodePart(t.query, QUERY_KEEP); this._hash = encodeHash(t.hash);
    }
    _setQuery(q) { this._query = q ? '?' + q : ''; }
    get protocol() { return this._scheme; }
    get username() { return this._user; }
    get password() { return this._pass; }
    get hostname() { return this._host === null ? '' : this._host; }
    set hostname(v) { if (this._host !== null) this._host = String(v).toLowerCase(); }
    get port() { return this._port; }
    set port(v) { v = String(v); if (v === '' || /^\d+$/.test(v) && Number(v) <= 65535) this._port = v === DEFAULT_PORTS[this._scheme] ? '' : v === '' ? '' : String(Number(v)); }
    get host() { return this.hostname + (this._port ? ':' + this._port : ''); }
    get origin() { return this._special && this._scheme !== 'file:' ? this._scheme + '//' + this.host : 'null'; }
    get pathname() { return this._path; }
    set pathname(v) { v = String(v); this._path = encodePart(normalizePath(v[0] === '/' ? v : '/' + v, this._special), PATH_KEEP); }
    get search() { return this._query.length > 1 ? this._query : ''; }
    set search(v) { v = String(v); this._query = v && v !== '?' ? encodePart(v[0] === '?' ? v : '?' + v, QUERY_KEEP) : ''; if (this._params) this._params._parse(this._query); }
    get hash() { return this._hash.length > 1 ? this._hash : ''; }
    set hash(v) { v = String(v); this._hash = v && v !== '#' ? encodeHash(v[0] === '#' ? v : '#' + v) : ''; }
    get searchParams() {
      if (!this._params) { this._params = new URLSearchParams(this._query); if (PARAMS_OWNER) PARAMS_OWNER.set(this._params, this); }
      return this._params;
    }
    get href() {
      var auth = this._user || this._pass ? this._user + (this._pass ? ':' + this._pass : '') + '@' : '';
      var head = this._host === null ? this._scheme : this._scheme + '//' + auth + this.host;
      return head + this._path + this.search + this.hash;
    }
    toString() { return this.href; }
    toJSON() { return this.href; }
    static canParse(input, base) { try { new URL(input, base); return true; } catch (e) { return false; } }
  }

  // --- timers: run by the host's loop within the run's time limit ---
  var timers = [], timerSeq = 0;
  function addTimer(fn, ms, args, repeat) {
    if (typeof fn !== 'function') throw new TypeError('The "callback" argument must be of type function');
    var delay = Number(ms); if (!(delay >= 1)) delay = 1; if (delay > 2147483647) delay = 1;
    var t = { id: ++timerSeq, at: Date.now() + delay, fn: fn, args: args, repeat: repeat ? delay : 0 };
    timers.push(t);
    return t.id;
  }
  function clearTimer(id) {
    if (id && typeof id === 'object' && typeof id[Symbol.toPrimitive] === 'function') id = id[Symbol.toPrimitive]();
    for (var i = 0; i < timers.length; i++) if (timers[i].id === id) { timers.splice(i, 1); return; }
  }
  function setTimeout(fn, ms) { return addTimer(fn, ms, Array.prototype.slice.call(arguments, 2), false); }
  function setInterval(fn, ms) { return addTimer(fn, ms, Array.prototype.slice.call(arguments, 2), true); }
  function setImmediate(fn) { return addTimer(fn, 0, Array.prototype.slice.call(arguments, 1), false); }
  function earliest() {
    var best = null;
    for (var i = 0; i < timers.length; i++) if (!best || timers[i].at < best.at || (timers[i].at === best.at && timers[i].id < best.id)) best = timers[i];
    return best;
  }
  /** The host's hook: -1 when no timer is pending, else the time the next one is due (Date.now() terms); with fire, runs it first if due. */
  function pumpTimers(fire) {
    var t = earliest();
    if (t && fire && t.at <= Date.now()) {
      if (t.repeat) t.at = Date.now() + t.repeat; else clearTimer(t.id);
      t.fn.apply(undefined, t.args);
      t = earliest();
    }
    return t ? t.at : -1;
  }

  // --- fetch: the request is made by the host, only to the host's egress allow-list ---
  class Headers {
    constructor(init) {
      this._map = {};
      if (init === undefined || init === null) return;
      if (init instanceof Headers) init = init._map;
      if (Array.isArray(init)) for (var pair of init) this.append(pair[0], pair[1]);
      else if (typeof init === 'object') for (var k of Object.keys(init)) this.append(k, init[k]);
    }
    append(name, value) { var n = String(name).toLowerCase(), v = String(value); this._map[n] = Object.prototype.hasOwnProperty.call(this._map, n) ? this._map[n] + ', ' + v : v; }
    set(name, value) { this._map[String(name).toLowerCase()] = String(value); }
    get(name) { var n = String(name).toLowerCase(); return Object.prototype.hasOwnProperty.call(this._map, n) ? this._map[n] : null; }
    has(name) { return Object.prototype.hasOwnProperty.call(this._map, String(name).toLowerCase()); }
    delete(name) { delete this._map[String(name).toLowerCase()]; }
    forEach(fn, self) { for (var k of Object.keys(this._map).sort()) fn.call(self, this._map[k], k, this); }
    entries() { var m = this._map; return Object.keys(m).sort().map(function (k) { return [k, m[k]]; })[Symbol.iterator](); }
    keys() { return Object.keys(this._map).sort()[Symbol.iterator](); }
    values() { var m = this._map; return Object.keys(m).sort().map(function (k) { return m[k]; })[Symbol.iterator](); }
    [Symbol.iterator]() { return this.entries(); }
  }
  class Response {
    constructor(body, init) {
      init = init || {};
      this._body = body === undefined || body === null ? '' : String(body);
      this.status = init.status === undefined ? 200 : init.status;
      this.statusText = init.statusText || '';
      this.headers = new Headers(init.headers);
      this.url = init.url || '';
      this.redirected = !!init.redirected;
      this.bodyUsed = false;
    }
    get ok() { return this.status >= 200 && this.status < 300; }
    _take() { if (this.bodyUsed) throw new TypeError('Body has already been read'); this.bodyUsed = true; return this._body; }
    text() { try { return Promise.resolve(this._take()); } catch (e) { return Promise.reject(e); } }
    json() { try { return Promise.resolve(JSON.parse(this._take())); } catch (e) { return Promise.reject(e); } }
    arrayBuffer() { try { var b = utf8Encode(this._take()); return Promise.resolve(b.buffer); } catch (e) { return Promise.reject(e); } }
    clone() { if (this.bodyUsed) throw new TypeError('Body has already been read'); return new Response(this._body, { status: this.status, statusText: this.statusText, headers: this.headers, url: this.url, redirected: this.redirected }); }
  }
  var pendingFetches = new Map();
  function fetch(input, init) {
    return new Promise(function (resolve, reject) {
      init = init || {};
      var url = input instanceof URL ? input.href : input && typeof input === 'object' && typeof input.url === 'string' ? input.url : String(input);
      var headers = new Headers(init.headers), body = init.body;
      if (body instanceof URLSearchParams) { if (!headers.has('content-type')) headers.set('content-type', 'application/x-www-form-urlencoded;charset=UTF-8'); body = body.toString(); }
      else if (body instanceof Uint8Array) body = utf8Decode(body);
      else if (body !== undefined && body !== null && typeof body !== 'string') throw new TypeError('fetch in a formula takes a string body (JSON.stringify it)');
      if (typeof body === 'string' && !headers.has('content-type')) headers.set('content-type', 'text/plain;charset=UTF-8');
      var request = { url: url, method: init.method === undefined ? 'GET' : String(init.method), headers: headers._map };
      if (typeof body === 'string') request.body = body;
      var id = hostFetch(JSON.stringify(request));
      pendingFetches.set(id, { resolve: resolve, reject: reject });
    });
  }
  /** The host's hook: settles fetch number id with the response (JSON text), or rejects it with a TypeError. */
  function deliverFetch(id, ok, payload) {
    var pending = pendingFetches.get(id);
    if (!pending) return;
    pendingFetches.delete(id);
    if (!ok) { var e = new TypeError('fetch failed: ' + payload); pending.reject(e); return; }
    var r = JSON.parse(payload);
    pending.resolve(new Response(r.body, { status: r.status, statusText: r.statusText, headers: r.headers, url: r.url, redirected: r.redirected }));
  }
  function nodeFetch(input, init) { return fetch(input, init); }
  nodeFetch.default = nodeFetch; nodeFetch.Headers = Headers; nodeFetch.Response = Response;
  Object.freeze(nodeFetch);

  // --- the reactor formulas SDK's errors ---
  // Each error's message is the documented detail; its constructor argument becomes the "errors"
  // block of the answer: a string or an Error as { error: [message] }, an array as { error: [...] },
  // an object key by key (values as arrays of strings).
  var FALLBACK_ERROR = 'Something went wrong. Please try again.';
  function errorText(v) {
    if (typeof v === 'string') return v;
    if (v instanceof Error) return String(v.message);
    if (v !== null && typeof v === 'object') { try { return JSON.stringify(v); } catch (e) { return String(v); } }
    return v === undefined || v === null || v === '' ? FALLBACK_ERROR : String(v);
  }
  function sanitizeErrors(errors) {
    var out = {};
    if (Array.isArray(errors)) out.error = errors.map(errorText);
    else if (errors instanceof Error) out.error = [errorText(errors)];
    else if (errors !== null && typeof errors === 'object') {
      for (var key of Object.keys(errors)) {
        var v = errors[key];
        out[key] = Array.isArray(v) ? v.map(errorText) : [v ? errorText(v) : FALLBACK_ERROR];
      }
    } else out.error = [errors ? errorText(errors) : FALLBACK_ERROR];
    return out;
  }
  function errorClass(name, status, detail, build) {
    var C = function () {
      var e = new Error(detail);
      Object.setPrototypeOf(e, C.prototype);
      e.status = status;
      var made = build ? build.apply(undefined, arguments) : { errors: arguments[0] };
      e.errors = sanitizeErrors(made.errors);
      if (made.status !== undefined) e.status = made.status;
      return e;
    };
    C.prototype = Object.create(Error.prototype, {
      constructor: { value: C, writable: true, configurable: true },
      name: { value: name, writable: true, configurable: true },
      toRFC7807: { value: function () { return { detail: this.message, status: this.status, errors: this.errors }; }, writable: true, configurable: true },
    });
    Object.setPrototypeOf(C, Error);
    Object.defineProperty(C, 'name', { value: name });
    return C;
  }
  var sdk = Object.freeze({
    AuthenticationError: errorClass('AuthenticationError', 401, 'Authentication Failed'),
    AuthorizationError: errorClass('AuthorizationError', 403, 'Forbidden'),
    BadRequestError: errorClass('BadRequestError', 400, 'Bad Request'),
    InvalidPaymentMethodError: errorClass('InvalidPaymentMethodError', 402, 'Invalid Payment Method'),
    InvalidReactorConfigurationError: errorClass('InvalidReactorConfigurationError', 400, 'Invalid Reactor Configuration', function (property, problem) {
      var errors = {}; errors[String(property)] = [problem]; return { errors: errors };
    }),
    RateLimitError: errorClass('RateLimitError', 429, 'Rate Limit Exceeded'),
    ReactorRuntimeError: errorClass('ReactorRuntimeError', 500, 'Reactor Runtime Error', function (error) {
      var s = error !== null && typeof error === 'object' ? Number(error.status) : NaN;
      return s >= 400 && s <= 599 && Math.floor(s) === s ? { errors: error, status: s } : { errors: error };
    }),
    ServiceUnavailableError: errorClass('ServiceUnavailableError', 503, 'Service Unavailable Error'),
  });

  var GLOBALS = {
    TextEncoder: TextEncoder, TextDecoder: TextDecoder, Buffer: Buffer, URL: URL, URLSearchParams: URLSearchParams,
    setTimeout: setTimeout, clearTimeout: clearTimer, setInterval: setInterval, clearInterval: clearTimer,
    setImmediate: setImmediate, clearImmediate: clearTimer, Headers: Headers, Response: Response,
  };
  for (var g in GLOBALS) Object.defineProperty(globalThis, g, { value: GLOBALS[g], writable: true, configurable: true });
  var timersModule = Object.freeze({ setTimeout: setTimeout, clearTimeout: clearTimer, setInterval: setInterval, clearInterval: clearTimer, setImmediate: setImmediate, clearImmediate: clearTimer });
  var urlModule = Object.freeze({ URL: URL, URLSearchParams: URLSearchParams });

  var MODULES = {
    '@basis-theory/basis-theory-reactor-formulas-sdk-js': sdk,
    crypto: crypto, 'node:crypto': crypto,
    util: util, 'node:util': util,
    buffer: bufferModule, 'node:buffer': bufferModule,
    url: urlModule, 'node:url': urlModule,
    timers: timersModule, 'node:timers': timersModule,
    'node-fetch': nodeFetch,
  };
  var exported = {
    require: function require(id) {
      if (typeof id === 'string' && Object.prototype.hasOwnProperty.call(MODULES, id)) return MODULES[id];
      return refuse(typeof id === 'string' ? id : 'that');
    },
    pumpTimers: pumpTimers,
    deliverFetch: deliverFetch,
    fetch: fetch,
  };
  for (var e in GLOBALS) exported[e] = GLOBALS[e];
  return exported;
})()`

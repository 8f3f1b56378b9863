/**
 * JavaScript source evaluated inside a formula's fresh context the first time the formula uses
 * `require`, `TextEncoder` or `TextDecoder` (runs that use none of them do not pay for it): the
 * modules `require` answers (the reactor formulas SDK's error classes, `crypto`, `util`) and
 * `TextEncoder`/`TextDecoder`. Everything here is plain engine code; the only host function it uses
 * is `__randomHex(n)`, which takes a number and answers a string of hex digits, and which the
 * prelude removes from the global object before any formula code runs.
 */
export const PRELUDE = String.raw`(function () {
  'use strict';
  var randomHex = globalThis.__randomHex;
  delete globalThis.__randomHex;
  var refuse = globalThis.__refuse;
  delete globalThis.__refuse;

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
    if (typeof data === 'string') {
      if (encoding === 'hex') {
        var out = new Uint8Array(data.length >> 1);
        for (var i = 0; i < out.length; i++) out[i] = parseInt(data.substr(i * 2, 2), 16);
        return out;
      }
      return utf8Encode(data);
    }
    if (data instanceof Uint8Array) return data;
    if (data instanceof ArrayBuffer) return new Uint8Array(data);
    if (data && data.buffer instanceof ArrayBuffer) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    throw new TypeError('data must be a string or bytes');
  }
  function encodeAs(bytes, encoding) {
    if (encoding === undefined) return bytes;
    if (encoding === 'hex') return toHex(bytes);
    if (encoding === 'base64') return toBase64(bytes);
    if (encoding === 'base64url') return toBase64(bytes).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    if (encoding === 'utf8' || encoding === 'utf-8') return utf8Decode(bytes);
    throw new TypeError('unsupported encoding: ' + encoding);
  }

  // --- random (from the host: a number in, hex text out) ---
  function randomBytesArray(n) {
    if (typeof n !== 'number' || !(n >= 0) || n > 65536 || Math.floor(n) !== n) throw new RangeError('size must be an integer from 0 to 65536');
    return bytesOf(randomHex(n), 'hex');
  }
  function randomUUID() {
    var b = randomBytesArray(16);
    b[6] = (b[6] & 15) | 0x40; b[8] = (b[8] & 63) | 0x80;
    var h = toHex(b);
    return h.slice(0, 8) + '-' + h.slice(8, 12) + '-' + h.slice(12, 16) + '-' + h.slice(16, 20) + '-' + h.slice(20);
  }

  // --- SHA-256, SHA-1 ---
  var K256 = [0x428a2f98,0x71374491,0xb5c0fbcf,0xe9b5dba5,0x3956c25b,0x59f111f1,0x923f82a4,0xab1c5ed5,0xd807aa98,0x12835b01,0x243185be,0x550c7dc3,0x72be5d74,0x80deb1fe,0x9bdc06a7,0xc19bf174,0xe49b69c1,0xefbe4786,0x0fc19dc6,0x240ca1cc,0x2de92c6f,0x4a7484aa,0x5cb0a9dc,0x76f988da,0x983e5152,0xa831c66d,0xb00327c8,0xbf597fc7,0xc6e00bf3,0xd5a79147,0x06ca6351,0x14292967,0x27b70a85,0x2e1b2138,0x4d2c6dfc,0x53380d13,0x650a7354,0x766a0abb,0x81c2c92e,0x92722c85,0xa2bfe8a1,0xa81a664b,0xc24b8b70,0xc76c51a3,0xd192e819,0xd6990624,0xf40e3585,0x106aa070,0x19a4c116,0x1e376c08,0x2748774c,0x34b0bcb5,0x391c0cb3,0x4ed8aa4a,0x5b9cca4f,0x682e6ff3,0x748f82ee,0x78a5636f,0x84c87814,0x8cc70208,0x90befffa,0xa4506ceb,0xbef9a3f7,0xc67178f2];
  function pad(m) {
    var len = m.length, total = ((len + 9 + 63) >> 6) << 6, p = new Uint8Array(total);
    p.set(m); p[len] = 0x80;
    var bits = len * 8;
    p[total - 4] = (bits >>> 24) & 255; p[total - 3] = (bits >>> 16) & 255; p[total - 2] = (bits >>> 8) & 255; p[total - 1] = bits & 255;
    p[total - 5] = Math.floor(bits / 0x100000000) & 255;
    return p;
  }
  function words(h) { var o = new Uint8Array(h.length * 4); for (var i = 0; i < h.length; i++) { o[i*4] = h[i] >>> 24; o[i*4+1] = (h[i] >>> 16) & 255; o[i*4+2] = (h[i] >>> 8) & 255; o[i*4+3] = h[i] & 255; } return o; }
  function sha256(m) {
    var p = pad(m), h = [0x6a09e667,0xbb67ae85,0x3c6ef372,0xa54ff53a,0x510e527f,0x9b05688c,0x1f83d9ab,0x5be0cd19], w = new Array(64);
    for (var o = 0; o < p.length; o += 64) {
      for (var i = 0; i < 16; i++) w[i] = (p[o+i*4] << 24) | (p[o+i*4+1] << 16) | (p[o+i*4+2] << 8) | p[o+i*4+3];
      for (i = 16; i < 64; i++) {
        var a0 = w[i-15], a1 = w[i-2];
        var s0 = ((a0 >>> 7) | (a0 << 25)) ^ ((a0 >>> 18) | (a0 << 14)) ^ (a0 >>> 3);
        var s1 = ((a1 >>> 17) | (a1 << 15)) ^ ((a1 >>> 19) | (a1 << 13)) ^ (a1 >>> 10);
        w[i] = (w[i-16] + s0 + w[i-7] + s1) | 0;
      }
      var a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
      for (i = 0; i < 64; i++) {
        var S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
        var t1 = (hh + S1 + ((e & f) ^ (~e & g)) + K256[i] + w[i]) | 0;
        var S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
        var t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
        hh = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
      }
      h[0] = (h[0] + a) | 0; h[1] = (h[1] + b) | 0; h[2] = (h[2] + c) | 0; h[3] = (h[3] + d) | 0;
      h[4] = (h[4] + e) | 0; h[5] = (h[5] + f) | 0; h[6] = (h[6] + g) | 0; h[7] = (h[7] + hh) | 0;
    }
    return words(h);
  }
  function sha1(m) {
    var p = pad(m), h = [0x67452301,0xefcdab89,0x98badcfe,0x10325476,0xc3d2e1f0], w = new Array(80);
    for (var o = 0; o < p.length; o += 64) {
      for (var i = 0; i < 16; i++) w[i] = (p[o+i*4] << 24) | (p[o+i*4+1] << 16) | (p[o+i*4+2] << 8) | p[o+i*4+3];
      for (i = 16; i < 80; i++) { var x = w[i-3] ^ w[i-8] ^ w[i-14] ^ w[i-16]; w[i] = (x << 1) | (x >>> 31); }
      var a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
      for (i = 0; i < 80; i++) {
        var f, k;
        if (i < 20) { f = (b & c) | (~b & d); k = 0x5a827999; }
        else if (i < 40) { f = b ^ c ^ d; k = 0x6ed9eba1; }
        else if (i < 60) { f = (b & c) | (b & d) | (c & d); k = 0x8f1bbcdc; }
        else { f = b ^ c ^ d; k = 0xca62c1d6; }
        var t = (((a << 5) | (a >>> 27)) + f + e + k + w[i]) | 0;
        e = d; d = c; c = (b << 30) | (b >>> 2); b = a; a = t;
      }
      h[0] = (h[0] + a) | 0; h[1] = (h[1] + b) | 0; h[2] = (h[2] + c) | 0; h[3] = (h[3] + d) | 0; h[4] = (h[4] + e) | 0;
    }
    return words(h);
  }
  var HASHES = { sha256: sha256, 'sha-256': sha256, sha1: sha1, 'sha-1': sha1 };
  function hashFn(name) {
    var f = HASHES[String(name).toLowerCase()];
    if (!f) throw new Error('Digest method not supported: ' + name + ' (formulas have sha256 and sha1)');
    return f;
  }
  function concat(parts) {
    var n = 0, i; for (i = 0; i < parts.length; i++) n += parts[i].length;
    var out = new Uint8Array(n), at = 0;
    for (i = 0; i < parts.length; i++) { out.set(parts[i], at); at += parts[i].length; }
    return out;
  }
  function Hash(fn) { this._fn = fn; this._parts = []; }
  Hash.prototype.update = function (data, enc) { this._parts.push(bytesOf(data, enc)); return this; };
  Hash.prototype.digest = function (enc) { return encodeAs(this._fn(concat(this._parts)), enc); };
  function Hmac(fn, key) {
    var k = bytesOf(key);
    if (k.length > 64) k = fn(k);
    var block = new Uint8Array(64); block.set(k);
    this._fn = fn; this._key = block; this._parts = [];
  }
  Hmac.prototype.update = Hash.prototype.update;
  Hmac.prototype.digest = function (enc) {
    var ipad = new Uint8Array(64), opad = new Uint8Array(64);
    for (var i = 0; i < 64; i++) { ipad[i] = this._key[i] ^ 0x36; opad[i] = this._key[i] ^ 0x5c; }
    var inner = this._fn(concat([ipad].concat(this._parts)));
    return encodeAs(this._fn(concat([opad, inner])), enc);
  };
  var crypto = Object.freeze({
    createHash: function (name) { return new Hash(hashFn(name)); },
    createHmac: function (name, key) { return new Hmac(hashFn(name), key); },
    randomBytes: function (n) { return randomBytesArray(n); },
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
    getHashes: function () { return ['sha1', 'sha256']; },
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

  // --- the reactor formulas SDK's errors ---
  function errorClass(name, status) {
    var C = function (message) {
      var e = new Error(message === undefined ? name : typeof message === 'string' ? message : JSON.stringify(message));
      Object.setPrototypeOf(e, C.prototype);
      e.status = status;
      return e;
    };
    C.prototype = Object.create(Error.prototype, {
      constructor: { value: C, writable: true, configurable: true },
      name: { value: name, writable: true, configurable: true },
    });
    Object.setPrototypeOf(C, Error);
    Object.defineProperty(C, 'name', { value: name });
    return C;
  }
  var sdk = Object.freeze({
    AuthenticationError: errorClass('AuthenticationError', 401),
    AuthorizationError: errorClass('AuthorizationError', 403),
    BadRequestError: errorClass('BadRequestError', 400),
    InvalidPaymentMethodError: errorClass('InvalidPaymentMethodError', 402),
    RateLimitError: errorClass('RateLimitError', 429),
    ReactorRuntimeError: errorClass('ReactorRuntimeError', 500),
  });

  Object.defineProperty(globalThis, 'TextEncoder', { value: TextEncoder, writable: true, configurable: true });
  Object.defineProperty(globalThis, 'TextDecoder', { value: TextDecoder, writable: true, configurable: true });

  var MODULES = {
    '@basis-theory/basis-theory-reactor-formulas-sdk-js': sdk,
    crypto: crypto, 'node:crypto': crypto,
    util: util, 'node:util': util,
  };
  return {
    require: function require(id) {
      if (typeof id === 'string' && Object.prototype.hasOwnProperty.call(MODULES, id)) return MODULES[id];
      return refuse(typeof id === 'string' ? id : 'that');
    },
    TextEncoder: TextEncoder,
    TextDecoder: TextDecoder,
  };
})()`

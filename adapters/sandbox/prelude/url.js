/** `URL` and `URLSearchParams` (WHATWG URL, for hierarchical URLs). */

import { parseHost } from './url-host.js'

// --- URLSearchParams and URL (WHATWG URL, for hierarchical URLs) ---
function formEncode(s) {
  return encodeURIComponent(s)
    .replace(/%20/g, '+')
    .replace(/[!'()~]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase())
}
function formDecode(s) {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '))
  } catch (_e) {
    return s.replace(/\+/g, ' ')
  }
}
const PARAMS_OWNER = typeof WeakMap === 'function' ? new WeakMap() : null
class URLSearchParams {
  constructor(init) {
    this._list = []
    if (init === undefined || init === null) return
    if (typeof init === 'object' && typeof init[Symbol.iterator] === 'function') {
      for (const pair of init) {
        const p = Array.from(pair)
        if (p.length !== 2) throw new TypeError('Each query pair must be an iterable [name, value] tuple')
        this._list.push([String(p[0]), String(p[1])])
      }
    } else if (typeof init === 'object') {
      for (const k of Object.keys(init)) this._list.push([k, String(init[k])])
    } else this._parse(String(init))
  }
  _parse(s) {
    this._list = []
    if (s[0] === '?') s = s.slice(1)
    for (const part of s.split('&')) {
      if (!part) continue
      const eq = part.indexOf('=')
      this._list.push(
        eq === -1 ? [formDecode(part), ''] : [formDecode(part.slice(0, eq)), formDecode(part.slice(eq + 1))],
      )
    }
  }
  _update() {
    const url = PARAMS_OWNER?.get(this)
    if (url) url._setQuery(this.toString())
  }
  get size() {
    return this._list.length
  }
  append(n, v) {
    this._list.push([String(n), String(v)])
    this._update()
  }
  delete(n, v) {
    n = String(n)
    this._list = this._list.filter((p) => p[0] !== n || (v !== undefined && p[1] !== String(v)))
    this._update()
  }
  get(n) {
    n = String(n)
    for (const p of this._list) if (p[0] === n) return p[1]
    return null
  }
  getAll(n) {
    n = String(n)
    return this._list.filter((p) => p[0] === n).map((p) => p[1])
  }
  has(n, v) {
    n = String(n)
    return this._list.some((p) => p[0] === n && (v === undefined || p[1] === String(v)))
  }
  set(n, v) {
    n = String(n)
    v = String(v)
    const i = this._list.findIndex((p) => p[0] === n)
    if (i === -1) this._list.push([n, v])
    else {
      this._list[i] = [n, v]
      this._list = this._list.filter((p, k) => k <= i || p[0] !== n)
    }
    this._update()
  }
  sort() {
    this._list.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    this._update()
  }
  forEach(fn, self) {
    for (const p of this._list.slice()) fn.call(self, p[1], p[0], this)
  }
  keys() {
    return this._list.map((p) => p[0])[Symbol.iterator]()
  }
  values() {
    return this._list.map((p) => p[1])[Symbol.iterator]()
  }
  entries() {
    return this._list.map((p) => [p[0], p[1]])[Symbol.iterator]()
  }
  [Symbol.iterator]() {
    return this.entries()
  }
  toString() {
    return this._list.map((p) => formEncode(p[0]) + '=' + formEncode(p[1])).join('&')
  }
}
const DEFAULT_PORTS = { 'http:': '80', 'https:': '443', 'ws:': '80', 'wss:': '443', 'ftp:': '21' }
function invalidUrl(input) {
  return new TypeError('Invalid URL: ' + String(input).slice(0, 200))
}
function encodePart(s, keep) {
  return s.replace(keep, (c) => encodeURIComponent(c))
}
function normalizePath(path, special) {
  if (special) path = path.replace(/\\/g, '/')
  const out = []
  const segments = path.split('/')
  for (let i = 1; i < segments.length; i++) {
    const seg = segments[i],
      last = i === segments.length - 1
    const low = seg.toLowerCase()
    if (seg === '..' || low === '.%2e' || low === '%2e.' || low === '%2e%2e') {
      out.pop()
      if (last) out.push('')
    } else if (seg === '.' || low === '%2e') {
      if (last) out.push('')
    } else out.push(seg)
  }
  return '/' + out.join('/')
}
function parseAuthorityUrl(input, scheme, rest) {
  const special = Object.hasOwn(DEFAULT_PORTS, scheme)
  const end = rest.search(special ? /[/\\?#]/ : /[/?#]/)
  let authority = end === -1 ? rest : rest.slice(0, end)
  const tail = end === -1 ? '' : rest.slice(end)
  let at = authority.lastIndexOf('@'),
    user = '',
    pass = ''
  if (at !== -1) {
    const info = authority.slice(0, at)
    authority = authority.slice(at + 1)
    const colon = info.indexOf(':')
    user = encodePart(colon === -1 ? info : info.slice(0, colon), /[^A-Za-z0-9\-._~!$&'()*+,;=%]/g)
    pass = colon === -1 ? '' : encodePart(info.slice(colon + 1), /[^A-Za-z0-9\-._~!$&'()*+,;=%]/g)
  }
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]]*)(?::(\d*))?$/.exec(authority)
  if (!m) throw invalidUrl(input)
  let host = m[1],
    port = m[2] || ''
  host = parseHost(host, special, input)
  if (port) {
    if (Number(port) > 65535) throw invalidUrl(input)
    port = String(Number(port))
  }
  if (port === DEFAULT_PORTS[scheme]) port = ''
  return { special: special, user: user, pass: pass, host: host, port: port, tail: tail }
}
function splitTail(tail) {
  let h = tail.indexOf('#'),
    hash = ''
  if (h !== -1) {
    hash = tail.slice(h)
    tail = tail.slice(0, h)
  }
  let q = tail.indexOf('?'),
    query = ''
  if (q !== -1) {
    query = tail.slice(q)
    tail = tail.slice(0, q)
  }
  return { path: tail, query: query, hash: hash }
}
function encodeHash(h) {
  return h ? '#' + encodePart(h.slice(1), QUERY_KEEP) : ''
}
const PATH_KEEP = /[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]/g,
  QUERY_KEEP = /[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%]/g
class URL {
  constructor(input, base) {
    const s = String(input)
      // biome-ignore lint/suspicious/noControlCharactersInRegex: WHATWG URL trims C0 controls and spaces
      .replace(/^[\x00-\x20]+|[\x00-\x20]+$/g, '')
      .replace(/[\t\n\r]/g, '')
    const m = /^([A-Za-z][A-Za-z0-9+.-]*):(.*)$/.exec(s)
    if (!m) {
      if (base === undefined) throw invalidUrl(input)
      const b = base instanceof URL ? base : new URL(base)
      if (!b._host && b._host !== '') throw invalidUrl(input)
      if ((/^[/\\]{2}/.test(s) && b._special) || /^\/\//.test(s)) {
        this._init(input, b._scheme, s.slice(2))
        return
      }
      let t = splitTail(s),
        path = b._path,
        query = b._query
      if (t.path) {
        path = /^[/\\]/.test(t.path) ? t.path : b._path.slice(0, b._path.lastIndexOf('/') + 1) + t.path
        query = t.query
      } else if (t.query) query = t.query
      this._scheme = b._scheme
      this._special = b._special
      this._user = b._user
      this._pass = b._pass
      this._host = b._host
      this._port = b._port
      this._path = encodePart(normalizePath(path, this._special), PATH_KEEP)
      this._query = encodePart(query, QUERY_KEEP)
      this._hash = encodeHash(t.hash)
      return
    }
    let scheme = m[1].toLowerCase() + ':',
      rest = m[2]
    if (DEFAULT_PORTS[scheme] !== undefined) rest = rest.replace(/^[/\\]*/, '')
    else if (rest.slice(0, 2) === '//') rest = rest.slice(2)
    else {
      const t2 = splitTail(rest)
      this._scheme = scheme
      this._special = false
      this._user = ''
      this._pass = ''
      this._host = null
      this._port = ''
      this._path = encodePart(t2.path, PATH_KEEP)
      this._query = encodePart(t2.query, QUERY_KEEP)
      this._hash = encodeHash(t2.hash)
      return
    }
    this._init(input, scheme, rest)
  }
  _init(input, scheme, rest) {
    const a = parseAuthorityUrl(input, scheme, rest)
    const t = splitTail(a.tail)
    this._scheme = scheme
    this._special = a.special
    this._user = a.user
    this._pass = a.pass
    this._host = a.host
    this._port = a.port
    this._path = encodePart(normalizePath(t.path || (a.special ? '/' : ''), a.special), PATH_KEEP)
    if (!a.special && !t.path) this._path = ''
    this._query = encodePart(t.query, QUERY_KEEP)
    this._hash = encodeHash(t.hash)
  }
  _setQuery(q) {
    this._query = q ? '?' + q : ''
  }
  get protocol() {
    return this._scheme
  }
  get username() {
    return this._user
  }
  get password() {
    return this._pass
  }
  get hostname() {
    return this._host === null ? '' : this._host
  }
  set hostname(v) {
    if (this._host !== null) this._host = String(v).toLowerCase()
  }
  get port() {
    return this._port
  }
  set port(v) {
    v = String(v)
    if (v === '' || (/^\d+$/.test(v) && Number(v) <= 65535))
      this._port = v === DEFAULT_PORTS[this._scheme] ? '' : v === '' ? '' : String(Number(v))
  }
  get host() {
    return this.hostname + (this._port ? ':' + this._port : '')
  }
  get origin() {
    return this._special && this._scheme !== 'file:' ? this._scheme + '//' + this.host : 'null'
  }
  get pathname() {
    return this._path
  }
  set pathname(v) {
    v = String(v)
    this._path = encodePart(normalizePath(v[0] === '/' ? v : '/' + v, this._special), PATH_KEEP)
  }
  get search() {
    return this._query.length > 1 ? this._query : ''
  }
  set search(v) {
    v = String(v)
    this._query = v && v !== '?' ? encodePart(v[0] === '?' ? v : '?' + v, QUERY_KEEP) : ''
    if (this._params) this._params._parse(this._query)
  }
  get hash() {
    return this._hash.length > 1 ? this._hash : ''
  }
  set hash(v) {
    v = String(v)
    this._hash = v && v !== '#' ? encodeHash(v[0] === '#' ? v : '#' + v) : ''
  }
  get searchParams() {
    if (!this._params) {
      this._params = new URLSearchParams(this._query)
      if (PARAMS_OWNER) PARAMS_OWNER.set(this._params, this)
    }
    return this._params
  }
  get href() {
    const auth = this._user || this._pass ? this._user + (this._pass ? ':' + this._pass : '') + '@' : ''
    const head = this._host === null ? this._scheme : this._scheme + '//' + auth + this.host
    return head + this._path + this.search + this.hash
  }
  toString() {
    return this.href
  }
  toJSON() {
    return this.href
  }
  static canParse(input, base) {
    try {
      new URL(input, base)
      return true
    } catch (_e) {
      return false
    }
  }
}

export { URL, URLSearchParams }

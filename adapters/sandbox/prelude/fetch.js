/** `fetch`: the request is made by the host, only to the host's egress allow-list. */

import { hostFetch } from './host.js'
import { utf8Decode, utf8Encode } from './text.js'
import { URL, URLSearchParams } from './url.js'

// --- fetch: the request is made by the host, only to the host's egress allow-list ---
class Headers {
  constructor(init) {
    this._map = {}
    if (init === undefined || init === null) return
    if (init instanceof Headers) init = init._map
    if (Array.isArray(init)) for (const pair of init) this.append(pair[0], pair[1])
    else if (typeof init === 'object') for (const k of Object.keys(init)) this.append(k, init[k])
  }
  append(name, value) {
    const n = String(name).toLowerCase(),
      v = String(value)
    this._map[n] = Object.hasOwn(this._map, n) ? this._map[n] + ', ' + v : v
  }
  set(name, value) {
    this._map[String(name).toLowerCase()] = String(value)
  }
  get(name) {
    const n = String(name).toLowerCase()
    return Object.hasOwn(this._map, n) ? this._map[n] : null
  }
  has(name) {
    return Object.hasOwn(this._map, String(name).toLowerCase())
  }
  delete(name) {
    delete this._map[String(name).toLowerCase()]
  }
  forEach(fn, self) {
    for (const k of Object.keys(this._map).sort()) fn.call(self, this._map[k], k, this)
  }
  entries() {
    const m = this._map
    return Object.keys(m)
      .sort()
      .map((k) => [k, m[k]])
      [Symbol.iterator]()
  }
  keys() {
    return Object.keys(this._map).sort()[Symbol.iterator]()
  }
  values() {
    const m = this._map
    return Object.keys(m)
      .sort()
      .map((k) => m[k])
      [Symbol.iterator]()
  }
  [Symbol.iterator]() {
    return this.entries()
  }
}
class Response {
  constructor(body, init) {
    init = init || {}
    this._body = body === undefined || body === null ? '' : String(body)
    this.status = init.status === undefined ? 200 : init.status
    this.statusText = init.statusText || ''
    this.headers = new Headers(init.headers)
    this.url = init.url || ''
    this.redirected = !!init.redirected
    this.bodyUsed = false
  }
  get ok() {
    return this.status >= 200 && this.status < 300
  }
  _take() {
    if (this.bodyUsed) throw new TypeError('Body has already been read')
    this.bodyUsed = true
    return this._body
  }
  text() {
    try {
      return Promise.resolve(this._take())
    } catch (e) {
      return Promise.reject(e)
    }
  }
  json() {
    try {
      return Promise.resolve(JSON.parse(this._take()))
    } catch (e) {
      return Promise.reject(e)
    }
  }
  arrayBuffer() {
    try {
      const b = utf8Encode(this._take())
      return Promise.resolve(b.buffer)
    } catch (e) {
      return Promise.reject(e)
    }
  }
  clone() {
    if (this.bodyUsed) throw new TypeError('Body has already been read')
    return new Response(this._body, {
      status: this.status,
      statusText: this.statusText,
      headers: this.headers,
      url: this.url,
      redirected: this.redirected,
    })
  }
}
const pendingFetches = new Map()
function fetch(input, init) {
  return new Promise((resolve, reject) => {
    init = init || {}
    const url =
      input instanceof URL
        ? input.href
        : input && typeof input === 'object' && typeof input.url === 'string'
          ? input.url
          : String(input)
    let headers = new Headers(init.headers),
      body = init.body
    if (body instanceof URLSearchParams) {
      if (!headers.has('content-type'))
        headers.set('content-type', 'application/x-www-form-urlencoded;charset=UTF-8')
      body = body.toString()
    } else if (body instanceof Uint8Array) body = utf8Decode(body)
    else if (body !== undefined && body !== null && typeof body !== 'string')
      throw new TypeError('fetch in a formula takes a string body (JSON.stringify it)')
    if (typeof body === 'string' && !headers.has('content-type'))
      headers.set('content-type', 'text/plain;charset=UTF-8')
    const request = {
      url: url,
      method: init.method === undefined ? 'GET' : String(init.method),
      headers: headers._map,
    }
    if (typeof body === 'string') request.body = body
    const id = hostFetch(JSON.stringify(request))
    pendingFetches.set(id, { resolve: resolve, reject: reject })
  })
}
/** The host's hook: settles fetch number id with the response (JSON text), or rejects it with a TypeError. */
function deliverFetch(id, ok, payload) {
  const pending = pendingFetches.get(id)
  if (!pending) return
  pendingFetches.delete(id)
  if (!ok) {
    const e = new TypeError('fetch failed: ' + payload)
    pending.reject(e)
    return
  }
  const r = JSON.parse(payload)
  pending.resolve(
    new Response(r.body, {
      status: r.status,
      statusText: r.statusText,
      headers: r.headers,
      url: r.url,
      redirected: r.redirected,
    }),
  )
}
function nodeFetch(input, init) {
  return fetch(input, init)
}
nodeFetch.default = nodeFetch
nodeFetch.Headers = Headers
nodeFetch.Response = Response
Object.freeze(nodeFetch)

export { deliverFetch, fetch, Headers, nodeFetch, Response }

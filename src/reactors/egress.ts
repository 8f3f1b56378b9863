import {
  type EgressClient,
  EgressError,
  type EgressLimits,
  type EgressRequest,
  type EgressResponse,
} from '../kernel/index.js'

export type { EgressClient, EgressLimits, EgressRequest, EgressResponse } from '../kernel/index.js'
export { EGRESS_MAX_BODY_BYTES, EgressError } from '../kernel/index.js'

/**
 * The egress policy: what the host lets out on behalf of tenants (a formula's `fetch`, an
 * asynchronous react's callback, the proxy), whoever carries the request (the `EgressClient` port: the node
 * client of `adapters/egress`, or an in-process one in tests). Off by default: with an empty list
 * nothing goes out. On top of the list (the node client adds the address checks: loopback and
 * private addresses refused unless listed by address, one resolution, no DNS rebinding):
 * - the method, the headers and the request body are checked (`checkEgressRequest`);
 * - redirects are followed (at most 5) only to listed origins, credentials dropped across origins;
 * - the request body, the response body and the time are bounded.
 */

/** An origin of the allow-list, as `URL.origin` spells it (`https://api.example.com`, `http://127.0.0.1:8080`). */
export type EgressOrigin = string

/** Checks and normalizes an allow-list: each entry an `http:`/`https:` origin, without path, query or credentials. */
export function parseEgressOrigins(list: readonly string[] | undefined): EgressOrigin[] {
  if (list === undefined) return []
  if (!Array.isArray(list)) throw new TypeError('egress must be a list of origins')
  const out = new Set<string>()
  for (const entry of list) {
    let url: URL
    try {
      url = new URL(String(entry))
    } catch {
      throw new TypeError(`egress: ${JSON.stringify(entry)} is not a URL origin`)
    }
    const bare = url.pathname === '/' && !url.search && !url.hash && !url.username && !url.password
    if ((url.protocol !== 'https:' && url.protocol !== 'http:') || !bare) {
      throw new TypeError(
        `egress: ${JSON.stringify(entry)} must be an http or https origin (scheme, host and port only)`,
      )
    }
    out.add(url.origin)
  }
  return [...out]
}

/** Whether `url` (text) is on the allow-list: its parsed URL when it is, else null. */
export function allowedUrl(origins: readonly EgressOrigin[], url: string): URL | null {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return null
  }
  if (parsed.username || parsed.password) return null
  return origins.includes(parsed.origin) ? parsed : null
}

/** Redirects one request may follow. */
export const EGRESS_MAX_REDIRECTS = 5
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
/** Headers the host sets itself (or that would change how the connection is used). */
const RESERVED = new Set([
  'host',
  'connection',
  'content-length',
  'transfer-encoding',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'proxy-authorization',
  'proxy-connection',
])
const MAX_HEADERS = 64
const MAX_HEADER_BYTES = 32 * 1024

/** Checks `request`'s method, headers and body; answers them normalized or throws `EgressError`. */
export function checkEgressRequest(request: EgressRequest, limits: EgressLimits): EgressRequest {
  const method = String(request.method).toUpperCase()
  if (!METHODS.has(method))
    throw new EgressError(`method ${JSON.stringify(method.slice(0, 20))} is not allowed`)
  const headers: Record<string, string> = {}
  let size = 0
  const entries = Object.entries(request.headers ?? {})
  if (entries.length > MAX_HEADERS) throw new EgressError(`at most ${MAX_HEADERS} request headers`)
  for (const [rawName, rawValue] of entries) {
    const name = String(rawName).toLowerCase()
    const value = String(rawValue)
    if (!TOKEN.test(name)) throw new EgressError(`invalid header name ${JSON.stringify(name.slice(0, 50))}`)
    if (/[\r\n\0]/.test(value)) throw new EgressError(`invalid value for header ${name}`)
    if (RESERVED.has(name) || name.startsWith('proxy-'))
      throw new EgressError(`header ${name} is set by the host`)
    size += name.length + value.length
    headers[name] = value
  }
  if (size > MAX_HEADER_BYTES)
    throw new EgressError(`request headers are larger than ${MAX_HEADER_BYTES} bytes`)
  const body = request.body
  if (body !== undefined && Buffer.byteLength(body) > limits.maxRequestBytes)
    throw new EgressError(`request body is larger than ${limits.maxRequestBytes} bytes`)
  if (body !== undefined && (method === 'GET' || method === 'HEAD'))
    throw new EgressError(`a ${method} request has no body`)
  return body === undefined
    ? { url: request.url, method, headers }
    : { url: request.url, method, headers, body }
}

/** One answer of an exchange, before redirects are looked at. */
export type EgressAnswer = Omit<EgressResponse, 'url' | 'redirected'>

/**
 * One exchange with a listed origin, no redirect followed: what a client carries (the node client:
 * resolve, check the address, connect). `url` is on the allow-list; `request` is checked. It must
 * stop when `signal` aborts, and bound the response body by `limits.maxResponseBytes`.
 */
export type EgressExchange = (
  url: URL,
  request: EgressRequest,
  limits: EgressLimits,
  signal: AbortSignal,
) => Promise<EgressAnswer>

/**
 * An `EgressClient` that applies the policy around `exchange`: the request checked, each hop on the
 * allow-list (a redirect to a listed origin is followed, to any other refused before any exchange),
 * the whole bounded by `limits.timeoutMs` and `limits.signal`. Rejects with an `EgressError` whose
 * message says why.
 */
export function egressVia(exchange: EgressExchange): EgressClient {
  return async (origins, request, limits) => {
    const timeout = new AbortController()
    const timer = setTimeout(
      () => timeout.abort(new EgressError(`no answer within ${Math.round(limits.timeoutMs)} ms`)),
      Math.max(0, limits.timeoutMs),
    )
    const signal = limits.signal ? AbortSignal.any([timeout.signal, limits.signal]) : timeout.signal
    try {
      return await follow(origins, checkEgressRequest(request, limits), limits, signal, exchange)
    } finally {
      clearTimeout(timer)
    }
  }
}

/** The reason `signal` aborted, as an `EgressError`. */
export const abortReason = (signal: AbortSignal): EgressError =>
  signal.reason instanceof EgressError ? signal.reason : new EgressError('aborted')

/** Exchanges `request`, following redirects to listed origins, up to `EGRESS_MAX_REDIRECTS`. */
async function follow(
  origins: readonly EgressOrigin[],
  request: EgressRequest,
  limits: EgressLimits,
  signal: AbortSignal,
  exchange: EgressExchange,
): Promise<EgressResponse> {
  let current = request
  for (let hop = 0; ; hop++) {
    const url = allowedUrl(origins, current.url)
    if (!url) {
      throw new EgressError(
        hop === 0
          ? `${originText(current.url)} is not on the egress allow-list`
          : `redirect to ${originText(current.url)} refused: not on the egress allow-list`,
      )
    }
    if (signal.aborted) throw abortReason(signal)
    const answer = await exchange(url, current, limits, signal)
    const location = answer.headers['location']
    const redirect =
      limits.followRedirects !== false && answer.status >= 300 && answer.status < 400 && answer.status !== 304
    if (!redirect || location === undefined) return { ...answer, url: url.href, redirected: hop > 0 }
    if (hop >= EGRESS_MAX_REDIRECTS) throw new EgressError(`more than ${EGRESS_MAX_REDIRECTS} redirects`)
    current = redirected(current, url, answer.status, location)
  }
}

/** The request a redirect (`status`, `location`, from `url`) leads to. */
function redirected(current: EgressRequest, url: URL, status: number, location: string): EgressRequest {
  let next: string
  try {
    next = new URL(location, url).href
  } catch {
    throw new EgressError('a redirect to an invalid URL')
  }
  const keepsBody = status === 307 || status === 308 || (status !== 303 && current.method !== 'POST')
  const out: EgressRequest = keepsBody
    ? { ...current, url: next }
    : {
        url: next,
        method: current.method === 'HEAD' ? 'HEAD' : 'GET',
        headers: withoutBodyHeaders(current.headers),
      }
  if (new URL(next).origin !== url.origin) out.headers = withoutCredentials(out.headers)
  return out
}

const originText = (url: string): string => {
  try {
    return new URL(url).origin
  } catch {
    return 'an invalid URL'
  }
}

function withoutBodyHeaders(headers: Record<string, string>): Record<string, string> {
  const out = { ...headers }
  for (const name of ['content-type', 'content-encoding', 'content-language', 'content-location'])
    delete out[name]
  return out
}

function withoutCredentials(headers: Record<string, string>): Record<string, string> {
  const out = { ...headers }
  for (const name of ['authorization', 'cookie']) delete out[name]
  return out
}

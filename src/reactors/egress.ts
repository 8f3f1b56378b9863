import { lookup } from 'node:dns/promises'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { BlockList, isIP } from 'node:net'

/**
 * Outbound HTTP on behalf of tenants (a formula's `fetch`, an asynchronous react's callback), made
 * by the host and only to the origins of the service's egress allow-list (`reactorEgress`). Off by
 * default: with an empty list nothing goes out. On top of the list:
 * - the host name is resolved once, every address it resolves to is checked, and the connection is
 *   made to the checked address (a second resolution can't lead elsewhere: no DNS rebinding);
 * - loopback, private, link-local, shared, multicast and reserved addresses are refused unless the
 *   listed origin names that address itself (`http://127.0.0.1:8080`; `localhost` counts as
 *   loopback addresses only);
 * - redirects are followed (at most 5) only to listed origins, under the same checks;
 * - the request body, the response body and the time are bounded.
 */

/** An origin of the allow-list, as `URL.origin` spells it (`https://api.example.com`, `http://127.0.0.1:8080`). */
export type EgressOrigin = string

/** Checks and normalizes an allow-list: each entry an `http:`/`https:` origin, without path, query or credentials. */
export function parseEgressOrigins(list: readonly string[] | undefined): EgressOrigin[] {
  if (list === undefined) return []
  if (!Array.isArray(list)) throw new TypeError('reactorEgress must be a list of origins')
  const out = new Set<string>()
  for (const entry of list) {
    let url: URL
    try {
      url = new URL(String(entry))
    } catch {
      throw new TypeError(`reactorEgress: ${JSON.stringify(entry)} is not a URL origin`)
    }
    const bare = url.pathname === '/' && !url.search && !url.hash && !url.username && !url.password
    if ((url.protocol !== 'https:' && url.protocol !== 'http:') || !bare) {
      throw new TypeError(
        `reactorEgress: ${JSON.stringify(entry)} must be an http or https origin (scheme, host and port only)`,
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

const SPECIAL_V4 = new BlockList()
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  SPECIAL_V4.addSubnet(net, prefix, 'ipv4')
}
const SPECIAL_V6 = new BlockList()
for (const [net, prefix] of [
  ['::', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  SPECIAL_V6.addSubnet(net, prefix, 'ipv6')
}

/** Whether `address` (an IP address) is loopback, private, link-local or otherwise not a public unicast address. */
export function isSpecialAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 4) return SPECIAL_V4.check(address, 'ipv4')
  if (family !== 6) return true
  // IPv4-mapped and -compatible forms (`::ffff:10.0.0.1`, `::ffff:a00:1`) are refused whatever they map to.
  if (/^(?:0*:)*:?(?:0*:)*ffff:/i.test(address) || /^::ffff:/i.test(address)) return true
  return SPECIAL_V6.check(address, 'ipv6')
}

const isLoopback = (address: string): boolean =>
  isIP(address) === 4 ? address.startsWith('127.') : /^(?:0*:)*:?0*1$/.test(address) || address === '::1'

/** Why a request was not made or not finished (the message is safe to show the tenant). */
export class EgressError extends Error {
  override readonly name = 'EgressError'
}

/** A request to make: headers with lower-case names, a text body. */
export interface EgressRequest {
  url: string
  method: string
  headers: Record<string, string>
  body?: string
}

/** The answer: status, headers (lower-case names; repeated ones joined by `, `), body as UTF-8 text, final URL. */
export interface EgressResponse {
  status: number
  statusText: string
  headers: Record<string, string>
  body: string
  url: string
  redirected: boolean
}

/** Bounds of one request. */
export interface EgressLimits {
  /** Time left for the whole request, redirects included (ms). */
  timeoutMs: number
  /** Largest request body, in UTF-8 bytes. */
  maxRequestBytes: number
  /** Largest response body, in bytes. */
  maxResponseBytes: number
  /** Aborts the request. */
  signal?: AbortSignal
}

/** Default bounds: 1 MiB each way. */
export const EGRESS_MAX_BODY_BYTES = 1024 * 1024
const MAX_REDIRECTS = 5
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

/** Checks `request`'s method and headers; answers them normalized or throws `EgressError`. */
function checkRequest(request: EgressRequest, limits: EgressLimits): EgressRequest {
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

/**
 * The address to connect to for `url`: resolved once, every address checked (a special address is
 * allowed only when the listed origin names it: an IP literal, or `localhost` for loopback).
 */
async function checkedAddress(url: URL): Promise<{ address: string; family: number }> {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
  const literal = isIP(host)
  if (literal) return { address: host, family: literal }
  let addresses: { address: string; family: number }[]
  try {
    addresses = await lookup(host, { all: true, verbatim: true })
  } catch {
    throw new EgressError(`${url.origin}: the host name does not resolve`)
  }
  if (!addresses.length) throw new EgressError(`${url.origin}: the host name does not resolve`)
  for (const { address } of addresses) {
    const special = isSpecialAddress(address)
    if (!special) continue
    if (host === 'localhost' && isLoopback(address)) continue
    throw new EgressError(
      `${url.origin} resolves to a loopback, private or reserved address: refused (list the address itself to allow it)`,
    )
  }
  return addresses[0]!
}

/** One exchange, no redirect followed. */
function exchange(
  url: URL,
  target: { address: string; family: number },
  request: EgressRequest,
  limits: EgressLimits,
  signal: AbortSignal,
): Promise<{ status: number; statusText: string; headers: Record<string, string>; body: string }> {
  return new Promise((resolve, reject) => {
    const https = url.protocol === 'https:'
    const headers: Record<string, string> = { ...request.headers, host: url.host }
    if (request.body !== undefined) headers['content-length'] = String(Buffer.byteLength(request.body))
    const options = {
      host: target.address,
      family: target.family,
      port: url.port || (https ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      method: request.method,
      headers,
      agent: false as const,
      signal,
      ...(https && !isIP(url.hostname.replace(/^\[|\]$/g, '')) ? { servername: url.hostname } : {}),
    }
    const onResponse = (response: IncomingMessage) => {
      const chunks: Buffer[] = []
      let size = 0
      const declared = Number(response.headers['content-length'])
      if (Number.isFinite(declared) && declared > limits.maxResponseBytes) {
        response.destroy()
        reject(new EgressError(`response body is larger than ${limits.maxResponseBytes} bytes`))
        return
      }
      response.on('data', (chunk: Buffer) => {
        size += chunk.length
        if (size > limits.maxResponseBytes) {
          response.destroy()
          reject(new EgressError(`response body is larger than ${limits.maxResponseBytes} bytes`))
          return
        }
        chunks.push(chunk)
      })
      response.on('end', () => {
        const out: Record<string, string> = {}
        for (const [name, value] of Object.entries(response.headers)) {
          if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value
        }
        resolve({
          status: response.statusCode ?? 0,
          statusText: response.statusMessage ?? '',
          headers: out,
          body: Buffer.concat(chunks).toString('utf8'),
        })
      })
      const cutOff = () =>
        reject(
          signal.aborted && signal.reason instanceof EgressError
            ? signal.reason
            : new EgressError(`${url.origin}: the response was cut off`),
        )
      response.on('error', cutOff)
      response.on('aborted', cutOff)
    }
    let req: ReturnType<typeof httpRequest>
    try {
      req = (https ? httpsRequest : httpRequest)(options, onResponse)
    } catch {
      reject(new EgressError(`${url.origin}: the request could not be made`))
      return
    }
    req.on('error', (error: Error & { code?: string }) => {
      if (signal.aborted)
        reject(signal.reason instanceof EgressError ? signal.reason : new EgressError('aborted'))
      else reject(new EgressError(`${url.origin}: connection failed (${error.code ?? 'error'})`))
    })
    req.end(request.body)
  })
}

/**
 * Makes `request` from the host, under the allow-list and the checks above. Answers the response
 * (a redirect to a listed origin is followed, one to any other origin is refused), or rejects with
 * an `EgressError` whose message says why.
 */
export async function egressFetch(
  origins: readonly EgressOrigin[],
  request: EgressRequest,
  limits: EgressLimits,
): Promise<EgressResponse> {
  let current = checkRequest(request, limits)
  const timeout = new AbortController()
  const timer = setTimeout(
    () => timeout.abort(new EgressError(`no answer within ${Math.round(limits.timeoutMs)} ms`)),
    Math.max(0, limits.timeoutMs),
  )
  const signal = limits.signal ? AbortSignal.any([timeout.signal, limits.signal]) : timeout.signal
  try {
    for (let hop = 0; ; hop++) {
      const url = allowedUrl(origins, current.url)
      if (!url) {
        throw new EgressError(
          hop === 0
            ? `${originText(current.url)} is not on the egress allow-list`
            : `redirect to ${originText(current.url)} refused: not on the egress allow-list`,
        )
      }
      const target = await checkedAddress(url)
      if (signal.aborted)
        throw signal.reason instanceof EgressError ? signal.reason : new EgressError('aborted')
      const answer = await exchange(url, target, current, limits, signal)
      const location = answer.headers.location
      if (answer.status >= 300 && answer.status < 400 && answer.status !== 304 && location !== undefined) {
        if (hop >= MAX_REDIRECTS) throw new EgressError(`more than ${MAX_REDIRECTS} redirects`)
        let next: string
        try {
          next = new URL(location, url).href
        } catch {
          throw new EgressError('a redirect to an invalid URL')
        }
        const keepsBody =
          answer.status === 307 ||
          answer.status === 308 ||
          (answer.status !== 303 && current.method !== 'POST')
        current = keepsBody
          ? { ...current, url: next }
          : {
              url: next,
              method: current.method === 'HEAD' ? 'HEAD' : 'GET',
              headers: withoutBodyHeaders(current.headers),
            }
        if (new URL(next).origin !== url.origin) current.headers = withoutCredentials(current.headers)
        continue
      }
      return { ...answer, url: url.href, redirected: hop > 0 }
    }
  } finally {
    clearTimeout(timer)
  }
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

/**
 * The control plane's proxy routes (test mode only), for the in-process test destinations:
 *
 * - `GET /_test/proxy[?origin=]` answers what they received (the plaintext requests a processor
 *   would have seen), oldest first, as `{ origins, data: [{ origin, method, url, headers, body }] }`;
 *   `DELETE /_test/proxy` forgets it;
 * - `POST /_test/proxy/destinations` `{ origin, respond? }` routes `origin` to a destination in the
 *   process from now on: `respond` is `'echo'` (the default) or a canned answer
 *   `{ status?, headers?, body? }`; the origin goes on the egress allow-list while it is routed.
 *   201 with the destination; a known origin is replaced;
 * - `GET /_test/proxy/destinations` → `{ data: [{ origin, respond }] }`;
 * - `DELETE /_test/proxy/destinations[?origin=]` → 204, that destination (404 when not routed) or
 *   all of them removed, and off the allow-list.
 *
 * A reset goes back to the destinations given at start and forgets what they received.
 * Bad input answers a 400 problem and changes nothing.
 */
import { invalid, ServiceError } from '../../src/kernel/index.js'

/** How many destinations may be routed at once (those given at start included). */
export const MAX_TEST_DESTINATIONS = 32
/** Largest canned answer body, in bytes (a string's UTF-8, or the JSON written for any other value). */
export const MAX_CANNED_BODY_BYTES = 65_536
/** Most headers a canned answer may have. */
export const MAX_CANNED_HEADERS = 32

/** A canned answer as the route checked it. */
export interface CannedShape {
  status: number
  headers: Record<string, string>
  body?: unknown
}

/** What the control plane needs of the test destinations (`testing/destinations.ts` has this shape). */
export interface ProxyControl {
  /** The origins answered in-process, as `URL.origin` spells them. */
  origins: readonly string[]
  /** What they received, oldest first, of `origin` only when given. */
  received(origin?: string): unknown[]
  /** Forgets what was received. */
  clear(): void
  /** Routes `origin` to echo or a canned answer from now on. */
  add(origin: string, destination: 'echo' | CannedShape): void
  /** Stops routing `origin`; whether it was routed. */
  remove(origin: string): boolean
  /** The destinations routed: `{ origin, respond }`. */
  list(): unknown[]
  /** Back to the destinations given at start, with nothing received. */
  reset(): void
}

type BodyReader = () => Promise<unknown>
/** Puts the routed origins on the service's egress allow-list (the test power `allowTestEgress`). */
type Allow = (origins: readonly string[]) => void

/** The answer of a proxy control route, or null when `method path` is not one. */
export async function proxyControlRoute(
  control: ProxyControl | undefined,
  method: string,
  path: string,
  request: Request,
  body: BodyReader,
  allow: Allow,
): Promise<{ status: number; body: unknown } | null> {
  if (!control) return null
  if (path === '/_test/proxy/destinations') return destinationsRoute(control, method, request, body, allow)
  if (path !== '/_test/proxy') return null
  if (method === 'DELETE') {
    control.clear()
    return { status: 204, body: undefined }
  }
  if (method !== 'GET') return null
  const origin = new URL(request.url).searchParams.get('origin')
  try {
    const data = control.received(origin === null || origin === '' ? undefined : origin)
    return { status: 200, body: { origins: control.origins, data } }
  } catch {
    throw invalid('origin', 'not a URL origin')
  }
}

/** `/_test/proxy/destinations`: GET lists, POST adds (or replaces), DELETE removes. */
async function destinationsRoute(
  control: ProxyControl,
  method: string,
  request: Request,
  body: BodyReader,
  allow: Allow,
): Promise<{ status: number; body: unknown } | null> {
  // The allow-list changes in the same turn as the routes: no request sees one without the other.
  if (method === 'GET') return { status: 200, body: { data: control.list() } }
  if (method === 'POST') {
    const { origin, respond } = destinationInput(await body())
    if (!control.origins.includes(origin) && control.origins.length >= MAX_TEST_DESTINATIONS)
      throw invalid('origin', `at most ${MAX_TEST_DESTINATIONS} destinations are routed at once`)
    control.add(origin, respond)
    allow(control.origins)
    return { status: 201, body: { origin, respond } }
  }
  if (method === 'DELETE') {
    const given = new URL(request.url).searchParams.get('origin')
    if (given === null) {
      for (const origin of [...control.origins]) control.remove(origin)
      allow(control.origins)
      return { status: 204, body: undefined }
    }
    const origin = originOf(given, 'origin')
    if (!control.remove(origin)) throw new ServiceError('not_found', `no test destination ${origin}`)
    allow(control.origins)
    return { status: 204, body: undefined }
  }
  return null
}

/** The checked body of `POST /_test/proxy/destinations`. */
function destinationInput(value: unknown): { origin: string; respond: 'echo' | CannedShape } {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid('body', 'must be an object { origin, respond? }')
  const input = value as Record<string, unknown>
  for (const key of Object.keys(input))
    if (key !== 'origin' && key !== 'respond') throw invalid(key, 'unknown field (origin, respond)')
  const origin = originOf(input.origin, 'origin')
  if (input.respond === undefined || input.respond === 'echo') return { origin, respond: 'echo' }
  return { origin, respond: cannedOf(input.respond) }
}

/** `value` as a bare http or https origin (scheme, host and port only). */
function originOf(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 2048)
    throw invalid(field, 'must be an origin of at most 2048 characters (https://api.example.com)')
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw invalid(field, 'not a URL origin')
  }
  const bare = url.pathname === '/' && !url.search && !url.hash && !url.username && !url.password
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || !bare)
    throw invalid(field, 'must be an http or https origin (scheme, host and port only)')
  return url.origin
}

/** Headers a canned answer may not set: the exchange's own framing. */
const FRAMING = new Set([
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'trailer',
  '__proto__',
])
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/
const HEADER_VALUE = /^[\t\x20-\x7e]{0,8192}$/

/** `value` as a canned answer: `{ status?, headers?, body? }`, each checked and bounded. */
function cannedOf(value: unknown): CannedShape {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid('respond', "must be 'echo' or { status?, headers?, body? }")
  const given = value as Record<string, unknown>
  for (const key of Object.keys(given))
    if (key !== 'status' && key !== 'headers' && key !== 'body')
      throw invalid(`respond.${key}`, 'unknown field (status, headers, body)')
  const status = given.status ?? 200
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599)
    throw invalid('respond.status', 'must be a whole number from 200 to 599')
  const headers = headersOf(given.headers)
  if (given.body === undefined) return { status, headers }
  if ((status === 204 || status === 205 || status === 304) && given.body !== '')
    throw invalid('respond.body', `a ${status} answer has no body`)
  const text = typeof given.body === 'string' ? given.body : JSON.stringify(given.body)
  if (Buffer.byteLength(text, 'utf8') > MAX_CANNED_BODY_BYTES)
    throw invalid('respond.body', `is larger than ${MAX_CANNED_BODY_BYTES} bytes`)
  return { status, headers, body: given.body }
}

/** A canned answer's headers: names as tokens, values as visible text, framing ones refused. */
function headersOf(value: unknown): Record<string, string> {
  if (value === undefined) return {}
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid('respond.headers', 'must be an object of header names to text')
  const entries = Object.entries(value)
  if (entries.length > MAX_CANNED_HEADERS)
    throw invalid('respond.headers', `at most ${MAX_CANNED_HEADERS} headers`)
  const out: Record<string, string> = {}
  for (const [name, text] of entries) {
    const lower = name.toLowerCase()
    if (!TOKEN.test(name) || FRAMING.has(lower))
      throw invalid(
        'respond.headers',
        `${JSON.stringify(name.slice(0, 64))} is not a header an answer may set`,
      )
    if (typeof text !== 'string' || !HEADER_VALUE.test(text))
      throw invalid('respond.headers', `${lower}: must be visible text of at most 8192 characters`)
    out[lower] = text
  }
  return out
}

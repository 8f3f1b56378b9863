import type { Ctx, ProxyInvoked } from '../call/index.js'
import type { EgressResponse } from '../kernel/index.js'
import { EgressError, invalid, ServiceError, tooMany } from '../kernel/index.js'
import { allowedUrl } from '../reactors/index.js'
import { utf8 } from './bodies.js'

/** Largest body a proxy call sends, and largest answer it takes from its destination, in bytes (1 MiB). */
export const PROXY_MAX_BODY_BYTES = 1024 * 1024
/** How long a proxy call waits for its destination by default (the reference's 25 seconds), ms. */
export const DEFAULT_PROXY_TIMEOUT_MS = 25_000
/** Proxy calls one tenant may have in flight by default. */
export const DEFAULT_PROXY_CALLS_PER_TENANT = 64

/** What the destination answered, as the proxy answers it. */
export interface ProxyAnswer {
  /** The destination's status (or the response transform's). */
  status: number
  /** The destination's headers, lower-case names, without hop-by-hop ones. */
  headers: Record<string, string>
  /** Each `Set-Cookie` the destination answered, whole and in order (absent: none). */
  set_cookie?: string[]
  /** The body: UTF-8 text, or base64 when `body_encoding` is `base64` (bytes that are not UTF-8). */
  body: string
  body_encoding: 'utf8' | 'base64'
  /** The status the destination answered (the reference's `BT-PROXY-DESTINATION-STATUS`). */
  destination_status: number
}

/** One request to a destination, as built by the proxy (headers already filtered). */
export interface Outbound {
  url: string
  method: string
  headers: Record<string, string>
  body: Uint8Array | null
}

/** Header names a proxy never forwards: hop-by-hop ones, and the vault's own (any prefix). */
const DROPPED = new Set([
  'host',
  'connection',
  'content-length',
  'transfer-encoding',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'accept-encoding',
  'x-request-id',
])
const VAULT_HEADER =
  /^[a-z0-9]+-(api-key|proxy-url|proxy-key|encrypted|transaction-id|idempotency-key|expose-raw-proxy-response)$/
/** The reference forwards header names of letters, digits, hyphens and underscores only. */
const HEADER_NAME = /^[A-Za-z0-9_-]+$/

/**
 * The caller's headers a destination receives: lower-case, without the dropped, the vault's own,
 * and those the caller's `connection` header names (hop-by-hop by its say, as on the way back).
 */
export function forwardedHeaders(headers: Readonly<Record<string, string>>): Record<string, string> {
  const named = new Set<string>()
  for (const [raw, value] of Object.entries(headers))
    if (raw.toLowerCase() === 'connection')
      for (const n of value.split(',')) named.add(n.trim().toLowerCase())
  const out: Record<string, string> = {}
  for (const [raw, value] of Object.entries(headers)) {
    const name = raw.toLowerCase()
    if (!HEADER_NAME.test(name) || DROPPED.has(name) || name.startsWith('proxy-') || VAULT_HEADER.test(name))
      continue
    if (!named.has(name)) out[name] = value
  }
  return out
}

/** An encoded `/` or `\`, or a `..` (`.` or `%2e` each) segment with parameters (`..;x`). */
const ENCODED_CLIMB = /%2f|%5c|(^|\/)(\.|%2e)(\.|%2e);/i

/**
 * The URL a proxy call goes to: `destination` with `path` appended to its path and `query` to its
 * query (the reference: `/proxy/foo?x=1` with `https://example.com/api` goes to
 * `https://example.com/api/foo?x=1`). A destination that is not an http(s) URL, or carries
 * credentials, is a 400 naming `field`.
 */
export function destinationUrl(destination: string, path: string, query: string, field: string): string {
  let url: URL
  try {
    url = new URL(destination)
  } catch {
    throw invalid(field, 'must be an absolute http or https URL')
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password)
    throw invalid(field, 'must be an http or https URL without credentials')
  if (path !== '' && path !== '/') {
    // A separator or a dot segment a destination may decode after it normalized the path:
    // `..%2f`, `..%5c`, `..;/` would climb out of the destination's path there.
    if (ENCODED_CLIMB.test(path))
      throw invalid('path', 'must not hold encoded separators (%2F, %5C) or ..; segments')
    const base = url.pathname.replace(/\/+$/, '')
    url.pathname = `${base}/${path.replace(/^\/+/, '')}`
    // `.` and `..` segments (`%2e` too) are resolved by the URL: none may climb out of the destination's path.
    if (url.pathname !== base && !url.pathname.startsWith(`${base}/`))
      throw invalid('path', "must stay under the destination's path (no .. segments)")
  }
  const q = query.replace(/^\?/, '')
  if (q !== '') url.search = url.search ? `${url.search}&${q}` : `?${q}`
  return url.href
}

/**
 * Sends `outbound` through the service's egress client under the egress policy (`reactorEgress` /
 * `egress`): the origin on the allow-list (else 400), the body at most 1 MiB, redirects answered as
 * they are (the reference returns the destination's answer), at most `proxyTimeoutMs` (408), the
 * answer at most 1 MiB (else 502), a connection failure 502 naming why, never a stack. One place of
 * the tenant's `maxProxyCallsPerTenant` is held while it waits (429 when none is free).
 */
export async function send(ctx: Ctx, outbound: Outbound, field: string): Promise<EgressResponse> {
  if (!allowedUrl(ctx.options.reactorEgress, outbound.url))
    throw invalid(field, `${originOf(outbound.url)} is not on the egress allow-list (egress)`)
  if (outbound.body !== null && outbound.body.byteLength > PROXY_MAX_BODY_BYTES)
    throw invalid('body', `is larger than ${PROXY_MAX_BODY_BYTES} bytes`)
  const tenant = ctx.principal.tenantId
  if (!ctx.proxyGate.enter(tenant))
    throw tooMany(`the tenant has ${ctx.proxyGate.limit} proxy calls in flight`, 1)
  const bodyless = outbound.method === 'GET' || outbound.method === 'HEAD'
  const startedMs = ctx.clock.now().getTime()
  try {
    const response = await ctx.egress(
      ctx.options.reactorEgress,
      {
        url: outbound.url,
        method: outbound.method,
        headers: outbound.headers,
        ...(outbound.body === null || bodyless ? {} : { body: outbound.body }),
      },
      {
        timeoutMs: ctx.options.proxyTimeoutMs,
        maxRequestBytes: PROXY_MAX_BODY_BYTES,
        maxResponseBytes: PROXY_MAX_BODY_BYTES,
        followRedirects: false,
        ...(ctx.signal ? { signal: ctx.signal } : {}),
      },
    )
    if (ctx.invoked?.kind === 'proxy')
      ctx.invoked.destination = { status: response.status, elapsedMs: ctx.clock.now().getTime() - startedMs }
    return response
  } catch (error) {
    throw destinationFailure(error)
  } finally {
    ctx.proxyGate.leave(tenant)
  }
}

/**
 * Admits and notes a proxy's invocation: refused (429) before anything is sent when a webhook of
 * the tenant takes `proxy.invoked` and its pending deliveries are at their bound
 * (`CallbackPort.invoking`); else noted on `ctx` for its `proxy.invoked` event: `proxy` (absent
 * for the ephemeral one), the method, and the destination's origin and path, never its query.
 */
export async function proxyInvoking(
  ctx: Ctx,
  url: string,
  method: string,
  proxy?: { id: string; name: string },
) {
  const admitted = ctx.callbacks.invoking(ctx.principal.tenantId, PROXY_EVENTS)
  if (admitted) await admitted
  let bare = url
  try {
    const u = new URL(url)
    bare = `${u.origin}${u.pathname}`
  } catch {
    // Not a URL: `send` refuses it; the event names it as given, without a query.
    bare = url.split('?')[0] ?? ''
  }
  const invoked: ProxyInvoked = { kind: 'proxy', method, url: bare, startedMs: ctx.clock.now().getTime() }
  if (proxy) invoked.proxy = { id: proxy.id, name: proxy.name }
  ctx.invoked = invoked
}

const PROXY_EVENTS = ['proxy.invoked']

/** The problem a failed exchange answers: 408 past the time limit, else 502 naming why. */
function destinationFailure(error: unknown): ServiceError {
  if (error instanceof ServiceError) return error
  const message = error instanceof EgressError ? error.message : 'the request could not be made'
  const status = message.startsWith('no answer within') ? 408 : 502
  return new ServiceError('destination_failed', `proxy destination: ${message}`, { status })
}

const originOf = (url: string): string => {
  try {
    return new URL(url).origin
  } catch {
    return 'the destination'
  }
}

/**
 * Headers of one connection or of its framing (RFC 9110 §7.6.1, and `trailer`, `te`, `upgrade`):
 * never passed on from a destination's answer, whose framing is the vault's own (a `trailer` on an
 * answer written with its length is refused by Node).
 */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'upgrade',
  'te',
  'trailer',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
])

/** `headers` without the hop-by-hop ones, and without those their `connection` header names. */
export function endToEnd(
  headers: Record<string, string>,
  drop: ReadonlySet<string> = HOP_BY_HOP,
): Record<string, string> {
  const named =
    headers['connection']
      ?.toLowerCase()
      .split(',')
      .map((n) => n.trim()) ?? []
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers))
    if (!drop.has(name) && !named.includes(name)) out[name] = value
  return out
}

/** The destination's answer as the proxy answers it: its status, headers (hop-by-hop dropped) and body. */
export function answerOf(response: EgressResponse): ProxyAnswer {
  const headers = endToEnd(response.headers)
  const bytes = response.bytes ?? new TextEncoder().encode(response.body)
  const text = utf8(bytes)
  return {
    status: response.status,
    headers,
    ...(response.setCookie?.length ? { set_cookie: [...response.setCookie] } : {}),
    body: text ?? Buffer.from(bytes).toString('base64'),
    body_encoding: text === null ? 'base64' : 'utf8',
    destination_status: response.status,
  }
}

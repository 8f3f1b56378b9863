import * as v from 'valibot'
import type { Ctx, Principal } from '../call/index.js'
import { forbidden, invalid, parse, ServiceError } from '../kernel/index.js'
import { detokenizedBody } from './bodies.js'
import { encryptedHeaderValue, MAX_ENCRYPTED_HEADER_CHARS } from './encrypted-header.js'
import {
  answerOf,
  destinationUrl,
  forwardedHeaders,
  PROXY_MAX_BODY_BYTES,
  type ProxyAnswer,
  proxyInvoking,
  send,
} from './forward.js'
import { preconfiguredCall } from './preconfigured.js'
import { parseProxyKey, proxyByKey } from './proxies.js'

const encoder = new TextEncoder()

/** The methods the reference's proxy takes. */
export const PROXY_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const

/** A proxy call as the in-process client takes it (the HTTP adapter builds it from the request). */
export const proxyCallInput = v.strictObject({
  method: v.pipe(
    v.string(),
    v.toUpperCase(),
    v.picklist(PROXY_METHODS, `must be one of ${PROXY_METHODS.join(', ')}`),
  ),
  /** The destination (`BT-PROXY-URL`); absent when `proxy_key` names a pre-configured proxy. */
  url: v.optional(v.pipe(v.string(), v.maxLength(2000, 'must be at most 2000 characters'))),
  /** A pre-configured proxy's key (`BT-PROXY-KEY`): its destination is used instead of `url`. */
  proxy_key: v.optional(v.pipe(v.string(), v.maxLength(1000, 'must be at most 1000 characters'))),
  /** The path after `/proxy`, appended to the destination's. */
  path: v.optional(v.pipe(v.string(), v.maxLength(2000, 'must be at most 2000 characters')), ''),
  /** The query string, without `?`, appended to the destination's. */
  query: v.optional(v.pipe(v.string(), v.maxLength(8000, 'must be at most 8000 characters')), ''),
  headers: v.optional(v.record(v.string(), v.string()), {}),
  /** The `BT-ENCRYPTED` header: base64 of encrypted token requests (see `encrypted-header.ts`). */
  encrypted: v.optional(
    v.pipe(
      v.string(),
      v.maxLength(MAX_ENCRYPTED_HEADER_CHARS, `must be at most ${MAX_ENCRYPTED_HEADER_CHARS} characters`),
    ),
  ),
  body: v.optional(v.nullable(v.union([v.string(), v.instance(Uint8Array)])), null),
})

/** A proxy call (see `proxyCallInput`). */
export type ProxyCall = v.InferInput<typeof proxyCallInput>
export type ParsedProxyCall = v.InferOutput<typeof proxyCallInput>

/**
 * `input` parsed as a proxy call. A body of bytes is set aside while the rest is parsed: `parse`
 * looks for bad text in every value of its input, and would walk a `Uint8Array` as an object, one
 * key per byte (most of a proxy call's time before). Bytes hold no text to refuse.
 */
export function parseProxyCall(input: unknown): ParsedProxyCall {
  const body = (input as { body?: unknown } | null)?.body
  if (!(body instanceof Uint8Array) || typeof input !== 'object') return parse(proxyCallInput, input)
  const { body: _bytes, ...rest } = input as Record<string, unknown>
  return { ...parse(proxyCallInput, rest), body: body as Uint8Array<ArrayBuffer> }
}

/** Whether the caller holds `token:use` at all: the reference requires it to use the proxy. */
export function mayUseTokens(principal: Principal): boolean {
  if (principal.rules?.length) return principal.rules.some((r) => r.permissions.includes('token:use'))
  return principal.permissions.includes('token:use')
}

/** The call's body as bytes (null when none), at most 1 MiB (else 400 naming the limit). */
export function bodyBytes(call: ParsedProxyCall): Uint8Array | null {
  const body = call.body
  if (body === null) return null
  const bytes = typeof body === 'string' ? encoder.encode(body) : body
  if (bytes.byteLength > PROXY_MAX_BODY_BYTES)
    throw invalid('body', `is larger than ${PROXY_MAX_BODY_BYTES} bytes`)
  return bytes
}

/**
 * The ephemeral proxy (`/proxy` with `BT-PROXY-URL`): the caller's request, its body's
 * detokenization expressions replaced under its `token:use` access, sent to `url` + `path` +
 * `query`, and the destination's answer as it is. Needs `token:use` even with no expression. With
 * `proxy_key`, the pre-configured proxy it names is called instead (see `preconfiguredCall`).
 */
export async function ephemeralCall(ctx: Ctx, call: ParsedProxyCall): Promise<ProxyAnswer> {
  if (!mayUseTokens(ctx.principal)) throw forbidden('the proxy needs the token:use permission')
  const given = bodyBytes(call)
  const headers = forwardedHeaders(call.headers)
  const encrypted = call.encrypted === undefined ? undefined : await encryptedHeaderValue(ctx, call.encrypted)
  if (call.proxy_key !== undefined && call.proxy_key !== '') {
    const proxy = await proxyByKey(ctx, call.proxy_key)
    const { method, path, query } = call
    return preconfiguredCall(ctx, proxy, {
      method,
      path,
      query,
      headers,
      body: given,
      detokenize: true,
      ...(encrypted === undefined ? {} : { encrypted }),
    })
  }
  if (call.url === undefined || call.url === '')
    throw invalid('BT-PROXY-URL', 'is required: the destination of the proxy request')
  const url = destinationUrl(call.url, call.path, call.query, 'BT-PROXY-URL')
  await proxyInvoking(ctx, url, call.method)
  const body = given === null ? null : await detokenizedBody(ctx, given, headers['content-type'], encrypted)
  const response = await send(ctx, { url, method: call.method, headers, body }, 'BT-PROXY-URL')
  return answerOf(response)
}

const keyRequired = () => new ServiceError('unauthenticated', 'an API key is required')

/** The principal a call without an API key runs as: in the key's tenant, holding nothing. */
const nobodyIn = (named: { tenantId: string; id: string }): Principal => ({
  tenantId: named.tenantId,
  id: named.id,
  kind: 'application',
  type: 'public',
  permissions: [],
})

/**
 * The tenant of the pre-configured proxy `proxyKey` names when it takes calls without an API key
 * (`require_auth: false`, the key its own); null for any other key. What the HTTP adapter asks
 * before it reads such a call's body, and admits the call under.
 */
export async function anonymousTenant(
  contextOf: (principal: Principal) => Ctx,
  proxyKey: string,
): Promise<string | null> {
  const named = parseProxyKey(proxyKey)
  if (!named) return null
  const ctx = contextOf(nobodyIn(named))
  const proxy = await proxyByKey(ctx, proxyKey).catch(() => null)
  return proxy && !proxy.require_auth ? named.tenantId : null
}

/**
 * A call without an API key (the inbound case): only a pre-configured proxy with `require_auth:
 * false` takes one, named by `proxy_key`; anything else answers 401, as a call without a key does.
 * `found` is given the tenant and the proxy once the key proved to be the proxy's (a forged key
 * leaves it empty), for the caller's audit entry.
 * It runs as no one (`contextOf` makes the call's context for a principal holding nothing): its
 * body's expressions are not replaced, and only the transforms' `bt` (the proxy's `application`)
 * reaches tokens.
 */
export async function anonymousCall(
  contextOf: (principal: Principal) => Ctx,
  input: unknown,
  found: { tenantId?: string; proxyId?: string } = {},
): Promise<ProxyAnswer> {
  const call = parseProxyCall(input)
  const named = call.proxy_key ? parseProxyKey(call.proxy_key) : null
  if (!named || !call.proxy_key) throw keyRequired()
  const ctx = contextOf(nobodyIn(named))
  const proxy = await proxyByKey(ctx, call.proxy_key).catch(() => null)
  if (!proxy) throw keyRequired()
  // The key is the proxy's own (its MAC checked): the call is told to the tenant's audit log.
  found.tenantId = named.tenantId
  found.proxyId = proxy.id
  if (proxy.require_auth) throw keyRequired()
  const { method, path, query } = call
  const headers = forwardedHeaders(call.headers)
  return preconfiguredCall(ctx, proxy, {
    method,
    path,
    query,
    headers,
    body: bodyBytes(call),
    detokenize: false,
  })
}

/** The proxy operations of a client: `invoke` one call (ephemeral, or a pre-configured proxy's by `proxy_key`). */
export function proxyOperations(ctx: Ctx) {
  return {
    /** Sends one request through the proxy and answers the destination's answer (see `ephemeralCall`). */
    async invoke(input: unknown): Promise<ProxyAnswer> {
      return ephemeralCall(ctx, parseProxyCall(input))
    },
  }
}

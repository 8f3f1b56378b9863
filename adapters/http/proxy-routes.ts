import { ServiceError } from '../../src/kernel/index.js'
import { type ProxyAnswer, proxyInput, proxyListInput, proxyPatchInput } from '../../src/proxy/index.js'
import type { Client, Service } from '../../src/service/index.js'
import { type Incoming, type Outgoing, TOO_LARGE, UNREADABLE } from './exchange.js'
import { HttpProblem, problemFor } from './problem.js'
import type { RouteDoc } from './route-types.js'

/**
 * The proxy's routes, `/proxy` and `/proxy/<path>` (GET, POST, PUT, PATCH, DELETE): headers, query
 * and the raw body of any content type, bounded by the handler's `maxBodyBytes`, are handed to
 * `client.proxy.invoke`; the destination's answer (status, headers, body bytes) comes back as it
 * is, with `<prefix>-PROXY-DESTINATION-STATUS`. A failure of the vault (not of the destination) is
 * the reference's `{ "proxy_error": <problem> }` with the problem's status.
 */

/** What the proxy routes need of the handler that serves them. */
export interface ProxyRouteDeps {
  service: Service
  /** Header prefixes, upper case (`SVC`, `BT`). */
  prefixes: readonly string[]
  maxBodyBytes: number
  /** The first of `names` (lower case) the request carries. */
  first(incoming: Incoming, names: readonly string[]): string | null
  /** Holds the caller's tenant's admission turn around `run` (the handler's per-tenant bounds). */
  admitted<T>(apiKey: string, bytes: number, run: () => Promise<T>): Promise<T>
  /** The same under a tenant known without a key (a keyless call's proxy's). */
  admittedUnder<T>(tenantId: string, bytes: number, run: () => Promise<T>): Promise<T>
  /**
   * The kept client of `apiKey`, viewed with this request's id (the audit entries' `request_id`)
   * and its idempotency key when given.
   */
  clientFor(
    apiKey: string,
    idempotencyKey: string | null,
    requestId: string,
    signal: AbortSignal | undefined,
  ): Client
}

const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE'])
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
const names = (prefixes: readonly string[], suffix: string) =>
  prefixes.map((p) => `${p}-${suffix}`.toLowerCase())

/** Whether `path` is the proxy's (`/proxy`, `/proxy/...`). */
export const isProxyPath = (path: string): boolean => path === '/proxy' || path.startsWith('/proxy/')

/** The proxy route handler: one exchange of `/proxy[/<path>]`, under the request's id. */
export function proxyRoute(deps: ProxyRouteDeps) {
  const { prefixes } = deps
  const keyHeader = names(prefixes, 'api-key')
  const urlHeader = names(prefixes, 'proxy-url')
  const proxyKeyHeader = names(prefixes, 'proxy-key')
  const encryptedHeader = names(prefixes, 'encrypted')
  const idempotencyHeader = names(prefixes, 'idempotency-key')
  return async (
    incoming: Incoming,
    method: string,
    path: string,
    search: string,
    requestId: string,
  ): Promise<Outgoing> => {
    try {
      if (!METHODS.has(method))
        throw new HttpProblem(405, `${method} is not allowed here; allowed: DELETE, GET, PATCH, POST, PUT.`, {
          allow: 'DELETE, GET, PATCH, POST, PUT',
        })
      const apiKey = deps.first(incoming, keyHeader) ?? ''
      const declared = Number(incoming.header('content-length') ?? Number.NaN)
      if (declared > deps.maxBodyBytes) throw tooLarge(deps.maxBodyBytes)
      // A call that sends no body counts none: counted as 1 MiB, three GETs to a slow destination
      // held their tenant's 2 MiB, and every other request of the tenant waited behind them.
      const bytes =
        !BODY_METHODS.has(method) || incoming.hasBody?.() === false
          ? 0
          : Number.isSafeInteger(declared) && declared >= 0
            ? declared
            : deps.maxBodyBytes
      const { proxyKey, query } = keyFromQuery(search)
      const key = deps.first(incoming, proxyKeyHeader) ?? proxyKey
      const url = deps.first(incoming, urlHeader)
      const encrypted = deps.first(incoming, encryptedHeader)
      const callOf = async (withBody = true) => ({
        method,
        ...(url === null ? {} : { url }),
        ...(key === null ? {} : { proxy_key: key }),
        ...(encrypted === null ? {} : { encrypted }),
        path: path.slice('/proxy'.length),
        query,
        headers: incoming.headers?.() ?? {},
        body: withBody && BODY_METHODS.has(method) ? await readRaw(incoming, deps.maxBodyBytes) : null,
      })
      // Without an API key, only a pre-configured proxy with `require_auth: false` answers (the
      // inbound case): its key is checked before the body is read, and the call is admitted under
      // the proxy's tenant as a call with a key is under the key's.
      if (apiKey === '' && key !== null) {
        const tenant = await deps.service.proxy.tenantOfKey(key)
        // Refused without its body: the core answers 401 (and logs it when the key is a proxy's).
        if (tenant === null) {
          await deps.service.proxy.invoke(await callOf(false), { requestId })
          throw new ServiceError('unauthenticated', 'an API key is required')
        }
        return await deps.admittedUnder(tenant, bytes, async () => {
          leftBeforeItsTurn(incoming)
          const signal = incoming.signal?.()
          const options = signal ? { requestId, signal } : { requestId }
          return outgoingOf(await deps.service.proxy.invoke(await callOf(), options), prefixes)
        })
      }
      return await deps.admitted(apiKey, bytes, async () => {
        leftBeforeItsTurn(incoming)
        const idempotencyKey =
          method === 'GET' || method === 'DELETE' ? null : deps.first(incoming, idempotencyHeader)
        const client = deps.clientFor(apiKey, idempotencyKey, requestId, incoming.signal?.())
        return outgoingOf(await client.proxy.invoke(await callOf()), prefixes)
      })
    } catch (error) {
      return proxyError(error)
    }
  }
}

/** The query without its `bt-proxy-key` parameter (the reference's other place for the key), and that key. */
function keyFromQuery(search: string): { proxyKey: string | null; query: string } {
  if (!/(^|&)(bt|svc)-proxy-key=/i.test(search)) return { proxyKey: null, query: search }
  const params = new URLSearchParams(search)
  let proxyKey: string | null = null
  for (const name of [...params.keys()]) {
    if (/^(bt|svc)-proxy-key$/i.test(name)) {
      proxyKey ??= params.get(name)
      params.delete(name)
    }
  }
  return { proxyKey, query: params.toString() }
}

/**
 * Throws when the call's client went away while the call waited for its tenant's turn: nothing is
 * sent. 96 abandoned calls were sent two at a time for ten minutes, each holding its tenant's place.
 */
function leftBeforeItsTurn(incoming: Incoming): void {
  if (incoming.gone?.() === true)
    throw new HttpProblem(400, 'The client went away before the call was sent; nothing was sent.')
}

/** The raw body (null when none), at most `maxBytes` (413 past it). */
async function readRaw(incoming: Incoming, maxBytes: number): Promise<Uint8Array | null> {
  const read = await incoming.readBody(maxBytes)
  if (read === TOO_LARGE) throw tooLarge(maxBytes)
  if (read === UNREADABLE) throw new HttpProblem(400, 'The request body could not be read.')
  return read
}

const tooLarge = (maxBytes: number) =>
  new HttpProblem(413, `The request body is larger than ${maxBytes} bytes.`, {}, { body: ['is too large'] })

/** The destination's answer as the exchange's: its status, headers and body bytes. */
function outgoingOf(answer: ProxyAnswer, prefixes: readonly string[]): Outgoing {
  const headers: Record<string, string> = {}
  // Which origins may read an answer is the vault's to say (its `cors` option), never the
  // destination's: its `Access-Control-*` headers granted any origin, credentials included. And
  // as every answer of the vault, a proxied one is not stored by caches on the way.
  for (const [name, value] of Object.entries(answer.headers))
    if (!name.toLowerCase().startsWith('access-control-')) headers[name] = value
  headers['cache-control'] = 'no-store'
  // A destination's page never runs as the vault's origin (where the console keeps its token): a
  // browser opening it gives it an origin of its own. Policies add up: the destination's still hold.
  const policy = headers['content-security-policy']
  headers['content-security-policy'] = policy ? `${policy}, sandbox` : 'sandbox'
  for (const prefix of prefixes)
    headers[`${prefix.toLowerCase()}-proxy-destination-status`] = String(answer.destination_status)
  const body =
    answer.body_encoding === 'base64'
      ? new Uint8Array(Buffer.from(answer.body, 'base64'))
      : new TextEncoder().encode(answer.body)
  return {
    status: answer.status,
    headers,
    ...(answer.set_cookie ? { cookies: answer.set_cookie } : {}),
    body: answer.status === 204 || answer.status === 304 ? null : body,
  }
}

/**
 * A failure of the proxy itself, as the reference answers it: `{ "proxy_error": <problem> }`
 * with the problem's status and headers. Anything unexpected is rethrown (the handler logs it, 500).
 */
function proxyError(error: unknown): Outgoing {
  const known = problemFor(error)
  if (!known) throw error
  const problem = JSON.parse(typeof known.body === 'string' ? known.body : '{}') as Record<string, unknown>
  const headers = { ...known.headers, 'content-type': 'application/json' }
  return { status: known.status, headers, body: JSON.stringify({ proxy_error: problem }) }
}

/** The OpenAPI documentation of the `/proxies` routes (the `/proxy` route itself is not JSON and not listed). */
export const PROXY_ROUTE_DOCS: Record<string, RouteDoc> = {
  'POST /proxies': {
    tag: 'Proxies',
    summary:
      'Create a pre-configured proxy (`proxy:create`); its configuration is sealed at rest; at most 100 per tenant',
    body: proxyInput,
    response: {},
  },
  'GET /proxies': {
    tag: 'Proxies',
    summary: "List the tenant's proxies (`proxy:read`)",
    query: proxyListInput,
    response: {},
  },
  'GET /proxies/:id': { tag: 'Proxies', summary: 'Get a proxy with its key (`proxy:read`)', response: {} },
  'PUT /proxies/:id': {
    tag: 'Proxies',
    summary: 'Replace a proxy (`proxy:update`)',
    body: proxyInput,
    response: {},
  },
  'PATCH /proxies/:id': {
    operationId: 'patchProxy',
    tag: 'Proxies',
    summary: 'Merge-patch a proxy (`proxy:update`); `null` clears an optional field',
    body: proxyPatchInput,
    response: {},
  },
  'DELETE /proxies/:id': { tag: 'Proxies', summary: 'Delete a proxy (`proxy:delete`)' },
}

import {
  abortReason,
  type EgressAnswer,
  type EgressClient,
  EgressError,
  type EgressLimits,
  type EgressRequest,
  egressVia,
} from '../../src/reactors/index.js'

/** Answers the requests to one origin in-process, as a fetch handler does. */
export type EgressRoute = (request: Request) => Response | Promise<Response>

/**
 * An `EgressClient` that reaches no network: each request to an origin of `routes`
 * (`{ 'https://api.example.com': (request) => Response.json({ ok: true }) }`) is answered by its
 * handler, in this process. The egress policy still applies, as with the node client: the origin
 * must be on the service's allow-list (`reactorEgress`), the method, headers and sizes are checked,
 * redirects are followed to listed origins only, time and `signal` bound the request. A listed
 * origin without a route fails as a refused connection; a handler that throws, as a failed one.
 * For tests: `createService({ ..., reactorEgress: [origin], egressClient: routedEgress({ [origin]: handler }) })`.
 */
export function routedEgress(routes: Readonly<Record<string, EgressRoute>>): EgressClient {
  const byOrigin = new Map<string, EgressRoute>()
  for (const [origin, route] of Object.entries(routes)) byOrigin.set(new URL(origin).origin, route)
  return egressVia((url, request, limits, signal) => {
    const route = byOrigin.get(url.origin)
    if (!route) return Promise.reject(new EgressError(`${url.origin}: connection failed (ECONNREFUSED)`))
    return routeExchange(route, url, request, limits, signal)
  })
}

/** One exchange with `route`, bounded by `signal` and the response size. */
async function routeExchange(
  route: EgressRoute,
  url: URL,
  request: EgressRequest,
  limits: EgressLimits,
  signal: AbortSignal,
): Promise<EgressAnswer> {
  const init: RequestInit = { method: request.method, headers: request.headers, signal }
  if (request.body !== undefined) init.body = request.body as NonNullable<RequestInit['body']>
  const aborted = new Promise<never>((_, reject) => {
    if (signal.aborted) reject(abortReason(signal))
    signal.addEventListener('abort', () => reject(abortReason(signal)), { once: true })
  })
  aborted.catch(() => {})
  let response: Response
  try {
    response = await Promise.race([Promise.resolve().then(() => route(new Request(url, init))), aborted])
  } catch (error) {
    if (signal.aborted) throw abortReason(signal)
    throw error instanceof EgressError ? error : new EgressError(`${url.origin}: connection failed (handler)`)
  }
  if (limits.statusOnly) await response.body?.cancel()
  const body = limits.statusOnly
    ? new Uint8Array(0)
    : new Uint8Array(await Promise.race([response.arrayBuffer(), aborted]))
  if (body.byteLength > limits.maxResponseBytes)
    throw new EgressError(`response body is larger than ${limits.maxResponseBytes} bytes`)
  const headers: Record<string, string> = {}
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') headers[name] = value
  })
  const setCookie = response.headers.getSetCookie()
  return {
    status: response.status,
    statusText: response.statusText,
    headers,
    ...(setCookie.length ? { setCookie } : {}),
    body: new TextDecoder().decode(body),
    bytes: body,
  }
}

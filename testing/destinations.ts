import { type EgressRoute, routedEgress } from '../adapters/egress/index.js'
import type { EgressClient } from '../src/kernel/index.js'

/** A destination in the process: answers a request the vault sends out (proxy calls, formula `fetch`). */
export type Destination = EgressRoute

/** What a destination received: the plaintext request a real processor would have seen. */
export interface ReceivedRequest {
  /** The destination's origin (`https://api.stripe.com`). */
  origin: string
  method: string
  /** The whole URL, path and query included. */
  url: string
  /** Headers, lower-case names. */
  headers: Record<string, string>
  /** The body as UTF-8 text (`''` when none). */
  body: string
}

/**
 * A destination's canned answer: the same `status` (default 200), `headers` and `body` for every
 * request. A string body goes as it is; any other JSON value as JSON, with
 * `content-type: application/json` unless `headers` names one.
 */
export interface CannedAnswer {
  status?: number
  headers?: Record<string, string>
  body?: unknown
}

/** How a destination answers, as `Destinations.list()` shows it: echo, a canned answer, or a handler of the test. */
export type DestinationShown = { origin: string } & (
  | { respond: 'echo' }
  | { respond: 'handler' }
  | { respond: CannedAnswer }
)

/** How many received requests are kept (the oldest go first). */
export const RECEIVED_KEPT = 1000

/** In-process destinations and what they received: a test's stand-in for the network. */
export interface Destinations {
  /** The egress client that answers the listed origins in-process (nothing reaches the network). */
  client: EgressClient
  /** The origins routed, as `URL.origin` spells them. */
  origins: string[]
  /**
   * Routes `origin` to `destination` from now on, replacing its earlier one (the CLI's
   * `POST /_test/proxy/destinations` registers them this way).
   */
  add(origin: string, destination: Destination | 'echo' | CannedAnswer): void
  /** Stops routing `origin` (what it received stays); whether it was routed. */
  remove(origin: string): boolean
  /** The destinations routed, in the order they were added. */
  list(): DestinationShown[]
  /** What the destinations received, oldest first (at most `RECEIVED_KEPT`); only in memory. */
  received(origin?: string): ReceivedRequest[]
  /** Forgets what was received (a vault's reset does). */
  clear(): void
  /** Back to the destinations given when made, with nothing received (the CLI's reset does). */
  reset(): void
}

/**
 * A destination that answers what it received, as JSON: `{ method, path, query, headers, body }`
 * (body as text, or as the parsed JSON when it is JSON). For tests and `--test-destination ORIGIN=echo`.
 */
export const echoDestination: Destination = async (request) => {
  const url = new URL(request.url)
  const text = await request.text()
  let body: unknown = text
  try {
    body = text === '' ? null : JSON.parse(text)
  } catch {}
  const headers: Record<string, string> = {}
  request.headers.forEach((value, name) => {
    headers[name] = value
  })
  return Response.json({ method: request.method, path: url.pathname, query: url.search, headers, body })
}

/** A destination answering `answer` to every request (see `CannedAnswer`). */
export function cannedDestination(answer: CannedAnswer): Destination {
  const headers = new Headers(answer.headers ?? {})
  let body: string | null = null
  if (typeof answer.body === 'string') body = answer.body
  else if (answer.body !== undefined) {
    body = JSON.stringify(answer.body)
    if (!headers.has('content-type')) headers.set('content-type', 'application/json')
  }
  return async () => new Response(body, { status: answer.status ?? 200, headers })
}

/**
 * Destinations for tests: each origin of `given` answered by its handler in this process, each
 * request kept (plaintext, in memory only) for the test to assert on. The service still applies its
 * egress policy: give `origins` as its `egress` list.
 */
export function destinations(
  given: Readonly<Record<string, Destination | 'echo' | CannedAnswer>> = {},
): Destinations {
  const routes = new Map<string, Destination>()
  const shown = new Map<string, DestinationShown>()
  const kept: ReceivedRequest[] = []
  let client = routedEgress({})
  const rebuild = () => {
    client = routedEgress(Object.fromEntries(routes))
  }
  const recording =
    (origin: string, destination: Destination): Destination =>
    async (request) => {
      const headers: Record<string, string> = {}
      request.headers.forEach((value, name) => {
        headers[name] = value
      })
      const body = await request.clone().text()
      kept.push({ origin, method: request.method, url: request.url, headers, body })
      if (kept.length > RECEIVED_KEPT) kept.shift()
      return destination(request)
    }
  const out: Destinations = {
    client: (origins, request, limits) => client(origins, request, limits),
    origins: [],
    add(origin, destination) {
      const key = new URL(origin).origin
      const handler =
        destination === 'echo'
          ? echoDestination
          : typeof destination === 'function'
            ? destination
            : cannedDestination(destination)
      routes.set(key, recording(key, handler))
      shown.set(key, {
        origin: key,
        respond:
          destination === 'echo'
            ? 'echo'
            : typeof destination === 'function'
              ? 'handler'
              : structuredClone(destination),
      } as DestinationShown)
      if (!out.origins.includes(key)) out.origins.push(key)
      rebuild()
    },
    remove(origin) {
      const key = new URL(origin).origin
      if (!routes.delete(key)) return false
      shown.delete(key)
      out.origins.splice(out.origins.indexOf(key), 1)
      rebuild()
      return true
    },
    list: () => [...shown.values()].map((d) => structuredClone(d)),
    received: (origin) =>
      kept.filter((r) => origin === undefined || r.origin === new URL(origin).origin).map((r) => ({ ...r })),
    clear: () => {
      kept.length = 0
    },
    reset() {
      kept.length = 0
      for (const origin of [...out.origins]) out.remove(origin)
      for (const [origin, destination] of Object.entries(given)) out.add(origin, destination)
    },
  }
  for (const [origin, destination] of Object.entries(given)) out.add(origin, destination)
  return out
}

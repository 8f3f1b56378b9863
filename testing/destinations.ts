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

/** How many received requests are kept (the oldest go first). */
export const RECEIVED_KEPT = 1000

/** In-process destinations and what they received: a test's stand-in for the network. */
export interface Destinations {
  /** The egress client that answers the listed origins in-process (nothing reaches the network). */
  client: EgressClient
  /** The origins routed, as `URL.origin` spells them. */
  origins: string[]
  /** Routes `origin` to `destination` from now on (the CLI's control plane registers them this way). */
  add(origin: string, destination: Destination | 'echo'): void
  /** What the destinations received, oldest first (at most `RECEIVED_KEPT`); only in memory. */
  received(origin?: string): ReceivedRequest[]
  /** Forgets what was received (a vault's reset does). */
  clear(): void
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

/**
 * Destinations for tests: each origin of `given` answered by its handler in this process, each
 * request kept (plaintext, in memory only) for the test to assert on. The service still applies its
 * egress policy: give `origins` as its `egress` list.
 */
export function destinations(given: Readonly<Record<string, Destination | 'echo'>> = {}): Destinations {
  const routes = new Map<string, Destination>()
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
      routes.set(key, recording(key, destination === 'echo' ? echoDestination : destination))
      if (!out.origins.includes(key)) out.origins.push(key)
      rebuild()
    },
    received: (origin) =>
      kept.filter((r) => origin === undefined || r.origin === new URL(origin).origin).map((r) => ({ ...r })),
    clear: () => {
      kept.length = 0
    },
  }
  for (const [origin, destination] of Object.entries(given)) out.add(origin, destination)
  return out
}

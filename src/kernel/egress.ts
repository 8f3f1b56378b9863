/**
 * The egress port: the core makes no network request itself. Outbound HTTP on behalf of tenants (a
 * formula's `fetch`, an asynchronous react's callback) goes through an `EgressClient` the
 * composition root gives the service: `entry/index.ts` wires the node client of `adapters/egress`
 * (loaded on first use), and a test may give `routedEgress(...)` to answer in-process. The policy
 * every client applies (the allow-list, the request checks, the sizes) is in `src/reactors/egress.ts`.
 */

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

/** Why a request was not made or not finished (the message is safe to show the tenant). */
export class EgressError extends Error {
  override readonly name = 'EgressError'
}

/**
 * Makes `request` to an origin of `origins` (the allow-list, as `URL.origin` spells them) within
 * `limits`. Answers the response, or rejects with an `EgressError` whose message says why (any
 * other rejection is shown to the tenant as "the request could not be made"). Safe to call
 * concurrently.
 */
export type EgressClient = (
  origins: readonly string[],
  request: EgressRequest,
  limits: EgressLimits,
) => Promise<EgressResponse>

/**
 * A client that loads the real one on first use (the composition root's default: a service that
 * never reaches the network never loads `node:http`). `load` is called at most once (again only
 * after a failed load).
 */
export function lazyEgress(load: () => Promise<EgressClient>): EgressClient {
  let loading: Promise<EgressClient> | undefined
  return async (origins, request, limits) => {
    loading ??= load().catch((error: unknown) => {
      loading = undefined
      throw error
    })
    return (await loading)(origins, request, limits)
  }
}

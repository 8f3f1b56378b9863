/**
 * The egress port: the core makes no network request itself. Outbound HTTP on behalf of tenants (a
 * formula's `fetch`, an asynchronous react's callback) goes through an `EgressClient` the
 * composition root gives the service: `entry/index.ts` wires the node client of `adapters/egress`
 * (loaded on first use), and a test may give `routedEgress(...)` to answer in-process. The policy
 * every client applies (the allow-list, the request checks, the sizes) is in `src/reactors/egress.ts`.
 */

/** A request to make: headers with lower-case names, a body as text or as raw bytes (the proxy's). */
export interface EgressRequest {
  url: string
  method: string
  headers: Record<string, string>
  body?: string | Uint8Array
}

/**
 * The answer: status, headers (lower-case names; repeated ones joined by `, `, but `set-cookie`),
 * body as UTF-8 text, final URL.
 */
export interface EgressResponse {
  status: number
  statusText: string
  headers: Record<string, string>
  /**
   * Each `Set-Cookie` the destination answered, whole and in order (not in `headers`): cookies can't
   * be joined into one header, since an `Expires` date holds a comma.
   */
  setCookie?: string[]
  body: string
  /** The body as received, byte for byte (the proxy answers these; `body` is their UTF-8 text). */
  bytes?: Uint8Array
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
  /**
   * Only the status and headers are wanted (a webhook's receiver): the body is not read, whatever
   * its size; the answer's `body` is empty. A 2xx with a body past `maxResponseBytes` was a failure.
   */
  statusOnly?: boolean
  /** Aborts the request. */
  signal?: AbortSignal
  /** Whether redirects to listed origins are followed (formula `fetch`), or answered as they are (the proxy). @default true */
  followRedirects?: boolean
}

/** Default bounds of a request's body and its answer's: 1 MiB each way. */
export const EGRESS_MAX_BODY_BYTES = 1024 * 1024

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

/**
 * Counts one kind of call in flight per tenant, for a bound per tenant (the proxy's calls): `enter`
 * answers false when the tenant already has `limit` in flight; each `enter` that answered true is
 * followed by one `leave`. A service holds one (not module state: two services count apart).
 */
export class TenantGate {
  private readonly inFlight = new Map<string, number>()
  constructor(readonly limit: number) {}

  /** Takes a place for `tenantId`, or answers false when it has `limit` in flight. */
  enter(tenantId: string): boolean {
    const n = this.inFlight.get(tenantId) ?? 0
    if (n >= this.limit) return false
    this.inFlight.set(tenantId, n + 1)
    return true
  }

  /** Gives back a place taken by `enter`. */
  leave(tenantId: string): void {
    const n = (this.inFlight.get(tenantId) ?? 1) - 1
    if (n <= 0) this.inFlight.delete(tenantId)
    else this.inFlight.set(tenantId, n)
  }
}

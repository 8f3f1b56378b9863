/**
 * The control plane's proxy route (test mode only): `GET /_test/proxy[?origin=]` answers what the
 * in-process test destinations received — the plaintext requests a processor would have seen —
 * oldest first, as `{ data: [{ origin, method, url, headers, body }] }`. A reset clears it.
 */

/** What the control plane needs of the test destinations (`testing/destinations.ts` has this shape). */
export interface ProxyControl {
  /** The origins answered in-process (`--test-destination ORIGIN=echo`). */
  origins: readonly string[]
  /** What they received, oldest first, of `origin` only when given. */
  received(origin?: string): unknown[]
  /** Forgets what was received. */
  clear(): void
}

/** The answer of a proxy control route, or null when `method path` is not one. */
export function proxyControlRoute(
  control: ProxyControl | undefined,
  method: string,
  path: string,
  request: Request,
): { status: number; body: unknown } | null {
  if (path !== '/_test/proxy' || !control) return null
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
    return {
      status: 400,
      body: { type: 'about:blank', title: 'Bad Request', status: 400, detail: 'origin: not a URL origin' },
    }
  }
}

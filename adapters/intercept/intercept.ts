import { ClientRequestInterceptor } from '@mswjs/interceptors/ClientRequest'
import { FetchInterceptor } from '@mswjs/interceptors/fetch'

/** A WHATWG fetch handler: what `createHttpHandler` of `tokenvault/adapters/http` makes. */
export type InterceptedHandler = (request: Request) => Promise<Response>

/**
 * The host names Basis Theory's SDKs call: production (`@basis-theory/node-sdk`'s `Default`, `Us`
 * and `Eu` environments, both basis-theory-js generations) and the test tenants' host (node-sdk's
 * `Test` environment).
 */
export const BASIS_THEORY_HOSTS: readonly string[] = ['api.basistheory.com', 'api.test.basistheory.com']

/**
 * Where the realm records the hosts of the interception installed in it. `@mswjs/interceptors`
 * patches `fetch` and `http` once per realm and shares the patch, so a second interception would
 * never answer and closing either would remove both: `interceptHosts` refuses a second one. On
 * `globalThis` under a registered symbol (as the library keeps its own patch) so that the ESM and
 * the CommonJS copy of this module, both loaded in one process, see the same interception.
 */
const ACTIVE = Symbol.for('tokenvault.intercept.active')

/** Options of `interceptHosts`. */
export interface HostInterceptOptions {
  /**
   * The host names answered in process (any scheme, any port; compared lower-case). Every other host
   * is left alone: its requests go out to the network as if nothing were installed.
   * @default BASIS_THEORY_HOSTS
   */
  hosts?: readonly string[]
}

/** An installed interception; `close()` removes it. */
export interface Interception {
  /**
   * Removes the interception: `fetch` and `http`/`https` are Node's own again. Idempotent. A request
   * already handed to the vault still gets its answer.
   */
  close(): void
}

/**
 * Answers every request to one of `options.hosts` made through the global `fetch` (undici: the
 * node-sdk 5 and any fetch client) or through `http`/`https` `ClientRequest` (axios: both
 * basis-theory-js generations, and any client built on `http.request`) with `handler`, in process:
 * no socket is opened and no name is resolved. Built on `@mswjs/interceptors`, which patches those
 * globals of this realm (one vitest worker, one Jest test file) until `close()`. One interception at
 * a time: while one is installed, another throws an `Error` saying so.
 */
export function interceptHosts(
  handler: InterceptedHandler,
  options: HostInterceptOptions = {},
): Interception {
  const hosts = new Set((options.hosts ?? BASIS_THEORY_HOSTS).map((host) => host.toLowerCase()))
  const realm = globalThis as { [ACTIVE]?: readonly string[] }
  const active = realm[ACTIVE]
  if (active !== undefined)
    throw new Error(
      `tokenvault/intercept: this process already intercepts ${active.join(', ')}; close() that interception first (one at a time: closing either would remove both)`,
    )
  realm[ACTIVE] = [...hosts]
  const interceptors = [new ClientRequestInterceptor(), new FetchInterceptor()]
  for (const interceptor of interceptors) {
    interceptor.on('request', async ({ request, controller }) => {
      // Another host: no answer given, so the request passes through to the network unchanged.
      if (!hosts.has(new URL(request.url).hostname.toLowerCase())) return
      controller.respondWith(await handler(request))
    })
    interceptor.apply()
  }
  let open = true
  return {
    close() {
      if (!open) return
      open = false
      for (const interceptor of interceptors) interceptor.dispose()
      delete realm[ACTIVE]
    },
  }
}

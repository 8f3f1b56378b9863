/**
 * The interception adapter: a fetch handler answering the requests this process sends to chosen host
 * names (Basis Theory's, by default) without a socket. `entry/intercept.ts` (`tokenvault/intercept`)
 * puts the HTTP adapter's handler behind it.
 */
export type { HostInterceptOptions, InterceptedHandler, Interception } from './intercept.js'
export { BASIS_THEORY_HOSTS, interceptHosts } from './intercept.js'

// The public face of the proxy: what other folders of src/ import, listed by hand.

export type { ParsedProxyCall, ProxyCall } from './ephemeral.js'
export {
  anonymousCall,
  anonymousTenant,
  PROXY_METHODS,
  proxyCallInput,
  proxyOperations,
} from './ephemeral.js'
export { MAX_PROXY_TOKENS } from './expressions.js'
export type { ProxyAnswer } from './forward.js'
export { DEFAULT_PROXY_CALLS_PER_TENANT, DEFAULT_PROXY_TIMEOUT_MS, PROXY_MAX_BODY_BYTES } from './forward.js'
export type { ListProxiesQuery, ShownProxy } from './proxies.js'
export {
  MAX_PROXIES_PER_TENANT,
  proxiesOperations,
  proxyInput,
  proxyListInput,
  proxyPatchInput,
} from './proxies.js'

/**
 * The egress adapter: the network client behind the core's `EgressClient` port
 * (`src/kernel/egress.ts`). `entry/index.ts` wires `egressFetch` into `createService` (loaded on
 * first use); `routedEgress` answers in-process, for tests.
 */
export { checkedAddress, isSpecialAddress } from './addresses.js'
export { egressFetch } from './client.js'
export { nodeExchange } from './exchange.js'
export type { EgressRoute } from './routed.js'
export { routedEgress } from './routed.js'

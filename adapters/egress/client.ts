import { type EgressClient, egressVia } from '../../src/reactors/index.js'
import { nodeExchange } from './exchange.js'

/**
 * The default egress client: makes each request from this process over `node:http`/`node:https`,
 * under the egress policy of `src/reactors/egress.ts` (allow-list, request checks, redirects to
 * listed origins only, time and size bounds) and the address checks of `checkedAddress` (loopback
 * and private addresses refused unless listed by address, one resolution: no DNS rebinding).
 * Rejects with an `EgressError` whose message says why.
 */
export const egressFetch: EgressClient = egressVia(nodeExchange)

import { Agent as HttpAgent } from 'node:http'
import { Agent as HttpsAgent } from 'node:https'

/**
 * Kept-alive connections of the node egress client. A connection is always made to an address
 * `checkedAddress` answered (the agents are given that address as the host), so a kept one is
 * reused only for a later request whose own resolution checked out to the same address, port and
 * TLS server name: a rebinding answer is refused before any connection is looked for, and a
 * different public answer gets its own connection.
 *
 * Bounds: idle connections per address and port (`EGRESS_MAX_IDLE_PER_ADDRESS`, as many as one
 * tenant's proxy calls in flight by default, so a burst of answers at that load closes none that the
 * next calls would open again), closed after
 * `EGRESS_IDLE_MS` idle (under node's default server keep-alive of 5 s, so a destination seldom
 * closes one just as it is reused). Connections in use are not bounded here: the callers bound
 * their requests in flight (the proxy per tenant).
 */
export const EGRESS_MAX_IDLE_PER_ADDRESS = 64
/** How long an idle kept connection stays open, ms. */
export const EGRESS_IDLE_MS = 4000

const options = {
  keepAlive: true,
  maxFreeSockets: EGRESS_MAX_IDLE_PER_ADDRESS,
  timeout: EGRESS_IDLE_MS,
  scheduling: 'lifo' as const,
}

/** The agent for plain HTTP. */
export const httpAgent = new HttpAgent(options)
/** The agent for HTTPS (sockets are kept apart by TLS server name as well). */
export const httpsAgent = new HttpsAgent(options)

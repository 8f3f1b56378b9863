import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

/** What one `serve` process takes of connections, and how long it waits on a client. */
export interface ConnectionLimits {
  /** Connections open at once; past it a new one is closed as it is accepted. @default 4096 */
  maxConnections: number
  /** Requests one connection may have unanswered at once (pipelined); past it the connection is reset. @default 16 */
  maxPipelined: number
  /** Milliseconds a client has to send a request's headers. @default 20000 */
  headersTimeoutMs: number
  /**
   * Milliseconds an answer may wait on a client that takes none of it (its bytes stay queued and
   * none leave) before the connection is reset: its memory, and the kernel's, are given back.
   * @default 30000
   */
  stalledWriteMs: number
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  maxConnections: 4096,
  maxPipelined: 16,
  headersTimeoutMs: 20_000,
  stalledWriteMs: 30_000,
}

/** How often stalled answers are looked for, and Node's checks of headers' and requests' time run. */
export const CHECK_MS = 5_000

/** A connection's requests not yet answered, and how much of its output had left at the last look. */
export interface Held {
  unanswered: number
  written: number
  since: number
}

/**
 * Bounds what clients that send nothing useful can hold of a server (an unauthenticated client
 * reaches these before any key is checked): connections at once (`maxConnections`, so file
 * descriptors are left for the store, the lane and egress); the time to send headers; requests
 * pipelined on one connection; and answers a client stops reading, whose connection is reset (not
 * ended: an ended socket with queued bytes lingers in the kernel, megabytes each, while the client
 * keeps its window shut). Returns the listener to serve through, and a stop for the checks.
 */
export function guardConnections(
  server: Server,
  listener: (req: IncomingMessage, res: ServerResponse) => void,
  limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS,
  now: () => number = () => performance.now(),
): { listener: (req: IncomingMessage, res: ServerResponse) => void; stop(): void } {
  server.maxConnections = limits.maxConnections
  server.headersTimeout = limits.headersTimeoutMs
  server.requestTimeout = Math.max(server.requestTimeout, limits.headersTimeoutMs)
  const held = new Map<Socket, Held>()
  const guarded = (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket
    let h = held.get(socket)
    if (!h) {
      h = { unanswered: 0, written: dispatched(socket), since: now() }
      held.set(socket, h)
      socket.once('close', () => held.delete(socket))
    }
    const mine = h
    mine.unanswered++
    res.once('close', () => {
      mine.unanswered--
    })
    if (mine.unanswered > limits.maxPipelined) return void socket.resetAndDestroy()
    listener(req, res)
  }
  const timer = setInterval(() => resetStalled(held, limits.stalledWriteMs, now()), CHECK_MS)
  timer.unref()
  return { listener: guarded, stop: () => clearInterval(timer) }
}

/** The bytes a socket has handed to the kernel (`bytesWritten` counts those still queued in it too). */
const dispatched = (socket: Socket) => socket.bytesWritten - socket.writableLength

/** Resets each connection whose queued output has not moved for `stalledMs` (exported for its test). */
export function resetStalled(held: Map<Socket, Held>, stalledMs: number, at: number): void {
  for (const [socket, h] of held) {
    const out = dispatched(socket)
    if (socket.writableLength === 0 || out !== h.written) {
      h.written = out
      h.since = at
    } else if (at - h.since >= stalledMs) socket.resetAndDestroy()
  }
}

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { Server as NetServer } from 'node:net'
import {
  CHECK_MS,
  type ConnectionLimits,
  DEFAULT_CONNECTION_LIMITS,
  guardConnections,
} from './connections.js'

/** How `serve` stops: how long it keeps serving, then how long requests in flight get. */
export interface ShutdownTimes {
  /**
   * Milliseconds the listener keeps accepting and serving after shutdown begins, while `/readyz`
   * answers 503 and every answer closes its connection (time for a load balancer to stop sending).
   * @default 0
   */
  delayMs: number
  /** Milliseconds requests in flight get to be answered once the listener stopped. @default 5000 */
  graceMs: number
}

/** A node:http server that stops without resetting a request it has received. */
export interface DrainingServer {
  server: Server
  /**
   * Starts shutdown (once; later calls answer the same promise). Resolves once every connection is
   * closed, with how many requests were still unanswered when the grace ran out (closed unanswered).
   */
  shutdown(times: ShutdownTimes): Promise<{ unanswered: number }>
  /** Ends what is left of the shutdown delay now (a second signal); requests in flight are still answered. */
  hurry(): void
}

/** Resolves after two turns of the event loop: sockets accepted in this turn are read in the next. */
const twoTurns = () => new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)))

/** At most how long the listener stays open past the delay for connections already queued to be accepted. */
const QUIET_LISTENER_MAX_MS = 1_000

/**
 * Resolves once two turns of the event loop passed without a connection accepted (`accepted()`
 * unchanged), or after `maxMs`. Closing a listener resets the connections still in its accept queue,
 * requests already sent on them included, and the loop accepts one connection per turn.
 */
async function quietListener(accepted: () => number, maxMs: number) {
  const until = performance.now() + maxMs
  for (;;) {
    const before = accepted()
    await twoTurns()
    if (accepted() === before || performance.now() >= until) return
  }
}

/** The 503 `/readyz` answers while draining. */
function notReady(req: IncomingMessage, res: ServerResponse) {
  const body = '{"status":"shutting down"}'
  res.writeHead(503, {
    'content-type': 'application/json',
    'cache-control': 'no-store',
    'retry-after': '1',
    'content-length': Buffer.byteLength(body),
  })
  res.end(req.method === 'HEAD' ? undefined : body)
}

const isReadyz = (req: IncomingMessage) =>
  (req.method === 'GET' || req.method === 'HEAD') && (req.url ?? '').split('?')[0] === '/readyz'

/**
 * Serves `listener` on a node:http server whose shutdown closes a connection only between requests:
 * every answer from the start of shutdown closes its connection; after the delay the listener
 * stops accepting once its queue of connections is empty (at most 1 s more), then two turns of the
 * event loop pass (so bytes that had already arrived are read and become requests) before idle
 * connections close; once every request is answered (or the grace ran out) the last connections
 * close.
 */
export function drainingServer(
  listener: (req: IncomingMessage, res: ServerResponse) => void,
  limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS,
): DrainingServer {
  let draining = false
  const unanswered = new Set<ServerResponse>()
  let guarded = listener
  const server = createServer({ connectionsCheckingInterval: CHECK_MS }, (req, res) => {
    unanswered.add(res)
    res.on('close', () => unanswered.delete(res))
    if (!draining) return guarded(req, res)
    res.setHeader('connection', 'close')
    if (isReadyz(req)) return notReady(req, res)
    guarded(req, res)
  })
  // `Expect: 100-continue` is answered when the body is wanted (`readNodeBody`), not before the key
  // is checked: Node's own 100 invited a bad key's client to send its whole body for a 401.
  server.on('checkContinue', (req, res) => server.emit('request', req, res))
  const guard = guardConnections(server, listener, limits)
  guarded = guard.listener
  server.once('close', () => guard.stop())
  let accepted = 0
  server.on('connection', () => {
    accepted++
  })
  let endDelay = () => {}
  let stopping: Promise<{ unanswered: number }> | undefined
  const shutdown = ({ delayMs, graceMs }: ShutdownTimes) => {
    stopping ??= (async () => {
      draining = true
      for (const res of unanswered) if (!res.headersSent) res.setHeader('connection', 'close')
      if (delayMs > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, delayMs)
          endDelay = () => {
            clearTimeout(timer)
            resolve()
          }
        })
      }
      await quietListener(() => accepted, QUIET_LISTENER_MAX_MS)
      const closed = new Promise<void>((resolve) => {
        // net's close: stop accepting, but not yet close idle connections (http.Server.close would).
        NetServer.prototype.close.call(server, () => resolve())
      })
      await twoTurns()
      server.closeIdleConnections()
      let timer: ReturnType<typeof setTimeout> | undefined
      const graceOver = new Promise<'grace'>((resolve) => {
        timer = setTimeout(() => resolve('grace'), graceMs)
      })
      const ended = await Promise.race([closed.then(() => 'closed' as const), graceOver])
      clearTimeout(timer)
      const left = ended === 'grace' ? unanswered.size : 0
      if (ended === 'grace') {
        server.closeAllConnections()
        await closed
      }
      return { unanswered: left }
    })()
    return stopping
  }
  return { server, shutdown, hurry: () => endDelay() }
}

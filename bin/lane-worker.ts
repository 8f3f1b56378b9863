/**
 * The heavy lane's thread (see `bin/heavy-lane.ts`): a service of its own over the server's store,
 * built from the server's options, behind the same HTTP handler. It answers what the main thread
 * posts and runs nothing on a timer: sweeps and the webhook ticker stay the main thread's.
 */
import { setPriority } from 'node:os'
import { parentPort, workerData } from 'node:worker_threads'
import type { Incoming, Outgoing } from '../adapters/http/exchange.js'
import { TOO_LARGE, UNREADABLE } from '../adapters/http/exchange.js'
import { exchangeHandlerOf } from '../adapters/http/handler.js'
import { createHttpHandler, type HttpLogEvent } from '../adapters/http/index.js'
import { problem } from '../adapters/http/problem.js'
import { sandboxRunner } from '../adapters/sandbox/index.js'
import { createService, systemClock } from '../entry/index.js'
import type { FromLane, LaneConfig, LaneRequest } from './heavy-lane.js'
import { formatEvent, jsonEvent } from './serve.js'
import { openStore } from './stores.js'

const config = workerData as LaneConfig
const port = parentPort!
const post = (m: FromLane, transfer: ArrayBuffer[] = []) => port.postMessage(m, transfer)

/** The exchange view of a posted request. */
function incomingOf(m: LaneRequest): Incoming {
  return {
    method: m.method,
    target: m.target,
    header: (name) => m.headers[name] ?? null,
    headers: () => m.headers,
    mount: () => '',
    readBody: async (maxBytes) => {
      if (m.read === 'too large') return TOO_LARGE
      if (m.read === 'unreadable') return UNREADABLE
      return m.body !== null && m.body.byteLength > maxBytes ? TOO_LARGE : m.body
    },
  }
}

/** An answer's body as bytes of their own, which move to the main thread without a copy there. */
async function bytesOf(body: Outgoing['body']): Promise<Uint8Array | null> {
  if (body === null) return null
  if (typeof body === 'string') return new Uint8Array(Buffer.from(body))
  if (body instanceof Uint8Array) return new Uint8Array(body)
  return new Uint8Array(await new Response(body).arrayBuffer())
}

async function main() {
  // This thread only (Linux sets a thread's own niceness): the main thread's requests come first
  // whenever both want a core; the lane's still get every core the main thread leaves.
  try {
    setPriority(config.nice)
  } catch {}
  const opened = await openStore(config.store, { log: (line) => post({ log: line }) })
  const service = createService({
    store: opened.store,
    clock: systemClock,
    runner: sandboxRunner(),
    ...(config.masterKey ? { masterKey: config.masterKey } : {}),
    // Without the server's signing key the lane could not sign as it does: the main thread's ticker
    // delivers what the lane's writes leave in the outbox (within a second).
    ...(config.webhookSigningKey
      ? { webhookSigningKey: config.webhookSigningKey }
      : { webhookDelivery: 'manual' as const }),
    ...(config.reactorEgress?.length ? { reactorEgress: [...config.reactorEgress] } : {}),
    ...config.serviceBounds,
  })
  const log = (event: HttpLogEvent) =>
    post({ log: config.logFormat === 'json' ? jsonEvent(event) : `${formatEvent(event)} lane` })
  const handler = createHttpHandler(service, {
    ...(config.headerPrefix ? { headerPrefix: config.headerPrefix } : {}),
    ...(config.corsOrigins ? { cors: { origins: config.corsOrigins } } : {}),
    ...config.httpBounds,
    log: config.logFormat === 'none' ? () => {} : log,
  })
  const exchange = exchangeHandlerOf(handler)!
  port.on('message', async (m: LaneRequest) => {
    try {
      const out = await exchange(incomingOf(m))
      const body = await bytesOf(out.body)
      const answer = { id: m.id, status: out.status, headers: out.headers, body }
      post({ answer }, body ? [body.buffer as ArrayBuffer] : [])
    } catch (error) {
      post({ log: `heavy lane: a request failed: ${String(error)}` })
      const out = problem(503, 'The request failed in its worker thread; it may be retried.', undefined, {
        'retry-after': '1',
      })
      post({ answer: { id: m.id, status: out.status, headers: out.headers, body: await bytesOf(out.body) } })
    }
  })
  post({ ready: true })
}

main().catch((error: unknown) => {
  post({ failed: error instanceof Error ? error.message : String(error) })
  process.exit(1)
})

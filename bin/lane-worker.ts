/**
 * The heavy lane's thread (see `bin/heavy-lane.ts`): a service of its own over the server's store,
 * built from the server's options, behind the same HTTP handler. It answers what the main thread
 * posts and runs nothing on a timer: sweeps and the webhook ticker stay the main thread's.
 */
import { setPriority } from 'node:os'
import { parentPort, workerData } from 'node:worker_threads'
import type { CommitsOn, ForwardedResult } from '../adapters/file/forward.js'
import { exchangeHandlerOf } from '../adapters/http/handler.js'
import { createHttpHandler, type HttpLogEvent } from '../adapters/http/index.js'
import { sandboxRunner } from '../adapters/sandbox/index.js'
import { storeOverThread } from '../adapters/thread-store/index.js'
import { createService, systemClock } from '../entry/index.js'
import { type FromLane, LANE_POOL, type LaneConfig, type ToLane } from './heavy-lane.js'
import { answerOnLane } from './lane-answer.js'
import { formatEvent, jsonEvent } from './serve.js'
import { openStore } from './stores.js'

const config = workerData as LaneConfig
const port = parentPort!
const post = (m: FromLane, transfer: ArrayBuffer[] = []) => port.postMessage(m, transfer)

/** The forwarded writes not answered yet, by id (`commitsOn`). */
const written = new Map<number, (answer: ForwardedResult) => void>()
let nextWrite = 1

/** The lane's writes go to the main thread's store, which commits them (`LaneConfig.forwardWrites`). */
const commitsOn: CommitsOn = (write, transfer) =>
  new Promise((resolve) => {
    const id = nextWrite++
    written.set(id, resolve)
    post({ write: { id, write } }, transfer)
  })

/** The main thread's memory store, called through messages (`LaneConfig.storeOnMain`). */
const onMain = config.storeOnMain ? storeOverThread((calls) => post({ store: calls })) : undefined

/** The lane's store: the main thread's (a memory store), else one of its own over the same file or database. */
async function laneStore() {
  if (onMain) return { store: onMain.store, release: async () => {} }
  return openStore(config.store, {
    log: (line) => post({ log: line }),
    pool: { max: LANE_POOL, name: 'tokenvault lane' },
    ...(config.forwardWrites ? { commitsOn } : {}),
  })
}

async function main() {
  // This thread only (Linux sets a thread's own niceness): the main thread's requests come first
  // whenever both want a core; the lane's still get every core the main thread leaves.
  try {
    setPriority(config.nice)
  } catch {}
  const opened = await laneStore()
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
    post({ log: config.logFormat === 'json' ? jsonEvent(event, true) : `${formatEvent(event)} lane` })
  const handler = createHttpHandler(service, {
    ...(config.headerPrefix ? { headerPrefix: config.headerPrefix } : {}),
    ...(config.corsOrigins ? { cors: { origins: config.corsOrigins } } : {}),
    ...config.httpBounds,
    log: config.logFormat === 'none' ? () => {} : log,
  })
  const exchange = exchangeHandlerOf(handler)!
  port.on('message', async (m: ToLane) => {
    if ('stored' in m) return onMain?.settle(m.stored)
    if ('wrote' in m) {
      written.get(m.wrote)?.(m.answer)
      written.delete(m.wrote)
      return
    }
    const { answer, log: line } = await answerOnLane(exchange, m)
    if (line) post({ log: line })
    post({ answer }, answer.body ? [answer.body.buffer as ArrayBuffer] : [])
  })
  post({ ready: true })
}

main().catch((error: unknown) => {
  post({ failed: error instanceof Error ? error.message : String(error) })
  process.exit(1)
})

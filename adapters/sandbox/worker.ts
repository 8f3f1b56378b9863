import { parentPort, workerData } from 'node:worker_threads'
import { Engine } from './engine.js'
import type { RunMessage, WorkerConfig, WorkerMessage } from './messages.js'

/**
 * A sandbox worker thread: one WebAssembly engine, one run at a time. It takes `run` messages from
 * the host (more may wait behind the one it runs, in order), says `started` once the engine is
 * restored after the previous run and the code is about to run, answers each run with one `done`
 * message, and restores the engine while idle. When the engine fails it exits, and the host starts
 * a new worker: after the answer when the run broke it (the run is answered `crashed`), before
 * `started` when restoring the engine failed (the host runs the runs it held again on another
 * worker: they never ran here).
 */
const port = parentPort
if (!port) throw new Error('adapters/sandbox/worker.ts runs only as a worker thread')
const config = workerData as WorkerConfig
const engine = await Engine.load(config.memoryMb, config.maxResultChars, config.wasmModule, {
  prelude: config.prelude,
  driver: config.driver,
})

const send = (message: WorkerMessage | [WorkerMessage, WorkerMessage]) => port.postMessage(message)
const claims = config.claims ? new Int32Array(config.claims) : undefined
/** Runs received and not yet run, in the order the host sent them. */
const waiting: RunMessage[] = []
let busy = false

/**
 * Runs the waiting runs one after the other; restores the engine once idle. Going straight on to
 * the next run, it sends the answer of one with the `started` of the next, in one message.
 */
async function drain(): Promise<void> {
  busy = true
  let answered: WorkerMessage | undefined
  for (let message = waiting.shift(); message; message = waiting.shift()) {
    engine.prepare()
    if (engine.broken) exit(answered)
    // A run the host took back while it waited here is another worker's now.
    if (claims && message.cell !== undefined && Atomics.compareExchange(claims, message.cell, 0, 1) !== 0)
      continue
    const started: WorkerMessage = { t: 'started', id: message.id }
    if (answered) send([answered, started])
    else send(started)
    answered = undefined
    const result = await engine.run(message.code, message.request, message.timeoutMs, message.egress)
    answered = { t: 'done', id: message.id, ...result }
    if (engine.broken) exit(answered)
  }
  if (answered) send(answered)
  busy = false
  setImmediate(() => {
    if (busy) return
    engine.prepare()
    // An engine that could not be restored is unusable: start afresh.
    if (engine.broken) process.exit(1)
  })
}

/** Ends the worker (its engine broke), after sending the last answer if any. */
function exit(answered: WorkerMessage | undefined): never {
  if (answered) send(answered)
  process.exit(1)
}

port.on('message', (message: RunMessage) => {
  waiting.push(message)
  if (!busy) void drain()
})
send({ t: 'ready' })

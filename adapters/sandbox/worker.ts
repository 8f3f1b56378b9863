import { parentPort, workerData } from 'node:worker_threads'
import { Engine } from './engine.js'
import type { RunMessage, WorkerConfig, WorkerMessage } from './messages.js'

/**
 * A sandbox worker thread: one WebAssembly engine, one run at a time. It takes `run` messages from
 * the host, says `started` once the previous run's runtime is freed and the code is about to run,
 * answers each run with one `done` message, and frees the spent runtime and makes the next run's
 * context while idle. When the engine fails it exits, and the host starts a new worker: after the
 * answer when the run broke it (the run is answered `crashed`), before `started` when freeing the
 * previous run's runtime failed (the host runs that run again on another worker: it never ran here).
 */
const port = parentPort
if (!port) throw new Error('adapters/sandbox/worker.ts runs only as a worker thread')
const config = workerData as WorkerConfig
const engine = await Engine.load(config.memoryMb, config.maxResultChars, config.wasmModule, config.prelude)

const send = (message: WorkerMessage) => port.postMessage(message)

port.on('message', async (message: RunMessage) => {
  engine.prepare()
  if (engine.broken) process.exit(1)
  send({ t: 'started', id: message.id })
  const result = await engine.run(message.code, message.request, message.timeoutMs, message.egress)
  send({ t: 'done', id: message.id, ...result })
  if (engine.broken) process.exit(1)
  setImmediate(() => {
    engine.prepare()
    // A runtime that could not be freed leaves the engine unusable: start afresh.
    if (engine.broken) process.exit(1)
  })
})
send({ t: 'ready' })

import { getPriority, setPriority } from 'node:os'
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads'
import { EgressError, type EgressResponse } from '../../src/kernel/index.js'
import { Engine } from './engine.js'
import type { FetchedMessage, RunMessage, WorkerConfig, WorkerMessage } from './messages.js'
import type { HostFetch } from './prepared.js'

/**
 * A sandbox worker thread: one WebAssembly engine, one run at a time. It takes `run` messages from
 * the host (more may wait behind the one it runs, in order), claims each run in the shared `claims`
 * (writing when, in `starts`) once the engine is restored after the previous run and the code is
 * about to run, answers each run with one `done` message, and restores the engine while idle. When
 * the engine fails it exits, and the host starts a new worker: after the answer when the run broke
 * it (the run is answered `crashed`), before the claim when restoring the engine failed (the host
 * runs the runs it held again on another worker: they never ran here). A run's `fetch` requests
 * are made by the host: each goes out as a `fetch` message, and comes back as a `fetched` one.
 */
if (!parentPort) throw new Error('adapters/sandbox/worker.ts runs only as a worker thread')
const port = parentPort
const config = workerData as WorkerConfig
const engine = await Engine.load(config.memoryMb, config.maxResultChars, config.wasmModule, {
  prelude: config.prelude,
  driver: config.driver,
})
// This thread only (Linux sets a thread's own niceness), once the engine is loaded (a worker's start
// is the host's to wait for): `nice` more than the host's (this thread began at the niceness of the
// thread that started it), at most 19, so tenant code gets the cores the host's threads leave.
// Where it can't be set, the worker runs at the host's.
if (config.nice)
  try {
    setPriority(Math.min(19, getPriority() + config.nice))
  } catch {}

const send = (message: WorkerMessage) => port.postMessage(message)
const claims = new Int32Array(config.claims)
const starts = new Float64Array(config.starts)
const backlog = new Int32Array(config.backlog)
/** How long an idle worker watches for its next run (ms, at most 1). */
const spinMs = Math.min(1, (config.idleSpinUs ?? 0) / 1000)
/** Runs received and not yet run, in the order the host sent them. */
const waiting: RunMessage[] = []
/** Whether `drain` is under way, and the id of the run under way, if any. */
const state: { busy: boolean; running: number | undefined } = { busy: false, running: undefined }
/** The running run's requests waiting for the host's answer, by number. */
const fetches = new Map<
  number,
  { resolve: (response: EgressResponse) => void; reject: (error: Error) => void }
>()

/**
 * Runs the waiting runs one after the other, answering each as it ends. Once none waits it restores
 * the engine, then watches its port for the next run for up to `idleSpinUs` before it sleeps.
 */
async function drain(): Promise<void> {
  state.busy = true
  do {
    for (let message = waiting.shift(); message; message = waiting.shift()) {
      engine.prepare()
      if (engine.broken) exit()
      // The start's time first, then the claim: the host reads the time once it sees the claim. A run
      // the host took back while it waited here is another worker's now.
      starts[message.cell] = performance.timeOrigin + performance.now()
      if (Atomics.compareExchange(claims, message.cell, 0, 1) !== 0) continue
      const fetch = message.fetch ? hostFetch(message.id) : undefined
      state.running = message.id
      const result = await engine.run(message.code, message.request, message.timeoutMs, fetch)
      state.running = undefined
      fetches.clear()
      const answered: WorkerMessage = { t: 'done', id: message.id, ...result }
      if (engine.broken) exit(answered)
      send(answered)
    }
    // Restored while idle, so the next run starts at once. An engine that could not be restored is
    // unusable: start afresh.
    engine.prepare()
    if (engine.broken) process.exit(1)
  } while (awaitNext())
  state.busy = false
}

/**
 * Watches the port for the next run for up to `idleSpinUs` (µs), on this thread's core: a thread
 * that sleeps takes tens of µs to wake when a message comes. It stops as soon as runs wait in the
 * host's queue: the host is busy then, and needs the core more. True when a run came (it waits in
 * `waiting`).
 */
function awaitNext(): boolean {
  if (!(spinMs > 0)) return false
  const end = performance.now() + spinMs
  while (Atomics.load(backlog, 0) === 0) {
    const next = receiveMessageOnPort(port)
    // A late answer to a request of a run that has ended is dropped.
    if (next && (next.message as RunMessage | FetchedMessage).t === 'run') {
      waiting.push(next.message as RunMessage)
      return true
    }
    if (performance.now() >= end) break
  }
  return false
}

/** Ends the worker (its engine broke), after sending the last answer if any. */
function exit(answered?: WorkerMessage): never {
  if (answered) send(answered)
  process.exit(1)
}

/**
 * The `fetch` of run `id`: each request is handed to the host (`fetch` message, numbered from 1),
 * which makes it and answers with a `fetched` message. Aborted (the run ended), it is dropped here;
 * the host aborts the run's requests itself when the run's answer reaches it.
 */
function hostFetch(id: number): HostFetch {
  let count = 0
  return (request, limits) =>
    new Promise<EgressResponse>((resolve, reject) => {
      const n = ++count
      const signal = limits.signal
      signal?.addEventListener('abort', () => {
        fetches.delete(n)
        reject(signal.reason instanceof Error ? signal.reason : new EgressError('aborted'))
      })
      fetches.set(n, { resolve, reject })
      send({ t: 'fetch', id, n, request: JSON.stringify(request), timeoutMs: limits.timeoutMs })
    })
}

/** Settles the request a `fetched` message answers (if its run is still running). */
function fetched(message: FetchedMessage): void {
  const pending = message.id === state.running ? fetches.get(message.n) : undefined
  if (!pending) return
  fetches.delete(message.n)
  if (message.ok) pending.resolve(JSON.parse(message.payload) as EgressResponse)
  else pending.reject(new EgressError(message.payload))
}

port.on('message', (message: RunMessage | FetchedMessage) => {
  if (message.t === 'fetched') {
    fetched(message)
    return
  }
  waiting.push(message)
  if (!state.busy) void drain()
})
send({ t: 'ready' })

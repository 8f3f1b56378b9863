import type { Worker } from 'node:worker_threads'
import { afterEach, describe, expect, it } from 'vitest'
import { startSandboxWorker } from '../../adapters/sandbox/index.js'
import type { RunMessage, WorkerConfig, WorkerMessage } from '../../adapters/sandbox/messages.js'

const CODE = 'module.exports = async (req) => ({ raw: req.args.n })'
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * A real sandbox worker driven by hand: `backlog` is the pool's count of waiting runs, as the worker
 * reads it. A watching worker's event loop is busy for the whole watch, a sleeping one's is not.
 */
async function handWorker(idleSpinUs: number, backlog: number) {
  const config: WorkerConfig = {
    memoryMb: 32,
    maxResultChars: 1000,
    claims: new SharedArrayBuffer(256 * 4),
    starts: new SharedArrayBuffer(256 * 8),
    backlog: new SharedArrayBuffer(4),
    idleSpinUs,
  }
  Atomics.store(new Int32Array(config.backlog), 0, backlog)
  const worker = startSandboxWorker(config)
  const next = () => new Promise<WorkerMessage>((resolve) => worker.once('message', resolve))
  expect(await next()).toEqual({ t: 'ready' })
  let id = 0
  const run = async () => {
    id++
    const message: RunMessage = {
      t: 'run',
      id,
      cell: id,
      code: CODE,
      request: JSON.stringify({ args: { n: id }, configuration: {} }),
      timeoutMs: 5000,
    }
    const answered = next()
    worker.postMessage(message)
    expect(await answered).toMatchObject({ t: 'done', id, ok: true, json: JSON.stringify({ raw: id }) })
  }
  // Warm: the engine's first runs are slower than the ones measured.
  for (let i = 0; i < 5; i++) await run()
  await pause(20)
  /**
   * The least time (ms) the worker's event loop was busy over one run and the 4 ms after its answer,
   * of n runs: the window opens before the run is handed over, so a watch that began and ended
   * before a loaded host read the answer still counts, and the least of n is the run least slowed
   * by other work on the machine.
   */
  const afterAnswers = async (n: number) => {
    const busy: number[] = []
    for (let i = 0; i < n; i++) {
      const before = worker.performance.eventLoopUtilization()
      await run()
      await pause(4)
      busy.push(worker.performance.eventLoopUtilization(before).active)
    }
    return Math.min(...busy)
  }
  const idle = async (ms: number) => {
    const before = worker.performance.eventLoopUtilization()
    await pause(ms)
    return worker.performance.eventLoopUtilization(before).active
  }
  return { worker, afterAnswers, idle }
}

const started: Worker[] = []
afterEach(async () => {
  await Promise.all(started.splice(0).map((w) => w.terminate()))
})

/** A worker started (and terminated after the test) with this watch, reading this backlog. */
async function startedWorker(idleSpinUs: number, backlog: number) {
  const one = await handWorker(idleSpinUs, backlog)
  started.push(one.worker)
  return one
}

describe('an idle sandbox worker watches for its next run, within bounds', () => {
  it('watches about idleSpinUs after each answer while no run waits in the queue, then sleeps', async () => {
    const watching = await startedWorker(1000, 0)
    const watched = await watching.afterAnswers(21)
    const slept = await (await startedWorker(0, 0)).afterAnswers(21)
    // A watch of 1 ms after each answer, on top of the run; the worker that sleeps, measured in the
    // same way, is the run alone (about 0.7 ms on a busy 2-core machine).
    if (process.env.TIMING_DEBUG) console.log({ watched, slept })
    expect(watched - slept).toBeGreaterThan(0.5)
    expect(watched - slept).toBeLessThan(3)
    // And then it sleeps: 200 ms without a run keep it busy for at most the one watch.
    expect(await watching.idle(200)).toBeLessThan(20)
  })

  it('does not watch while runs wait in the queue (the host is busy then and needs the core)', async () => {
    const busyQueue = await (await startedWorker(1000, 3)).afterAnswers(21)
    const emptyQueue = await (await startedWorker(1000, 0)).afterAnswers(21)
    // The worker reading a busy queue is busy for the run alone: a watch's 1 ms less.
    if (process.env.TIMING_DEBUG) console.log({ emptyQueue, busyQueue })
    expect(emptyQueue - busyQueue).toBeGreaterThan(0.5)
  })
})

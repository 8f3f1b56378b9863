import { EventEmitter } from 'node:events'
import type { Worker } from 'node:worker_threads'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { sandboxRunner, startSandboxWorker } from '../../adapters/sandbox/index.js'
import type { RunMessage, WorkerConfig } from '../../adapters/sandbox/messages.js'
import { SandboxPool } from '../../adapters/sandbox/pool.js'
import type { RunOutcome } from '../../src/kernel/runner.js'

const REQUEST = JSON.stringify({ args: {}, configuration: {} })

/**
 * A worker thread stand-in that holds the runs it is sent in order, as the real one does: it writes
 * when it starts a run and claims it in the shared cells before it starts it (no message), and skips
 * a run the host took back.
 */
class PipelinedWorker extends EventEmitter {
  readonly sent: RunMessage[] = []
  private readonly claims: Int32Array
  private readonly starts: Float64Array
  /** The pool's count of runs waiting in its queue, as every worker reads it. */
  readonly backlog: Int32Array
  terminated = false
  constructor(config: WorkerConfig) {
    super()
    this.claims = new Int32Array(config.claims)
    this.starts = new Float64Array(config.starts)
    this.backlog = new Int32Array(config.backlog)
  }
  postMessage(message: RunMessage): void {
    this.sent.push(message)
  }
  ready(): void {
    this.emit('message', { t: 'ready' })
  }
  /**
   * Answers `withAnswerOf` if given, then claims and starts the next run it holds (skipping those
   * taken back); answers that run, or undefined.
   */
  start(withAnswerOf?: RunMessage): RunMessage | undefined {
    if (withAnswerOf) this.answer(withAnswerOf)
    for (;;) {
      const next = this.sent.find((m) => !this.done.has(m.id))
      if (!next) return undefined
      if (this.claim(next)) return next
    }
  }
  answer(run: RunMessage): void {
    this.emit('message', answerTo(run))
  }
  /** Claims a run as the worker does just before it starts it, its start time first; false if the host took it back. */
  claim(run: RunMessage, startedAt = performance.timeOrigin + performance.now()): boolean {
    this.done.add(run.id)
    this.starts[run.cell] = startedAt
    return Atomics.compareExchange(this.claims, run.cell, 0, 1) === 0
  }
  cell(run: RunMessage): number {
    return Atomics.load(this.claims, run.cell)
  }
  private readonly done = new Set<number>()
  exit(): void {
    this.terminated = true
    this.emit('exit', 1)
  }
  terminate(): Promise<number> {
    this.terminated = true
    return Promise.resolve(1)
  }
  ref(): void {}
  unref(): void {}
}

const answerTo = (run: RunMessage) => ({
  t: 'done',
  id: run.id,
  ok: true,
  json: JSON.stringify({ raw: run.code }),
  logs: [],
})

function pool(size: number, pipeline: number, maxQueuedPerTenant = 10) {
  const workers: PipelinedWorker[] = []
  const outcomes: Record<string, RunOutcome> = {}
  const p = new SandboxPool({
    size,
    memoryMb: 32,
    maxResultChars: 1000,
    maxQueuedPerTenant,
    maxQueued: 100,
    graceMs: 1000,
    startTimeoutMs: 60_000,
    crashPenaltyMs: 0,
    maxCrashPenaltyMs: 0,
    pipeline,
    startWorker: (config: WorkerConfig) => {
      const worker = new PipelinedWorker(config)
      workers.push(worker)
      return worker as unknown as Worker
    },
  })
  const submit = (name: string, tenant: string) =>
    p.submit({
      tenant,
      code: name,
      request: REQUEST,
      timeoutMs: 60_000,
      done: (outcome) => {
        expect(outcomes[name], `${name} settled twice`).toBeUndefined()
        outcomes[name] = outcome
      },
    })
  return { pool: p, workers, outcomes, submit }
}

const names = (w: PipelinedWorker) => w.sent.map((m) => m.code)

describe('the backlog the workers read (an idle worker watches for its next run only while it is 0)', () => {
  it('counts the runs waiting in the queue, not those a worker holds, as they are sent and answered', async () => {
    const { pool: p, workers, submit } = pool(2, 1)
    try {
      p.warm()
      for (const w of workers) w.ready()
      const [first, second] = workers
      submit('a1', 'A')
      expect(Atomics.load(first!.backlog, 0)).toBe(0)
      for (const name of ['a2', 'a3', 'b1', 'b2']) submit(name, name[0]!.toUpperCase())
      // Two are held (one by each worker); three wait, and both workers read the same count.
      expect(Atomics.load(first!.backlog, 0)).toBe(3)
      expect(Atomics.load(second!.backlog, 0)).toBe(3)
      first!.answer(first!.start()!)
      expect(Atomics.load(first!.backlog, 0)).toBe(2)
      second!.answer(second!.start()!)
      first!.answer(first!.start()!)
      expect(Atomics.load(first!.backlog, 0)).toBe(0)
      second!.answer(second!.start()!)
      first!.answer(first!.start()!)
      expect(Atomics.load(first!.backlog, 0)).toBe(0)
    } finally {
      await p.close()
    }
  })

  it('leaves out the runs sent ahead to a worker', async () => {
    const { pool: p, workers, submit } = pool(1, 4)
    try {
      p.warm()
      workers[0]!.ready()
      for (let i = 1; i <= 6; i++) submit(`a${i}`, 'A')
      // The worker holds four (one starting, three sent ahead); two wait in the queue.
      expect(names(workers[0]!)).toEqual(['a1', 'a2', 'a3', 'a4'])
      expect(Atomics.load(workers[0]!.backlog, 0)).toBe(2)
    } finally {
      await p.close()
    }
  })
})

describe('which worker gets a run', () => {
  it('of the idle workers, the one that answered last (still on a core, its caches warm)', async () => {
    const { pool: p, workers, submit } = pool(2, 1)
    try {
      p.warm()
      for (const w of workers) w.ready()
      submit('a1', 'A')
      submit('a2', 'A')
      const [first, second] = workers
      const a1 = first!.start()!
      const a2 = second!.start()!
      second!.answer(a2)
      first!.answer(a1)
      submit('a3', 'A')
      expect(names(first!)).toEqual(['a1', 'a3'])
      first!.answer(first!.start()!)
      submit('a4', 'A')
      expect(names(first!)).toEqual(['a1', 'a3', 'a4'])
      expect(names(second!)).toEqual(['a2'])
    } finally {
      await p.close()
    }
  })
})

describe('a busy worker holds the runs sent ahead to it', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] })
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('up to `pipeline` runs at once (3 here); the rest wait in the queue; answers come in order', async () => {
    const { pool: p, workers, outcomes, submit } = pool(1, 3)
    try {
      for (const n of [1, 2, 3, 4, 5]) submit(`a${n}`, 'A')
      workers[0]!.ready()
      expect(names(workers[0]!)).toEqual(['a1', 'a2', 'a3'])
      const first = workers[0]!.start()!
      // The answer of a1, then the start of a2: a4 is sent as a1's place frees.
      const second = workers[0]!.start(first)!
      expect(outcomes.a1).toEqual({ ok: true, value: { raw: 'a1' }, logs: [] })
      expect(second.code).toBe('a2')
      expect(names(workers[0]!)).toEqual(['a1', 'a2', 'a3', 'a4'])
      workers[0]!.answer(second)
      expect(Object.keys(outcomes)).toEqual(['a1', 'a2'])
    } finally {
      await p.close()
    }
  })

  it('the runs behind a run that has run 2 ms go back to the queue and to another worker; the first worker skips them', async () => {
    const { pool: p, workers, outcomes, submit } = pool(2, 3)
    try {
      for (const n of [1, 2, 3, 4, 5, 6]) submit(`a${n}`, 'A')
      workers[0]!.ready()
      const hang = workers[0]!.start()!
      expect(names(workers[0]!)).toEqual(['a1', 'a2', 'a3'])
      // 2 ms after its start, the runs behind a1 still wait for it; 3 ms after, they are taken back.
      vi.advanceTimersByTime(2)
      expect(workers[0]!.cell(workers[0]!.sent[1]!)).toBe(0)
      vi.advanceTimersByTime(1)
      // Taken back (cell 2); the next worker gets them first, in their order.
      expect(workers[0]!.sent.slice(1).map((m) => workers[0]!.cell(m))).toEqual([2, 2])
      workers[1]!.ready()
      expect(names(workers[1]!)).toEqual(['a2', 'a3', 'a4'])
      const a2 = workers[1]!.start()!
      workers[1]!.answer(a2)
      expect(outcomes.a2).toMatchObject({ ok: true })
      // The other worker was sent a5 ahead; the first ends its long run, skips a2 and a3, and runs a6.
      expect(names(workers[1]!)).toEqual(['a2', 'a3', 'a4', 'a5'])
      workers[0]!.answer(hang)
      expect(workers[0]!.start()?.code).toBe('a6')
      expect(outcomes.a1).toMatchObject({ ok: true, value: { raw: 'a1' } })
    } finally {
      await p.close()
    }
  })

  it('the 2 ms are timed from the start the worker wrote as it claimed the run, not from when it was sent', async () => {
    const { pool: p, workers, submit } = pool(2, 3)
    try {
      for (const n of [1, 2, 3]) submit(`a${n}`, 'A')
      workers[0]!.ready()
      expect(names(workers[0]!)).toEqual(['a1', 'a2', 'a3'])
      // The worker claims a1 1 ms after it was sent (restoring its engine, say).
      vi.advanceTimersByTime(1)
      expect(workers[0]!.claim(workers[0]!.sent[0]!)).toBe(true)
      vi.advanceTimersByTime(2)
      expect(workers[0]!.sent.slice(1).map((m) => workers[0]!.cell(m))).toEqual([0, 0])
      vi.advanceTimersByTime(1)
      expect(workers[0]!.sent.slice(1).map((m) => workers[0]!.cell(m))).toEqual([2, 2])
    } finally {
      await p.close()
    }
  })

  it.each([
    ['no number', Number.NaN],
    ['a time to come', 1e15],
  ])(
    'a start time that is %s counts from when the run was sent: the runs behind go no later',
    async (_, at) => {
      const { pool: p, workers, submit } = pool(2, 3)
      try {
        for (const n of [1, 2, 3]) submit(`a${n}`, 'A')
        workers[0]!.ready()
        vi.advanceTimersByTime(1)
        expect(workers[0]!.claim(workers[0]!.sent[0]!, at)).toBe(true)
        vi.advanceTimersByTime(2)
        expect(workers[0]!.sent.slice(1).map((m) => workers[0]!.cell(m))).toEqual([2, 2])
      } finally {
        await p.close()
      }
    },
  )

  it('a run the worker claimed before the host could take it back stays with the worker', async () => {
    const { pool: p, workers, outcomes, submit } = pool(2, 2)
    try {
      submit('a1', 'A')
      submit('a2', 'A')
      workers[0]!.ready()
      const a1 = workers[0]!.start()!
      const a2 = workers[0]!.sent[1]!
      expect(a2.code).toBe('a2')
      // The worker, done with a1, claims a2; its answer to a1 has not reached the host yet.
      expect(workers[0]!.claim(a2)).toBe(true)
      vi.advanceTimersByTime(10)
      // The host's exchange failed: a2 is not the queue's, and the other worker gets nothing.
      expect(workers[0]!.cell(a2)).toBe(1)
      workers[1]!.ready()
      expect(workers[1]!.sent).toEqual([])
      workers[0]!.answer(a1)
      workers[0]!.answer(a2)
      expect(outcomes).toMatchObject({ a1: { ok: true }, a2: { ok: true, value: { raw: 'a2' } } })
    } finally {
      await p.close()
    }
  })

  it('a worker that dies in its run fails that run alone; the runs sent ahead run on a new worker, in order', async () => {
    const { pool: p, workers, outcomes, submit } = pool(1, 3)
    try {
      submit('a1', 'A')
      submit('b1', 'B')
      submit('a2', 'A')
      workers[0]!.ready()
      expect(names(workers[0]!)).toEqual(['a1', 'b1', 'a2'])
      workers[0]!.start()
      workers[0]!.exit()
      expect(outcomes.a1).toMatchObject({ ok: false, kind: 'crashed' })
      expect(outcomes.b1).toBeUndefined()
      workers[1]!.ready()
      expect(names(workers[1]!)).toEqual(['b1', 'a2'])
      const b1 = workers[1]!.start()!
      const a2 = workers[1]!.start(b1)!
      workers[1]!.answer(a2)
      expect(outcomes).toMatchObject({ b1: { ok: true }, a2: { ok: true } })
    } finally {
      await p.close()
    }
  })

  it("runs sent ahead count against their tenant's backlog: one past it is refused (429)", async () => {
    const { pool: p, workers, outcomes, submit } = pool(1, 3, 2)
    try {
      submit('a1', 'A')
      workers[0]!.ready()
      workers[0]!.start()
      // a2 and a3 are sent ahead (the worker holds 3): with a2 and a3 waiting, A's backlog (2) is full.
      submit('a2', 'A')
      submit('a3', 'A')
      expect(names(workers[0]!)).toEqual(['a1', 'a2', 'a3'])
      submit('a4', 'A')
      expect(outcomes.a4).toMatchObject({ ok: false, kind: 'busy' })
      submit('b1', 'B')
      expect(outcomes.b1).toBeUndefined()
    } finally {
      await p.close()
    }
  })

  it('a message that is not one message (an array of them, say) makes the host discard the worker', async () => {
    const { pool: p, workers, outcomes, submit } = pool(1, 2)
    try {
      submit('a1', 'A')
      workers[0]!.ready()
      const a1 = workers[0]!.start()!
      workers[0]!.emit('message', [answerTo(a1)])
      expect(workers[0]!.terminated).toBe(true)
      expect(outcomes.a1).toMatchObject({ ok: false, kind: 'crashed' })
    } finally {
      await p.close()
    }
  })
})

describe('the sandbox runner', () => {
  it('a run costs one message each way: the run, then its answer (its start is a claim in shared memory)', async () => {
    const counts = { sent: 0, received: 0 }
    const runner = sandboxRunner({
      poolSize: 1,
      startWorker: (config) => {
        const worker = startSandboxWorker(config)
        const post = worker.postMessage.bind(worker)
        worker.postMessage = (message: unknown) => {
          counts.sent++
          post(message)
        }
        worker.on('message', () => counts.received++)
        return worker
      },
    })
    try {
      for (let n = 0; n < 5; n++) {
        const outcome = await runner.run(
          'module.exports = async (req) => req.args.n',
          {
            args: { n },
            configuration: {},
          },
          { timeoutMs: 120_000 },
        )
        expect(outcome).toMatchObject({ ok: true, value: n })
      }
      // The worker's `ready`, then one answer per run.
      expect(counts).toEqual({ sent: 5, received: 6 })
    } finally {
      await runner.close()
    }
  })

  it('sends a busy worker at most 3 runs ahead of the one it runs: 4 of 6 waiting runs, not 5', async () => {
    let sent = 0
    let answered = false
    const runner = sandboxRunner({
      poolSize: 1,
      timeoutMs: 300,
      startWorker: (config) => {
        const worker = startSandboxWorker(config)
        const post = worker.postMessage.bind(worker)
        worker.postMessage = (message: unknown) => {
          if (!answered) sent++
          post(message)
        }
        worker.on('message', (message: unknown) => {
          if ([message].flat().some((one) => (one as { t?: unknown } | null)?.t === 'done')) answered = true
        })
        return worker
      },
    })
    try {
      const hang = 'module.exports = async () => { for (;;) {} }'
      const runs = Array.from({ length: 6 }, () =>
        runner.run(hang, { args: {}, configuration: {} }, { timeoutMs: 300 }),
      )
      const first = await runs[0]
      expect(first).toMatchObject({ ok: false, kind: 'timeout' })
      expect(sent).toBe(4)
      await Promise.all(runs)
    } finally {
      await runner.close()
    }
    // Six hung runs, each ending its worker and starting the next: over 10 s on a busy machine.
  }, 120_000)
})

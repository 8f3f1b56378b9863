import { EventEmitter } from 'node:events'
import { Worker } from 'node:worker_threads'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { compileEngine, Engine } from '../../adapters/sandbox/engine.js'
import { startSandboxWorker } from '../../adapters/sandbox/index.js'
import type { RunMessage, WorkerConfig } from '../../adapters/sandbox/messages.js'
import { type Job, type PoolSettings, SandboxPool } from '../../adapters/sandbox/pool.js'
import type { RunOutcome } from '../../src/kernel/runner.js'
import { failure, formulaBody, runnersOfFile, world } from '../formulas/setup.js'

const REQUEST = JSON.stringify({ args: {}, configuration: {} })

/**
 * Each way a run ends, as code. Before every handle of a run was disposed on every path, the first
 * three left the module's handles alive: freeing the run's runtime then aborted the engine
 * (`list_empty(&rt->gc_obj_list)`) and its worker exited, taking the next run with it.
 */
const PATHS: [string, string, Partial<RunOutcome>][] = [
  ['a throw at load time', 'throw new Error("boom")', { kind: 'invalid', message: 'boom' }],
  ['a refused require at load time', "require('fs')", { kind: 'invalid' }],
  ['an endless loop at load time', 'while (true) {}', { kind: 'timeout' }],
  ['a thrown number at load time', 'throw 5', { kind: 'invalid' }],
  ['a thrown error whose getters throw', 'throw { get message() { throw 1 }, get status() { throw 2 } }', {}],
  ['a thrown proxy', 'throw new Proxy({}, { get() { throw 1 } })', { kind: 'invalid' }],
  ['an errors block that fails to stringify', 'throw { errors: { toJSON() { throw 2 } } }', {}],
  ['exports whose getter throws', 'Object.defineProperty(module, "exports", { get() { throw 1 } })', {}],
  ['exports that are not a function', 'module.exports = 5', { kind: 'invalid' }],
  ['a throwing function', 'module.exports = () => { throw new Error("y") }', { kind: 'thrown' }],
  ['a rejection', 'module.exports = async () => { throw { status: 402, errors: { a: ["b"] } } }', {}],
  ['a promise that never settles', 'module.exports = () => new Promise(() => {})', { kind: 'thrown' }],
  ['an answer that is not JSON', 'module.exports = () => ({ toJSON() { throw 1 } })', { kind: 'thrown' }],
  ['a circular answer', 'module.exports = () => { const o = {}; o.o = o; return o }', { kind: 'thrown' }],
  ['an endless loop after an await', 'module.exports = async () => { await null; while (true) {} }', {}],
  [
    'a timer that throws',
    'setTimeout(() => { throw 1 }, 0); module.exports = () => new Promise(() => {})',
    {},
  ],
  ['memory exhausted at load time', 'const a = []; for (;;) a.push(new Array(131072).fill(1))', {}],
  ['a refused require in the call', 'module.exports = () => require("child_process")', { kind: 'thrown' }],
  ['a success', 'module.exports = () => ({ raw: 1 })', { ok: true }],
]

describe('every handle of a run is disposed, on every path', () => {
  let compiled: object
  beforeAll(async () => {
    compiled = await compileEngine()
  })

  it.each(PATHS)('%s: the runtime is freed and the engine goes on', async (_, code, expected) => {
    const engine = await Engine.load(32, 100_000, compiled)
    // Endless loops are stopped at 300 ms; the rest get time enough for a loaded machine.
    const result = await engine.run(code, REQUEST, code.includes('while') ? 300 : 5000)
    expect(result).toMatchObject({ ok: false, ...expected })
    // Frees the run's runtime: a handle left alive would abort here and break the engine.
    engine.prepare()
    expect(engine.broken).toBe(false)
    expect(await engine.run('module.exports = () => ({ raw: 2 })', REQUEST, 1000)).toEqual({
      ok: true,
      json: '{"raw":2}',
      logs: [],
    })
  })
})

/**
 * A worker thread stand-in the test drives step by step (the pool's side is the real one): it starts
 * a run as the real one does, by claiming its cell in the shared `claims` (its start time in `starts`
 * first), and answers with messages.
 */
class FakeWorker extends EventEmitter {
  readonly runs: RunMessage[] = []
  terminated = false
  private readonly claims: Int32Array
  private readonly starts: Float64Array
  constructor(config: WorkerConfig) {
    super()
    this.claims = new Int32Array(config.claims)
    this.starts = new Float64Array(config.starts)
  }
  postMessage(message: RunMessage): void {
    this.runs.push(message)
  }
  get last(): RunMessage {
    return this.runs.at(-1)!
  }
  ready(): void {
    this.emit('message', { t: 'ready' })
  }
  started(): void {
    this.starts[this.last.cell] = performance.timeOrigin + performance.now()
    Atomics.compareExchange(this.claims, this.last.cell, 0, 1)
  }
  answer(value: unknown): void {
    this.emit('message', { t: 'done', id: this.last.id, ok: true, json: JSON.stringify(value), logs: [] })
  }
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

/** A pool over fake workers; `outcomes` holds each job's outcome by name once it has one. */
function fakePool(
  size: number,
  crashPenaltyMs = 60_000,
  maxQueuedPerTenant = 4,
  extra: Partial<PoolSettings> = {},
) {
  const workers: FakeWorker[] = []
  const outcomes: Record<string, RunOutcome> = {}
  const pool = new SandboxPool({
    size,
    memoryMb: 32,
    maxResultChars: 1000,
    maxQueuedPerTenant,
    maxQueued: 100,
    graceMs: 1000,
    startTimeoutMs: 60_000,
    crashPenaltyMs,
    maxCrashPenaltyMs: crashPenaltyMs,
    startWorker: (config: WorkerConfig) => {
      const worker = new FakeWorker(config)
      workers.push(worker)
      return worker as unknown as Worker
    },
    ...extra,
  })
  const submit = (name: string, tenant: string) => {
    const job: Job = {
      tenant,
      code: name,
      request: REQUEST,
      timeoutMs: 60_000,
      done: (outcome) => {
        expect(outcomes[name], `${name} settled twice`).toBeUndefined()
        outcomes[name] = outcome
      },
    }
    pool.submit(job)
  }
  /** The worker holding the run of `name`, if one does. */
  const holder = (name: string) => workers.find((w) => !w.terminated && w.runs.at(-1)?.code === name)
  return { pool, workers, outcomes, submit, holder }
}

describe('a worker that dies fails only the run that killed it', () => {
  it('a worker that dies freeing a run it answered: the other tenant run it was sent next runs again on a fresh worker', async () => {
    const { pool, workers, outcomes, submit, holder } = fakePool(1)
    try {
      submit('a1', 'A')
      workers[0]!.ready()
      submit('b1', 'B')
      workers[0]!.started()
      workers[0]!.answer({ raw: 'a' })
      // The answer freed the worker, so B's run went to it; then freeing A's runtime killed it.
      expect(workers[0]!.last.code).toBe('b1')
      workers[0]!.exit()
      expect(outcomes.a1).toEqual({ ok: true, value: { raw: 'a' }, logs: [] })
      expect(outcomes.b1).toBeUndefined()
      expect(workers).toHaveLength(2)
      workers[1]!.ready()
      expect(holder('b1')).toBe(workers[1])
      workers[1]!.started()
      workers[1]!.answer({ raw: 'b' })
      expect(outcomes.b1).toEqual({ ok: true, value: { raw: 'b' }, logs: [] })
    } finally {
      await pool.close()
    }
  })

  it('a worker that dies in a run fails that run alone; the other worker and its run go on', async () => {
    const { pool, workers, outcomes, submit, holder } = fakePool(2)
    try {
      submit('a1', 'A')
      submit('b1', 'B')
      for (const w of workers) w.ready()
      for (const w of workers) w.started()
      holder('a1')!.exit()
      expect(outcomes.a1).toMatchObject({ ok: false, kind: 'crashed', message: 'the sandbox worker stopped' })
      holder('b1')!.answer({ raw: 'b' })
      expect(outcomes.b1).toMatchObject({ ok: true, value: { raw: 'b' } })
    } finally {
      await pool.close()
    }
  })

  it('a run is sent again once: a second worker that dies before starting it fails it', async () => {
    const { pool, workers, outcomes, submit } = fakePool(1)
    try {
      submit('b1', 'B')
      workers[0]!.ready()
      workers[0]!.exit()
      expect(outcomes.b1).toBeUndefined()
      workers[1]!.ready()
      expect(workers[1]!.last.code).toBe('b1')
      workers[1]!.exit()
      expect(outcomes.b1).toMatchObject({ ok: false, kind: 'crashed' })
      expect(workers).toHaveLength(3)
    } finally {
      await pool.close()
    }
  })

  it("a run sent next to workers another tenant's runs killed runs however often that happens", async () => {
    const { pool, workers, outcomes, submit } = fakePool(1, 0)
    try {
      submit('a1', 'A')
      workers[0]!.ready()
      submit('b1', 'B')
      // Three times: an A run answers, freeing its runtime kills the worker, which was sent b1 next.
      for (let kill = 0; kill < 3; kill++) {
        const w = workers[kill]!
        if (kill > 0) {
          submit(`a${kill + 1}`, 'A')
          w.ready()
        }
        // The A run goes first (b1 was sent last), then b1 is sent to the worker it is about to kill.
        expect(w.last.code).toBe(`a${kill + 1}`)
        w.started()
        w.answer({ raw: w.last.code })
        expect(w.last.code).toBe('b1')
        w.exit()
        expect(outcomes.b1).toBeUndefined()
      }
      const last = workers[3]!
      last.ready()
      while (outcomes.b1 === undefined) {
        last.started()
        last.answer({ raw: last.last.code })
      }
      expect(outcomes.b1).toEqual({ ok: true, value: { raw: 'b1' }, logs: [] })
      expect(['a1', 'a2', 'a3'].map((n) => outcomes[n]?.ok)).toEqual([true, true, true])
    } finally {
      await pool.close()
    }
  })

  it('a worker that goes silent before starting a run is replaced; the run goes to the next one', async () => {
    const { pool, workers, outcomes, submit } = fakePool(1)
    try {
      submit('b1', 'B')
      workers[0]!.ready()
      // An answer about another run than the one it holds: discarded, and the run never started there.
      workers[0]!.emit('message', { t: 'done', id: workers[0]!.last.id + 1, ok: true, json: '1', logs: [] })
      expect(workers[0]!.terminated).toBe(true)
      workers[1]!.ready()
      workers[1]!.started()
      workers[1]!.answer({ raw: 'b' })
      expect(outcomes.b1).toMatchObject({ ok: true, value: { raw: 'b' } })
    } finally {
      await pool.close()
    }
  })
})

describe('the tenant whose runs kill workers is the one that waits', () => {
  it('its runs are held in its own backlog (429 once full) while the other tenant is served', async () => {
    const { pool, workers, outcomes, submit, holder } = fakePool(2, 60_000, 4)
    try {
      submit('a1', 'A')
      for (const w of workers) w.ready()
      holder('a1')!.started()
      holder('a1')!.exit()
      expect(outcomes.a1).toMatchObject({ ok: false, kind: 'crashed' })
      for (const n of [2, 3, 4, 5]) submit(`a${n}`, 'A')
      submit('b1', 'B')
      submit('b2', 'B')
      workers[2]!.ready()
      // Both free workers serve B; A's runs wait out its penalty.
      expect(holder('b1')).toBeDefined()
      expect(holder('b2')).toBeDefined()
      expect(workers.some((w) => w.runs.some((r) => r.code === 'a2'))).toBe(false)
      submit('a6', 'A')
      expect(outcomes.a6).toMatchObject({ ok: false, kind: 'busy' })
      expect((outcomes.a6 as { retryAfterSec: number }).retryAfterSec).toBeGreaterThanOrEqual(59)
      submit('b3', 'B')
      for (const name of ['b1', 'b2']) {
        const w = holder(name)!
        w.started()
        w.answer({ raw: name })
      }
      expect(holder('b3')).toBeDefined()
      expect(outcomes).toMatchObject({ b1: { ok: true }, b2: { ok: true } })
      expect(['a2', 'a3', 'a4', 'a5'].map((n) => outcomes[n])).toEqual([
        undefined,
        undefined,
        undefined,
        undefined,
      ])
    } finally {
      await pool.close()
    }
  })

  it('the wait is 250 ms after a first kill, doubling with each kill up to 5 s, forgotten a minute after the last', async () => {
    let t = 0
    const { pool, workers, submit } = fakePool(1, 250, 64, { maxCrashPenaltyMs: 5000, now: () => t })
    try {
      submit('a0', 'A')
      workers[0]!.ready()
      /** Kills the worker holding A's run at `t`; answers whether A's next run waited exactly `wait`. */
      const killThenWait = (wait: number) => {
        const live = workers.at(-1)!
        expect(live.runs).toHaveLength(1)
        live.started()
        live.exit()
        const fresh = workers.at(-1)!
        fresh.ready()
        t += wait - 1
        submit(`early ${t}`, 'A')
        const early = fresh.runs.length
        t += 1
        submit(`due ${t}`, 'A')
        return { early, due: fresh.runs.length }
      }
      for (const wait of [250, 500, 1000, 2000, 4000, 5000, 5000])
        expect(killThenWait(wait), `${wait} ms`).toEqual({ early: 0, due: 1 })
      // A minute without a kill and they are forgotten: the next kill costs 250 ms again.
      t += 60_001
      expect(killThenWait(250)).toEqual({ early: 0, due: 1 })
    } finally {
      await pool.close()
    }
  })

  it('after its wait, it has one run in a worker at a time while others get the rest', async () => {
    const { pool, workers, outcomes, submit, holder } = fakePool(3, 0)
    try {
      submit('a1', 'A')
      for (const w of workers) w.ready()
      holder('a1')!.started()
      holder('a1')!.answer({ raw: 1 })
      // The worker dies freeing A's runtime: A's doing.
      workers[0]!.exit()
      workers[3]!.ready()
      for (const n of [2, 3, 4]) submit(`a${n}`, 'A')
      submit('b1', 'B')
      submit('b2', 'B')
      const held = ['a2', 'a3', 'a4'].filter((n) => holder(n))
      expect(held).toEqual(['a2'])
      expect(holder('b1')).toBeDefined()
      expect(holder('b2')).toBeDefined()
      holder('a2')!.started()
      holder('a2')!.answer({ raw: 2 })
      expect(outcomes.a2).toMatchObject({ ok: true })
      expect(['a3', 'a4'].filter((n) => holder(n))).toEqual(['a3'])
    } finally {
      await pool.close()
    }
  })
})

const { open, closeAll } = runnersOfFile()
afterAll(closeAll)

/** Two tenants' reactors over `runner`: A's formula is `crashing`, B's answers its argument. */
async function flood(runner: ReturnType<typeof open>, crashing: string[]) {
  const w = await world({ runner, reactorTimeoutMs: 500 })
  const reactorOf = async (t: typeof w.a, code: string) => {
    const formula = await t.admin.reactorFormulas.create(
      formulaBody({ code, configuration: [], request_parameters: [{ name: 'n', type: 'number' }] }),
    )
    return (await t.admin.reactors.create({ name: 'r', formula_id: formula.id })).id
  }
  const bad = await Promise.all(crashing.map((code) => reactorOf(w.a, code)))
  const good = await reactorOf(w.b, 'module.exports = async (req) => ({ raw: req.args.n })')
  return { w, bad, good }
}

describe('one tenant floods crashing formulas; the other tenant’s reacts all succeed', () => {
  it('load-time throws, refused requires and endless loops: no worker dies, every B react succeeds', async () => {
    // A worker that exits without the pool ending it died. (The pool may start one worker more for
    // B while A's endless loops hold both, and end it once free: that one is ended, not dead.)
    let starts = 0
    let died = 0
    const runner = open({
      poolSize: 2,
      startWorker: (config) => {
        starts++
        const worker = startSandboxWorker(config)
        let ended = false
        const terminate = worker.terminate.bind(worker)
        worker.terminate = () => {
          ended = true
          return terminate()
        }
        worker.on('exit', () => {
          if (!ended) died++
        })
        return worker
      },
    })
    const { w, bad, good } = await flood(runner, [
      'throw new Error("at load")',
      "require('fs')",
      'while (true) {}',
    ])
    const attacks = Array.from({ length: 9 }, (_, i) =>
      failure(w.a.client.reactors.react(bad[i % 3]!, { args: { n: i } })),
    )
    const reacts = Array.from({ length: 16 }, (_, n) => w.b.client.reactors.react(good, { args: { n } }))
    expect(await Promise.all(reacts)).toEqual(Array.from({ length: 16 }, (_, n) => ({ raw: n, tokens: {} })))
    const failed = await Promise.all(attacks)
    expect(failed.map((e) => `${e.code} ${e.status ?? ''}`).sort()).toEqual([
      ...Array.from({ length: 3 }, () => 'formula_failed 504'),
      ...Array.from({ length: 6 }, () => 'formula_invalid '),
    ])
    expect(died).toBe(0)
    expect(starts).toBeGreaterThanOrEqual(2)
  }, 30_000)

  it('formulas that kill their worker: only their own runs fail, and every B react succeeds', {
    timeout: 60_000,
  }, async () => {
    let starts = 0
    const worker = JSON.stringify(new URL('../../adapters/sandbox/worker.ts', import.meta.url).href)
    // A real sandbox worker, except that a run whose code says so kills it: after its answer (as an
    // engine that can't free the run's runtime does) or in the middle of the run, a few ms after the
    // worker claimed it (started it). Runs are told apart by id: a busy worker may hold several.
    const boot = `const { parentPort, workerData } = require('node:worker_threads')
      const claims = new Int32Array(workerData.claims)
      const post = parentPort.postMessage.bind(parentPort)
      const codes = new Map()
      parentPort.on('message', (m) => {
        codes.set(m.id, m.code)
        if (!m.code.includes('DIE_IN_RUN')) return
        const look = setInterval(() => {
          const state = Atomics.load(claims, m.cell)
          if (state !== 0) clearInterval(look)
          if (state === 1) setTimeout(() => process.exit(1), 5)
        }, 1)
      })
      parentPort.postMessage = (m) => {
        const code = codes.get(m.id) ?? ''
        if (m.t === 'done' && code.includes('DIE_AFTER')) { post(m); process.exit(1) }
        post(m)
      }
      import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${worker}) })`
    const runner = open({
      poolSize: 2,
      crashPenaltyMs: 20,
      startWorker: (config) => {
        starts++
        return new Worker(boot, { eval: true, workerData: config, env: {} })
      },
    })
    const { w, bad, good } = await flood(runner, [
      'module.exports = async () => ({ raw: "DIE_AFTER" })',
      'module.exports = () => new Promise((r) => setTimeout(r, 300)) // DIE_IN_RUN',
    ])
    const attacks = Array.from({ length: 6 }, (_, i) =>
      w.a.client.reactors.react(bad[i % 2]!, { args: { n: i } }).then(
        (answer) => ({ answer }),
        (error: { status?: number }) => ({ status: error.status }),
      ),
    )
    const reacts = Array.from({ length: 12 }, (_, n) => w.b.client.reactors.react(good, { args: { n } }))
    expect(await Promise.all(reacts)).toEqual(Array.from({ length: 12 }, (_, n) => ({ raw: n, tokens: {} })))
    const outcomes = await Promise.all(attacks)
    // A's runs that killed their worker after answering were answered; the ones killed mid-run failed.
    expect(outcomes.filter((_, i) => i % 2 === 0)).toEqual(
      Array.from({ length: 3 }, () => ({ answer: { raw: 'DIE_AFTER', tokens: {} } })),
    )
    // A killed run fails with 500; on a machine at load 16-19 one sent again to a worker still booting
    // can run out of its time first, a 504. Either is a failure of A's run alone, never an answer.
    const killed = outcomes.filter((_, i) => i % 2 === 1)
    expect(killed).toHaveLength(3)
    for (const outcome of killed) expect([{ status: 500 }, { status: 504 }]).toContainEqual(outcome)
    // Each answered DIE_AFTER run killed its worker. A DIE_IN_RUN run may have failed unstarted, held
    // behind another of A's runs by two workers that died (it is sent again once for its own tenant).
    expect(starts).toBeGreaterThanOrEqual(2 + 3)
  })
})

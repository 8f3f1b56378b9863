import { Worker } from 'node:worker_threads'
import { afterAll, describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import {
  compileError,
  sandboxRunner,
  startSandboxWorker,
  workerRunner,
} from '../../adapters/sandbox/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { countingStarts, runnersOfFile } from '../formulas/setup.js'

const request = { args: { n: 1 }, configuration: { region: 'eu' } }
/**
 * The deadline of a run that must end otherwise than by its deadline (answer, crash, refusal): one
 * no loaded machine reaches. With 2 to 5 s, runs on a busy machine were answered `timeout`.
 */
const ample = 120_000
const { open, closeAll } = runnersOfFile()
afterAll(closeAll)

describe('sandboxRunner', () => {
  it('is also exported under its old name', () => {
    expect(workerRunner).toBe(sandboxRunner)
  })

  it('compile-checks without running, as a CommonJS module body', async () => {
    const runner = open()
    expect(await runner.check('module.exports = async (req) => ({ raw: req })')).toBeNull()
    expect(await runner.check('return 5')).toBeNull()
    expect(await runner.check('globalThis.ran = true; module.exports = 1')).toBeNull()
    expect((globalThis as { ran?: boolean }).ran).toBeUndefined()
    expect(await runner.check('module.exports = async (req) => {')).toMatch(/^SyntaxError/)
    expect(await compileError('}); (function () {')).toMatch(/^SyntaxError/)
  })

  it('answers with the JSON value and the captured console, capped', async () => {
    const runner = open({ poolSize: 1 })
    const code = `module.exports = async (req) => {
      console.log('args', req.args, 1, null)
      console.error(new Error('oops').message)
      for (let i = 0; i < 200; i++) console.info('x'.repeat(3000))
      return { raw: { sum: req.args.n + 1, when: new Date(0).toISOString() } }
    }`
    const outcome = await runner.run(code, request, { timeoutMs: ample })
    expect(outcome.ok).toBe(true)
    if (!outcome.ok) return
    expect(outcome.value).toEqual({ raw: { sum: 2, when: '1970-01-01T00:00:00.000Z' } })
    expect(outcome.logs.slice(0, 2)).toEqual(['args {"n":1} 1 null', 'oops'])
    expect(outcome.logs).toHaveLength(100)
    expect(outcome.logs[2]).toHaveLength(2000)
  })

  it('a hung run fails alone with `timeout`; every other run succeeds', async () => {
    const runner = open({ poolSize: 1 })
    const ok = 'module.exports = async (req) => ({ raw: req.args.n })'
    const runs = Array.from({ length: 20 }, (_, n) =>
      runner.run(
        n === 7 ? 'module.exports = async () => { while (true) {} }' : ok,
        { ...request, args: { n } },
        { timeoutMs: n === 7 ? 500 : ample },
      ),
    )
    const outcomes = await Promise.all(runs)
    outcomes.forEach((outcome, n) => {
      if (n === 7) expect(outcome).toMatchObject({ ok: false, kind: 'timeout' })
      else expect(outcome).toMatchObject({ ok: true, value: { raw: n } })
    })
  })

  it('a run out of memory is `crashed`; the runner goes on', async () => {
    const runner = open({ poolSize: 1, memoryMb: 32 })
    const boom = 'module.exports = async () => { const a = []; for (;;) a.push(new Array(131072).fill(1)) }'
    const [outcome, other] = await Promise.all([
      runner.run(boom, request, { timeoutMs: ample }),
      runner.run('module.exports = async () => ({ raw: "fine" })', request, { timeoutMs: ample }),
    ])
    expect(outcome).toMatchObject({ ok: false, kind: 'crashed', message: 'it ran out of memory' })
    expect(other).toMatchObject({ ok: true, value: { raw: 'fine' } })
    expect(
      await runner.run('module.exports = () => ({ raw: 2 })', request, { timeoutMs: ample }),
    ).toMatchObject({ ok: true, value: { raw: 2 } })
  }, 120_000)

  it('bounds the answer size, and never takes a resolver from an earlier run', async () => {
    const runner = open({ poolSize: 1, maxResultChars: 1000 })
    const big = await runner.run('module.exports = () => ({ raw: "x".repeat(2000) })', request, {
      timeoutMs: ample,
    })
    expect(big).toMatchObject({
      ok: false,
      kind: 'thrown',
      message: expect.stringContaining('1000 characters'),
    })
    const sneaky = `let previous
      module.exports = (req) => {
        if (previous) previous({ raw: 'stolen' })
        return new Promise((resolve) => { previous = resolve; if (req.args.n === 2) resolve({ raw: 'mine' }) })
      }`
    const first = await runner.run(sneaky, { ...request, args: { n: 1 } }, { timeoutMs: ample })
    expect(first).toMatchObject({
      ok: false,
      kind: 'thrown',
      message: expect.stringContaining('never settled'),
    })
    const second = await runner.run(sneaky, { ...request, args: { n: 2 } }, { timeoutMs: ample })
    expect(second).toMatchObject({ ok: true, value: { raw: 'mine' } })
  })

  it('a worker that sends a malformed message is discarded; the host neither throws nor stops', async () => {
    // A worker starts a run by claiming its cell (no message); then it lies.
    const started = 'Atomics.compareExchange(claims, m.cell, 0, 1);'
    const liars = [
      `(m) => { ${started} parentPort.postMessage({ t: "done", id: m.id, ok: true, json: 5, logs: "x" }) }`,
      `(m) => { ${started} parentPort.postMessage({ t: "done", id: m.id + 1, ok: true, json: "1", logs: [] }) }`,
      `(m) => { ${started} parentPort.postMessage(null) }`,
      `(m) => { ${started} parentPort.postMessage({ t: "done", id: m.id, ok: false, kind: "pwned", message: "x" }) }`,
      `(m) => { ${started} parentPort.postMessage({ t: "started", id: m.id }) }`,
      `(m) => { ${started} parentPort.postMessage([{ t: "done", id: m.id, ok: true, json: "1", logs: [] }]) }`,
    ]
    // A worker that answers a run it never claimed never ran it: the run goes to a fresh worker.
    const early = '(m) => parentPort.postMessage({ t: "done", id: m.id, ok: true, json: "666", logs: [] })'
    for (const liar of [...liars, early]) {
      let starts = 0
      const runner = open({
        poolSize: 1,
        startWorker: (config) =>
          starts++ === 0
            ? new Worker(
                `const { parentPort, workerData } = require('node:worker_threads'); const claims = new Int32Array(workerData.claims); parentPort.postMessage({ t: "ready" }); parentPort.on("message", ${liar})`,
                { eval: true, workerData: config },
              )
            : startSandboxWorker(config),
      })
      const outcome = await runner.run('module.exports = () => ({ raw: 1 })', request, { timeoutMs: ample })
      if (liar === early) expect(outcome).toMatchObject({ ok: true, value: { raw: 1 } })
      else expect(outcome, liar).toMatchObject({ ok: false, kind: 'crashed' })
      expect(
        await runner.run('module.exports = () => ({ raw: 1 })', request, { timeoutMs: ample }),
      ).toMatchObject({ ok: true, value: { raw: 1 } })
      expect(starts).toBe(2)
    }
  }, 120_000)

  it('close ends runs in flight and later ones as crashed; service.close closes its runner', async () => {
    // The worker's claim of the run says the run holds it: close comes while the run is in flight.
    const starts = countingStarts()
    const runner = sandboxRunner({ poolSize: 1, startWorker: starts.startWorker })
    const pending = runner.run('module.exports = async () => { while (true) {} }', request, {
      timeoutMs: ample,
    })
    await starts.started(1)
    const service = createService({ store: memoryStore(), clock: manualClock(), runner })
    await service.close()
    expect(await pending).toMatchObject({ ok: false, kind: 'crashed' })
    expect(await runner.run('module.exports = () => 1', request, { timeoutMs: 100 })).toMatchObject({
      ok: false,
      kind: 'crashed',
      message: 'the formula runner is closed',
    })
  })
})

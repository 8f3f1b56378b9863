import { beforeAll, describe, expect, it } from 'vitest'
import { compileEngine, Engine } from '../../adapters/sandbox/engine.js'

const REQUEST = JSON.stringify({ args: {}, configuration: {} })
const MIB = 1024 * 1024

/**
 * One engine serves every run of its worker: after each run its WebAssembly memory is copied back
 * from the snapshot taken once its context was set up. These runs share one engine on purpose.
 */
describe('every run of an engine starts from its snapshot', () => {
  let compiled: object
  let engine: Engine
  /**
   * Runs `code` (a module body) on the shared engine, then restores it as the worker does when idle.
   * A run that must end otherwise than by its deadline gets one no loaded machine reaches (a memory
   * bomb on a busy machine was answered `timeout` at 5 s before it ran out of memory).
   */
  const run = async (code: string, timeoutMs = 120_000) => {
    const result = await engine.run(code, REQUEST, timeoutMs)
    engine.prepare()
    expect(engine.broken).toBe(false)
    return result
  }
  const answer = async (code: string) => {
    const result = await run(code)
    if (!result.ok) throw new Error(`${result.kind}: ${result.message}`)
    return { value: JSON.parse(result.json) as unknown, logs: result.logs }
  }

  beforeAll(async () => {
    compiled = await compileEngine()
    engine = await Engine.load(32, 100_000, compiled)
  })

  it('the copy leaves the engine C stack (5 MiB) out: a few hundred KB, not megabytes', () => {
    expect(engine.snapshotBytes).toBeGreaterThan(0)
    expect(engine.snapshotBytes).toBeLessThan(MIB)
  })

  it("the copy goes past the heap's last byte to a whole word: the allocator's last fields, written over by a run, are as they were", async () => {
    type Ranges = { ranges: { at: number; bytes: Uint8Array }[]; memory: { buffer: ArrayBuffer } }
    const { ranges, memory } = (engine as unknown as { snapshot: Ranges }).snapshot
    const last = ranges.at(-1)!
    const end = last.at + last.bytes.length
    expect(end % 16).toBe(0)
    const around = () => [...new Uint8Array(memory.buffer).subarray(end - 512, end)]
    expect(around().slice(-256)).toEqual(Array.from({ length: 256 }, () => 0))
    const before = around()
    // Strings of 'x' fill the memory past the heap's top as it was, then the run ends.
    await run(
      'module.exports = async () => { const a = []; for (let i = 0; i < 2000; i++) a.push("x".repeat(1000) + i); return a.length }',
    )
    expect(around()).toEqual(before)
    expect(
      await answer(
        'module.exports = async () => { const a = []; for (let i = 0; i < 2000; i++) a.push("y".repeat(1000) + i); return a.length }',
      ),
    ).toEqual({ value: 2000, logs: [] })
  })

  it('a global, a prototype, a built-in and a prelude module changed by one run are as new in the next', async () => {
    const changes = `Buffer.poisoned = true
      require('crypto').createHash = () => { throw new Error('stolen') }
      globalThis.leak = 1
      Object.prototype.poisoned = 'yes'
      JSON.parse = () => 'stolen'
      Array.prototype.map = function () { return ['stolen'] }
      module.exports = async () => ({ changed: true })`
    const looks = `module.exports = async (req) => ({
      leak: typeof leak, poisoned: typeof ({}).poisoned, parse: JSON.parse('[1]'), map: [1].map((x) => x + 1),
      buffer: typeof Buffer.poisoned, hash: require('crypto').createHash('sha256').update('x').digest('hex').length,
      args: req.args,
    })`
    const fresh = {
      leak: 'undefined',
      poisoned: 'undefined',
      parse: [1],
      map: [2],
      buffer: 'undefined',
      hash: 64,
      args: {},
    }
    expect(await answer(looks)).toEqual({ value: fresh, logs: [] })
    expect(await answer(changes)).toEqual({ value: { changed: true }, logs: [] })
    expect(await answer(looks)).toEqual({ value: fresh, logs: [] })
  })

  it('a pending promise job, timer or interval of one run never runs in the next', async () => {
    const leaves = `module.exports = async () => {
      Promise.resolve().then(() => Promise.resolve()).then(() => { globalThis.fromJob = 1; console.log('job of the first run') })
      setTimeout(() => { globalThis.fromTimer = 1; console.log('timer of the first run') }, 0)
      setInterval(() => console.log('interval of the first run'), 1)
      return 'left'
    }`
    const waits = `module.exports = async () => {
      await new Promise((resolve) => setTimeout(resolve, 30))
      return { job: typeof fromJob, timer: typeof fromTimer }
    }`
    expect(await answer(leaves)).toEqual({ value: 'left', logs: [] })
    expect(await answer(waits)).toEqual({ value: { job: 'undefined', timer: 'undefined' }, logs: [] })
  })

  it('a run out of memory, or stopped at its deadline, leaves the next run its whole memory and fresh state', async () => {
    // About 16 MiB of live strings: it fits in a fresh 32 MiB engine, not beside what a bomb kept.
    const big = `module.exports = async () => {
      const parts = []
      for (let i = 0; i < 16; i++) parts.push('x'.repeat(1024 * 1024 - 64) + i)
      return { parts: parts.length, leak: typeof leak }
    }`
    const bomb = `globalThis.leak = 1; module.exports = async () => { const a = []; for (;;) a.push('y'.repeat(4096) + a.length) }`
    const hang = `globalThis.leak = 1; const kept = []; for (let i = 0; i < 1000; i++) kept.push({ i })
      module.exports = async () => { for (;;) kept.push('z'.repeat(64)) }`
    expect(await answer(big)).toEqual({ value: { parts: 16, leak: 'undefined' }, logs: [] })
    for (let i = 0; i < 2; i++) {
      expect(await run(bomb)).toMatchObject({ ok: false, kind: 'crashed', message: 'it ran out of memory' })
      expect(await answer(big)).toEqual({ value: { parts: 16, leak: 'undefined' }, logs: [] })
      expect(await run(hang, 100)).toMatchObject({ ok: false, kind: 'timeout' })
      expect(await answer(big)).toEqual({ value: { parts: 16, leak: 'undefined' }, logs: [] })
    }
  }, 300_000)

  it('host functions the engine freed during a run (console, require) work again in the next', async () => {
    // Deleting the last reference frees them at once (QuickJS counts references), and with them
    // the host's record of the functions they call.
    const frees = `module.exports = async () => { delete globalThis.console; delete globalThis.require; return 'freed' }`
    expect(await answer(frees)).toEqual({ value: 'freed', logs: [] })
    expect(
      await answer(
        `module.exports = async () => { console.log('still here'); return typeof require('util').format }`,
      ),
    ).toEqual({ value: 'function', logs: ['still here'] })
  })

  it('a restore asked for while a run waits (a timer, a request) waits for the run to end', async () => {
    const pending = engine.run(
      `module.exports = async () => { globalThis.mine = 1; await new Promise((r) => setTimeout(r, 30)); return typeof mine }`,
      REQUEST,
      120_000,
    )
    // What the worker does when idle: asked in the middle of the run, it must not touch it.
    engine.prepare()
    await new Promise((resolve) => setTimeout(resolve, 10))
    engine.prepare()
    expect(await pending).toEqual({ ok: true, json: '"number"', logs: [] })
    engine.prepare()
    expect(await answer('module.exports = async () => typeof mine')).toEqual({ value: 'undefined', logs: [] })
  })

  it('an engine answers a second run given while one is under way as crashed, and the first goes on', async () => {
    const first = engine.run(
      `module.exports = async () => { await new Promise((r) => setTimeout(r, 20)); return 1 }`,
      REQUEST,
      120_000,
    )
    expect(await engine.run('module.exports = async () => 2', REQUEST, 1000)).toMatchObject({
      ok: false,
      kind: 'crashed',
    })
    expect(await first).toEqual({ ok: true, json: '1', logs: [] })
    engine.prepare()
  })
})

describe('an engine build whose layout is not known', () => {
  it('is snapshotted whole (the stack too): slower, and every run still starts from fresh state', async () => {
    const engine = await Engine.load(32, 100_000, await compileEngine(), undefined, true)
    expect(engine.snapshotBytes).toBeGreaterThan(5 * MIB)
    const changes = `globalThis.leak = 1; Object.prototype.poisoned = 1
      module.exports = async () => { const a = []; for (;;) a.push('y'.repeat(4096)) }`
    const looks = 'module.exports = async () => [typeof leak, typeof ({}).poisoned]'
    expect(await engine.run(changes, REQUEST, 120_000)).toMatchObject({ ok: false, kind: 'crashed' })
    engine.prepare()
    expect(await engine.run(looks, REQUEST, 120_000)).toEqual({
      ok: true,
      json: '["undefined","undefined"]',
      logs: [],
    })
    engine.prepare()
    expect(engine.broken).toBe(false)
  }, 120_000)
})

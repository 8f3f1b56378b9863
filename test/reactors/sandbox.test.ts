import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { failure, formulaBody, sharedRunner, world } from '../formulas/setup.js'

const runner = sharedRunner()
beforeAll(async () => {
  await runner
    .get()
    .run('module.exports = async () => ({})', { args: {}, configuration: {} }, { timeoutMs: 5000 })
})
afterAll(() => runner.close())

const NORMAL = 'module.exports = async function (req) { return { raw: { echo: req.args } } }'

/** Tenant `a` with a hostile reactor and a normal one; timeouts of 1 s. */
async function hostile(code: string) {
  const w = await world({ runner: runner.get(), reactorTimeoutMs: 1000 })
  const make = async (source: string) => {
    const formula = await w.a.admin.reactorFormulas.create(
      formulaBody({ code: source, configuration: [], request_parameters: [] }),
    )
    return w.a.admin.reactors.create({ name: 'r', formula_id: formula.id })
  }
  const bad = await make(code)
  const good = await make(NORMAL)
  const normal = async (n: number) => {
    expect(await w.a.client.reactors.react(good.id, { args: { n } })).toEqual({
      raw: { echo: { n } },
      tokens: {},
    })
  }
  /** Runs the hostile reactor with a normal one beside it, then another normal one; returns the hostile error. */
  const attack = async () => {
    const [error] = await Promise.all([failure(w.a.client.reactors.react(bad.id, {})), normal(1)])
    await normal(2)
    return error
  }
  return { ...w, attack }
}

describe('hostile formulas are answered with a problem while the host keeps serving', () => {
  it.each([
    ['an infinite loop', 'module.exports = async () => { while (true) {} }'],
    ['an infinite loop inside a promise', 'module.exports = async () => { await null; while (true) {} }'],
    ['a loop at load time', 'for (;;) {}\nmodule.exports = async () => ({})'],
    ['an endless chain of microtasks', 'module.exports = async () => { for (;;) await null }'],
  ])('%s → formula_failed 504', async (_, code) => {
    const error = await (await hostile(code)).attack()
    expect({ code: error.code, status: error.status }).toEqual({ code: 'formula_failed', status: 504 })
    expect(error.message).toContain('1000 ms')
  })

  it.each([
    [
      '1 GB in 1 MiB arrays',
      'const a = []; for (let i = 0; i < 1024; i++) a.push(new Array(131072).fill(i)); return { raw: a.length }',
    ],
    ['1 GB in one array', 'return { raw: new Array(2 ** 27).fill(0).length }'],
    ['a 1 GB ArrayBuffer', 'return { raw: new ArrayBuffer(2 ** 30).byteLength }'],
  ])('%s → formula_failed', async (_, body) => {
    const error = await (await hostile(`module.exports = async () => { ${body} }`)).attack()
    expect(error.code).toBe('formula_failed')
    expect([500, 504]).toContain(error.status)
  })

  it.each([
    ['process.exit()', 'process.exit(1)', 'process is not defined'],
    [
      "require('fs')",
      'return require("fs").readFileSync("/etc/passwd", "utf8")',
      'require(fs) is not available',
    ],
    ['a stack overflow', 'const f = () => f(); f()', 'call stack'],
  ])('%s → formula_failed 500', async (_, body, message) => {
    const error = await (await hostile(`module.exports = async () => { ${body} }`)).attack()
    expect({ code: error.code, status: error.status }).toEqual({ code: 'formula_failed', status: 500 })
    expect(error.message).toContain(message)
  })

  it("can't see the host's globals, reach its realm, or load modules", async () => {
    const g = globalThis as { hostSecret?: string }
    g.hostSecret = 'the host secret'
    const probe = `module.exports = async function () {
      const attempt = async (f) => { try { const v = await f(); return typeof v } catch (e) { return 'blocked' } }
      return { raw: {
        secret: typeof hostSecret + '/' + typeof globalThis.hostSecret,
        globals: ['process', 'require', 'Buffer', 'setTimeout', 'fetch', 'ArrayBuffer', 'Uint8Array', 'SharedArrayBuffer',
          'WebAssembly', 'Atomics', 'FinalizationRegistry', 'structuredClone'].filter((n) => typeof globalThis[n] !== 'undefined'),
        viaConstructor: await attempt(() => this.constructor.constructor('return process')()),
        viaGlobal: await attempt(() => globalThis.constructor.constructor('return process')()),
        viaFunction: await attempt(() => Function('return process')()),
        viaAsync: await attempt(() => (async () => {}).constructor('return process')()),
        viaConsole: await attempt(() => console.log.constructor('return process')()),
        viaModule: await attempt(() => module.constructor.constructor('return process')()),
        viaStack: await attempt(() => {
          Error.prepareStackTrace = (e, frames) => frames.map((f) => f.getThis && f.getThis()).find((t) => t && t.process)
          const found = new Error().stack
          Error.prepareStackTrace = undefined
          return found && found.process
        }),
        viaImport: await attempt(() => import('node:fs')),
        viaEval: await attempt(() => eval('process')),
      } }
    }`
    const w = await hostile(probe)
    const formula = await w.a.admin.reactorFormulas.create(
      formulaBody({ code: probe, configuration: [], request_parameters: [] }),
    )
    const reactor = await w.a.admin.reactors.create({ name: 'probe', formula_id: formula.id })
    const answer = await w.a.client.reactors.react(reactor.id, {})
    expect(answer.raw).toEqual({
      secret: 'undefined/undefined',
      globals: [],
      viaConstructor: 'blocked',
      viaGlobal: 'blocked',
      viaFunction: 'blocked',
      viaAsync: 'blocked',
      viaConsole: 'blocked',
      viaModule: 'blocked',
      viaStack: 'undefined',
      viaImport: 'blocked',
      viaEval: 'blocked',
    })
    delete g.hostSecret
  })

  it("keeps a formula's module state per tenant: one tenant never sees another's", async () => {
    const w = await world({ runner: runner.get() })
    const code =
      'let seen = []; module.exports = async (req) => { seen.push(req.args.who); return { raw: seen } }'
    const pub = await w.service.admin.createOfficialFormula(
      formulaBody({ type: 'official', code, configuration: [], request_parameters: [] }),
    )
    const ra = await w.a.admin.reactors.create({ name: 'r', formula_id: pub.id })
    const rb = await w.b.admin.reactors.create({ name: 'r', formula_id: pub.id })
    for (let i = 0; i < 4; i++) await w.a.client.reactors.react(ra.id, { args: { who: 'a' } })
    expect((await w.b.client.reactors.react(rb.id, { args: { who: 'b' } })).raw).toEqual(['b'])
  })
})

import { beforeAll, describe, expect, it } from 'vitest'
import { compileEngine, Engine, type RunResult } from '../../adapters/sandbox/engine.js'

const REQUEST = JSON.stringify({ args: { a: 1 }, configuration: { region: 'eu' } })

/**
 * The run driver (adapters/sandbox/prelude/driver.js) loads the module and calls its function in one
 * call into the engine; each stage where a run can stop answers its own kind and message.
 */
describe('the run driver answers each stage where a run stops', () => {
  let engine: Engine
  const run = async (code: string, request = REQUEST, timeoutMs = 5000): Promise<RunResult> => {
    const result = await engine.run(code, request, timeoutMs)
    engine.prepare()
    expect(engine.broken).toBe(false)
    return result
  }

  beforeAll(async () => {
    engine = await Engine.load(32, 100_000, await compileEngine())
  })

  it.each<[string, string, RunResult]>([
    [
      'code that closes its wrapper early, leaving no function',
      '}); (void function () {',
      { ok: false, kind: 'invalid', message: 'the formula code must be a module body' },
    ],
    [
      'a syntax error',
      'module.exports = async () => {',
      { ok: false, kind: 'invalid', message: expect.stringMatching(/^SyntaxError: /) as unknown as string },
    ],
    [
      'a module body that throws',
      'throw new Error("at load")',
      { ok: false, kind: 'invalid', message: 'at load' },
    ],
    [
      'exports whose getter throws (a failed load, not a broken engine)',
      'Object.defineProperty(module, "exports", { get() { throw new Error("getter") } })',
      { ok: false, kind: 'invalid', message: 'getter' },
    ],
    [
      'no exported function',
      'exports.handler = async () => ({})',
      {
        ok: false,
        kind: 'invalid',
        message: 'the formula must export a function (module.exports = async function (req) { ... })',
      },
    ],
    [
      'a function that throws before answering a promise',
      'module.exports = function () { throw Object.assign(new Error("sync"), { status: 418 }) }',
      { ok: false, kind: 'thrown', message: 'sync', status: 418 },
    ],
    [
      'a rejected promise',
      'module.exports = async function () { throw new Error("async") }',
      { ok: false, kind: 'thrown', message: 'async' },
    ],
  ])('%s', async (_, code, expected) => {
    expect(await run(code)).toEqual(expected)
  })

  it('a module body stopped at its deadline is a timeout, not invalid', async () => {
    expect(await run('for (;;) {}', REQUEST, 50)).toEqual({
      ok: false,
      kind: 'timeout',
      message: 'no answer within 50 ms',
    })
  })

  it('a request the engine cannot parse fails the run as crashed (the host made it)', async () => {
    const result = await run('module.exports = async (req) => req', '{')
    expect(result).toMatchObject({ ok: false, kind: 'crashed' })
  })

  it("the request is parsed by the engine's own JSON.parse, whatever the module body does to it", async () => {
    const code = `JSON.parse = () => ({ args: 'stolen' })
      module.exports = async (req) => ({ args: req.args, region: req.configuration.region, exports: typeof exports })`
    expect(await run(code)).toEqual({
      ok: true,
      json: JSON.stringify({ args: { a: 1 }, region: 'eu', exports: 'object' }),
      logs: [],
    })
  })

  it('the module gets its Node-like wrapper arguments, and nothing of the driver is left global', async () => {
    const code = `const names = Object.getOwnPropertyNames(globalThis).filter((n) => n.startsWith('__') || n === 'start' || n === 'setup')
      module.exports = async () => ({ names, filename: __filename, dirname: __dirname, same: module.exports === exports, req: typeof require })`
    const result = await run(code)
    expect(result.ok).toBe(true)
    expect(JSON.parse((result as { json: string }).json)).toEqual({
      names: [],
      filename: '/formula.js',
      dirname: '/',
      same: false,
      req: 'function',
    })
  })
})

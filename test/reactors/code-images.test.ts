import { beforeAll, describe, expect, it } from 'vitest'
import { compileEngine, Engine } from '../../adapters/sandbox/engine.js'

const REQUEST = JSON.stringify({ args: { n: 1 }, configuration: {} })

/**
 * An engine keeps what compiling a code changed in its memory (an image,
 * adapters/sandbox/code-images.ts), recorded the second time it compiles the code; later runs of that
 * code write the image back instead of compiling. These tests check that a run of a kept code is a
 * run like any other.
 */
describe('compiled codes kept as images', () => {
  let compiled: object
  beforeAll(async () => {
    compiled = await compileEngine()
  })
  const fresh = () => Engine.load(32, 100_000, compiled)
  const answer = async (engine: Engine, code: string, request = REQUEST, egress?: string[]) => {
    const result = await engine.run(code, request, 5000, egress)
    engine.prepare()
    expect(engine.broken).toBe(false)
    if (!result.ok) throw new Error(`${result.kind}: ${result.message}`)
    return JSON.parse(result.json) as unknown
  }

  it('a code is kept from its second run on, and every run of it starts from fresh state', async () => {
    const engine = await fresh()
    const counter = `let n = 0
      module.exports = async (req) => ({ n: ++n, seen: typeof globalThis.mark, arg: req.args.n })
      globalThis.mark = true`
    const changes = `Object.prototype.polluted = 1; globalThis.other = 1; module.exports = async () => 'changed'`
    expect(await answer(engine, counter)).toEqual({ n: 1, seen: 'boolean', arg: 1 })
    expect(engine.codeImages).toBe(0)
    expect(await answer(engine, counter)).toEqual({ n: 1, seen: 'boolean', arg: 1 })
    expect(engine.codeImages).toBe(1)
    for (let i = 0; i < 3; i++) expect(await answer(engine, changes)).toBe('changed')
    expect(engine.codeImages).toBe(2)
    for (const n of [2, 3]) {
      const request = JSON.stringify({ args: { n }, configuration: {} })
      expect(await answer(engine, counter, request)).toEqual({ n: 1, seen: 'boolean', arg: n })
      expect(await answer(engine, 'module.exports = async () => [({}).polluted, typeof other]')).toEqual([
        null,
        'undefined',
      ])
    }
    expect(engine.codeImages).toBe(3)
  })

  it('a kept code whose run is stopped at its deadline or runs out of memory runs afresh next time', async () => {
    const engine = await fresh()
    const code = `let kept = []
      module.exports = async (req) => {
        if (req.args.n === 1) for (;;) {}
        if (req.args.n === 2) for (;;) kept.push(new Array(100000).fill(1))
        return { kept: kept.length, arg: req.args.n }
      }`
    const request = (n: number) => JSON.stringify({ args: { n }, configuration: {} })
    for (let i = 0; i < 2; i++) expect(await answer(engine, code, request(0))).toEqual({ kept: 0, arg: 0 })
    expect(engine.keepsImageOf(code)).toBe(true)
    expect(await engine.run(code, request(1), 100)).toMatchObject({ ok: false, kind: 'timeout' })
    engine.prepare()
    expect(await answer(engine, code, request(3))).toEqual({ kept: 0, arg: 3 })
    expect(await engine.run(code, request(2), 5000)).toMatchObject({ ok: false, kind: 'crashed' })
    engine.prepare()
    expect(engine.broken).toBe(false)
    expect(await answer(engine, code, request(4))).toEqual({ kept: 0, arg: 4 })
  })

  it('code that closes its module wrapper early runs at its compile: it is compiled again on every run, never kept', async () => {
    const engine = await fresh()
    const escapes = `}); globalThis.compiled = (globalThis.compiled || 0) + 1;
      (function (exports, require, module) { module.exports = async () => globalThis.compiled`
    for (let i = 0; i < 4; i++) expect(await answer(engine, escapes)).toBe(1)
    expect(engine.codeImages).toBe(0)
  })

  it("a tenant's image serves only that tenant: another tenant's run of the same code compiles it", async () => {
    const engine = await fresh()
    const code = 'module.exports = async () => 42'
    const runAs = async (tenant: string) => {
      expect(await engine.run(code, REQUEST, 5000, undefined, tenant)).toMatchObject({ ok: true, json: '42' })
      engine.prepare()
    }
    const kept = () => [engine.keepsImageOf(code, 'tenant-a'), engine.keepsImageOf(code, 'tenant-b')]
    await runAs('tenant-a')
    await runAs('tenant-a')
    expect(kept()).toEqual([true, false])
    await runAs('tenant-b')
    expect(kept()).toEqual([true, false])
    await runAs('tenant-b')
    expect(kept()).toEqual([true, true])
    expect(engine.codeImages).toBe(2)
  })

  it("code that closes its wrapper and leaves a `new Function` as long as the whole wrapper's text is not kept either", async () => {
    const engine = await fresh()
    const head = '(function (exports, require, module, __filename, __dirname) {'
    const body = 'module.exports = async () => globalThis.compiled'
    const made = `new Function('exports', 'require', 'module', ${JSON.stringify(body)} + '//' + 'x'.repeat(N))`
    const code = (n: number) =>
      `}); globalThis.compiled = (globalThis.compiled || 0) + 1; ((f) => ${made.replace('N', String(n))})(function () {`
    // The length of that function's text without padding, then the padding that makes it as long
    // as the text inside the wrapper's parentheses.
    const base = (await answer(
      engine,
      `module.exports = async () => ${made.replace('N', '0')}.toString().length`,
    )) as number
    let n = 0
    while (base + n < head.length - 1 + code(n).length + 2) n++
    expect(base + n).toBe(head.length - 1 + code(n).length + 2)
    for (let i = 0; i < 3; i++) expect(await answer(engine, code(n))).toBe(1)
    expect(engine.keepsImageOf(code(n))).toBe(false)
  })

  it('a syntax error is not kept, and answers as before', async () => {
    const engine = await fresh()
    for (let i = 0; i < 2; i++) {
      expect(await engine.run('module.exports = async () => {', REQUEST, 5000)).toMatchObject({
        ok: false,
        kind: 'invalid',
        message: expect.stringMatching(/^SyntaxError: /),
      })
      engine.prepare()
    }
    expect(engine.codeImages).toBe(0)
  })

  it("a run's fetch (with egress) is not part of the image: the next run of that code has none", async () => {
    const engine = await fresh()
    const code = `module.exports = async () => typeof Object.getOwnPropertyDescriptor(globalThis, 'fetch').get`
    expect(await answer(engine, code, REQUEST, ['https://example.com'])).toBe('function')
    expect(await answer(engine, code, REQUEST, ['https://example.com'])).toBe('function')
    expect(engine.codeImages).toBe(1)
    expect(await answer(engine, code)).toBe('undefined')
    expect(await answer(engine, code, REQUEST, ['https://example.com'])).toBe('function')
  })

  it('keeps the 64 codes used last: a 65th forgets the one used longest ago', async () => {
    const engine = await fresh()
    const code = (i: number) => `module.exports = async () => ${i}`
    const twice = async (i: number) => {
      for (let n = 0; n < 2; n++) expect(await answer(engine, code(i))).toBe(i)
    }
    for (let i = 1; i <= 64; i++) await twice(i)
    expect(engine.codeImages).toBe(64)
    // Code 1 is used again: code 2 is now the one used longest ago.
    expect(await answer(engine, code(1))).toBe(1)
    await twice(65)
    expect(engine.codeImages).toBe(64)
    expect([1, 2, 3, 65].map((i) => engine.keepsImageOf(code(i)))).toEqual([true, false, true, true])
    // Forgotten, it is compiled again, and kept again from its second compile (code 3 goes).
    await twice(2)
    expect([2, 3].map((i) => engine.keepsImageOf(code(i)))).toEqual([true, false])
  })
})

import { createHash, createHmac } from 'node:crypto'
import RELEASE_SYNC from '@jitl/quickjs-wasmfile-release-sync'
import { newQuickJSWASMModuleFromVariant, type QuickJSWASMModule } from 'quickjs-emscripten-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bridgeRun, installCryptoBridge } from '../../adapters/sandbox/crypto-bridge.js'
import { sandboxRunner } from '../../adapters/sandbox/index.js'

/**
 * The crypto bridge takes a guest string only when it is copied whole: the engine's copy answers
 * `''` when it can't allocate it and stops at a NUL, and a digest of that would be a 200 with the
 * wrong bytes (an HMAC under an empty key). Such an input is an error thrown into the formula.
 */
const EMPTY_SHA256 = createHash('sha256').update('').digest('hex')

describe('the bridge refuses a string it could not copy whole', () => {
  let module: QuickJSWASMModule
  beforeAll(async () => {
    module = await newQuickJSWASMModuleFromVariant(RELEASE_SYNC as never)
  })

  /** Evaluates `code` in a context whose global `h` is the bridge, its memory capped at `limit` bytes. */
  function evaluate(code: string, limit = -1): unknown {
    const runtime = module.newRuntime()
    const context = runtime.newContext()
    try {
      const host = context.newObject()
      installCryptoBridge(context, host, bridgeRun(performance.now() + 60_000, 256 * 1024 * 1024))
      context.setProp(context.global, 'h', host)
      host.dispose()
      runtime.setMemoryLimit(limit)
      const result = context.evalCode(code)
      const handle = result.error ?? result.value
      const value = context.dump(handle) as unknown
      handle.dispose()
      return result.error ? { error: (value as { message?: string }).message } : value
    } finally {
      context.dispose()
      runtime.dispose()
    }
  }
  const hex =
    'Array.from(new Uint8Array(h.hashDigest(id))).map(x => x.toString(16).padStart(2, "0")).join("")'

  it('data the engine has no memory to copy (12 Mi é, 24 MiB of UTF-8 to copy, 16 MiB allowed)', () => {
    const answer = evaluate(
      `const big = 'é'.repeat(12 * 1024 * 1024); const id = h.hashNew('sha256'); h.hashUpdate(id, big); ${hex}`,
      16 * 1024 * 1024,
    )
    expect(answer).not.toBe(EMPTY_SHA256)
    expect(answer).toEqual({ error: expect.stringContaining('data could not be copied whole') })
  })

  it('an HMAC key the engine has no memory to copy: never an HMAC under an empty key', () => {
    const answer = evaluate(
      `const big = 'é'.repeat(12 * 1024 * 1024); const id = h.hashNew('sha256', big); h.hashUpdate(id, 'x'); ${hex}`,
      16 * 1024 * 1024,
    )
    expect(answer).not.toBe(createHmac('sha256', '').update('x').digest('hex'))
    expect(answer).toEqual({ error: expect.stringContaining('key could not be copied whole') })
  })

  it('a string holding a NUL, as data or as a key: never its part before the NUL', () => {
    expect(evaluate(`const id = h.hashNew('sha256'); h.hashUpdate(id, 'a\\0b'); ${hex}`)).toEqual({
      error: expect.stringContaining('data could not be copied whole'),
    })
    expect(evaluate(`const id = h.hashNew('sha256', 'k\\0ey'); ${hex}`)).toEqual({
      error: expect.stringContaining('key could not be copied whole'),
    })
  })

  it('still takes what it can copy whole, up to the same memory', () => {
    const answer = evaluate(
      `const id = h.hashNew('sha256', 'k'); h.hashUpdate(id, 'é'.repeat(1024 * 1024)); ${hex}`,
      16 * 1024 * 1024,
    )
    expect(answer).toBe(
      createHmac('sha256', 'k')
        .update('é'.repeat(1024 * 1024))
        .digest('hex'),
    )
  })
})

describe('formula code hashes what it gave, or fails', () => {
  const runner = sandboxRunner({ poolSize: 1 })
  afterAll(() => runner.close())
  const run = (body: string) =>
    runner.run(
      `module.exports = async function () { const c = require('crypto'); ${body} }`,
      { args: {}, configuration: {} },
      { timeoutMs: 20_000 },
    )

  it('text with a NUL or a lone surrogate hashes as Node hashes it (sent as its UTF-8 bytes)', async () => {
    const nul = 'a\u0000b'.repeat(10)
    const lone = `\ud800${'x'.repeat(40)}\udc00`
    const outcome = await run(`return { raw: [
      c.createHash('sha256').update(${JSON.stringify(nul)}).digest('hex'),
      c.createHmac('sha256', ${JSON.stringify(nul)}).update(${JSON.stringify(lone)}).digest('hex'),
    ] }`)
    expect(outcome).toMatchObject({
      ok: true,
      value: {
        raw: [
          createHash('sha256').update(nul).digest('hex'),
          createHmac('sha256', nul).update(lone).digest('hex'),
        ],
      },
    })
  })
})

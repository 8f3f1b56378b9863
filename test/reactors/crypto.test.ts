import { createHash, createHmac } from 'node:crypto'
import RELEASE_SYNC from '@jitl/quickjs-wasmfile-release-sync'
import {
  newQuickJSWASMModuleFromVariant,
  type QuickJSContext,
  type QuickJSWASMModule,
} from 'quickjs-emscripten-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bridgeRun, endBridge, installCryptoBridge } from '../../adapters/sandbox/crypto-bridge.js'
import { sandboxRunner } from '../../adapters/sandbox/index.js'
import type { FormulaRequest } from '../../src/kernel/runner.js'

/**
 * Digests, HMACs and random bytes in formulas come from the host's `node:crypto` through a narrow
 * bridge (adapters/sandbox/crypto-bridge.ts): every answer equals Node's, and the bridge refuses
 * what a hostile caller hands it.
 */
const runner = sandboxRunner({ poolSize: 1 })
afterAll(() => runner.close())

async function run(body: string, args: Record<string, unknown> = {}) {
  const code = `module.exports = async function (request) { const req = request.args; ${body} }`
  // A limit no busy machine reaches: these runs must answer.
  return runner.run(code, { args: args as FormulaRequest['args'], configuration: {} }, { timeoutMs: 120_000 })
}

async function answer(body: string, request: Record<string, unknown> = {}): Promise<unknown> {
  const outcome = await run(body, request)
  if (!outcome.ok) throw new Error(`${outcome.kind}: ${outcome.message}`)
  return outcome.value
}

const MB = 1024 * 1024
/** The 1 MB input: bytes 0..250 repeating, made the same way inside the formula. */
const oneMb = Buffer.from(Array.from({ length: MB }, (_, i) => i % 251))
const MAKE_ONE_MB = `const big = Buffer.alloc(${MB}); for (let i = 0; i < big.length; i++) big[i] = i % 251`

describe('digests and HMACs equal node:crypto', () => {
  const algorithms = ['sha1', 'sha256', 'sha384', 'sha512', 'md5']
  const inputs: [string, string][] = [
    ['empty', ''],
    ['ASCII', 'The quick brown fox jumps over the lazy dog'],
    ['astral and accents', 'héllo 😀 wörld 𝄞'],
  ]

  it('on empty, ASCII and astral text, as strings and as bytes, in every encoding', async () => {
    const got = (await answer(
      `const c = require('crypto'), out = {}
      for (const a of req.algorithms) for (const [name, text] of req.inputs) {
        out[a + ' ' + name] = [
          c.createHash(a).update(text).digest('hex'),
          c.createHash(a.toUpperCase()).update(Buffer.from(text)).digest('base64'),
          c.createHmac(a, 'secret key').update(text).digest('hex'),
          c.createHmac(a, Buffer.from('k'.repeat(200))).update(new TextEncoder().encode(text)).digest('base64url'),
          Array.from(c.createHash(a).update(text.slice(0, 3)).update(text.slice(3)).digest()).join(','),
        ]
      }
      return out`,
      { algorithms, inputs },
    )) as Record<string, string[]>
    const expected: Record<string, string[]> = {}
    for (const a of algorithms)
      for (const [name, text] of inputs) {
        expected[`${a} ${name}`] = [
          createHash(a).update(text).digest('hex'),
          createHash(a).update(text).digest('base64'),
          createHmac(a, 'secret key').update(text).digest('hex'),
          createHmac(a, 'k'.repeat(200)).update(text).digest('base64url'),
          [...createHash(a).update(text).digest()].join(','),
        ]
      }
    expect(got).toEqual(expected)
  })

  it('on 1 MB of bytes, whole and through a subarray', async () => {
    const got = await answer(
      `${MAKE_ONE_MB}
      const c = require('crypto'), out = {}
      for (const a of req.algorithms) out[a] = [
        c.createHash(a).update(big).digest('hex'),
        c.createHmac(a, 'key').update(big).digest('hex'),
        c.createHash(a).update(big.subarray(1, 1001)).digest('hex'),
      ]
      return out`,
      { algorithms },
    )
    const expected: Record<string, string[]> = {}
    for (const a of algorithms)
      expected[a] = [
        createHash(a).update(oneMb).digest('hex'),
        createHmac(a, 'key').update(oneMb).digest('hex'),
        createHash(a).update(oneMb.subarray(1, 1001)).digest('hex'),
      ]
    expect(got).toEqual(expected)
  }, 120_000)

  it('getHashes lists exactly the allow-list', async () => {
    expect(await answer(`return require('crypto').getHashes()`)).toEqual([
      'md5',
      'sha1',
      'sha256',
      'sha384',
      'sha512',
    ])
  })
})

describe('the crypto API refuses what it is not given', () => {
  it.each([
    ['an algorithm off the allow-list', `c.createHash('sha3-256')`, 'Digest method not supported'],
    ['a number as algorithm', `c.createHash(256)`, 'Digest method not supported'],
    ['a prototype key as algorithm', `c.createHash('__proto__')`, 'Digest method not supported'],
    ['an object as data', `c.createHash('sha256').update({ length: 3 })`, 'must be a string or bytes'],
    ['a number as data', `c.createHash('sha256').update(42)`, 'must be a string or bytes'],
    ['an object as HMAC key', `c.createHmac('sha256', { toString() { return 'k' } })`, 'key'],
    ['a second digest', `const h = c.createHash('md5'); h.digest(); h.digest()`, 'Digest already called'],
    [
      'an update after digest',
      `const h = c.createHash('md5'); h.digest(); h.update('x')`,
      'Digest already called',
    ],
  ])('%s', async (_, call, message) => {
    const outcome = await run(`const c = require('crypto'); ${call}; return 'no error'`)
    expect(outcome).toMatchObject({ ok: false, kind: 'thrown', message: expect.stringContaining(message) })
  })
})

describe('the host bridge itself, called with hostile arguments', () => {
  let module: QuickJSWASMModule
  // Compiling the WebAssembly module took past the 30 s hook limit on a busy machine (and skipped
  // every test below): it gets three minutes.
  beforeAll(async () => {
    module = await newQuickJSWASMModuleFromVariant(RELEASE_SYNC as never)
  }, 180_000)

  /** A fresh context whose global `h` is the bridge; `run` is its state. */
  function bridge(maxInputBytes = 1000) {
    const runtime = module.newRuntime()
    const context = runtime.newContext()
    const state = bridgeRun(performance.now() + 60_000, maxInputBytes)
    const host = context.newObject()
    installCryptoBridge(context, host, state)
    context.setProp(context.global, 'h', host)
    host.dispose()
    const evaluate = (code: string): unknown => {
      const result = context.evalCode(code)
      if (result.error) {
        const error = context.dump(result.error) as { message?: string }
        result.error.dispose()
        return { error: error.message }
      }
      const value = context.dump(result.value)
      result.value.dispose()
      return value
    }
    const close = () => {
      context.dispose()
      runtime.dispose()
    }
    return { context: context as QuickJSContext, state, evaluate, close }
  }

  it('answers a digest of a string or an ArrayBuffer as a new ArrayBuffer', () => {
    const b = bridge()
    expect(
      b.evaluate(`const id = h.hashNew('sha256'); h.hashUpdate(id, 'ab'); h.hashUpdate(id, new Uint8Array([99]).buffer)
        Array.from(new Uint8Array(h.hashDigest(id))).map(x => x.toString(16).padStart(2, '0')).join('')`),
    ).toBe(createHash('sha256').update('abc').digest('hex'))
    b.close()
  })

  it.each([
    ['an unknown algorithm', `h.hashNew('sha3-512')`, 'Digest method not supported'],
    [
      'an algorithm of another type',
      `h.hashNew({ toString() { return 'sha256' } })`,
      'Digest method not supported',
    ],
    [
      'a typed array instead of an ArrayBuffer',
      `h.hashUpdate(h.hashNew('md5'), new Uint8Array(4))`,
      'string or bytes',
    ],
    ['a plain object as data', `h.hashUpdate(h.hashNew('md5'), {})`, 'string or bytes'],
    ['a symbol as data', `h.hashUpdate(h.hashNew('md5'), Symbol('x'))`, 'string or bytes'],
    ['no data', `h.hashUpdate(h.hashNew('md5'))`, 'string or bytes'],
    ['a proxy as key', `h.hashNew('sha1', new Proxy(new ArrayBuffer(2), {}))`, 'string or bytes'],
    ['a made-up id', `h.hashUpdate(12345, 'x')`, 'no such digest'],
    ['an id as text', `h.hashDigest(String(h.hashNew('md5')))`, 'no such digest'],
    ['a spent id', `const id = h.hashNew('md5'); h.hashDigest(id); h.hashDigest(id)`, 'no such digest'],
    ['a random size as text', `h.random('16')`, 'size must be an integer'],
    ['a random size past 65536', `h.random(65537)`, 'size must be an integer'],
  ])('refuses %s', (_, code, message) => {
    const b = bridge()
    expect(b.evaluate(code)).toEqual({ error: expect.stringContaining(message) })
    // The context is still sound after the refusal.
    expect(b.evaluate('1 + 1')).toBe(2)
    b.close()
  })

  it('takes inputs up to the run memory budget and refuses one byte more', () => {
    const b = bridge(1000)
    expect(b.evaluate(`h.hashUpdate(h.hashNew('md5'), new ArrayBuffer(1000)); 'ok'`)).toBe('ok')
    expect(b.evaluate(`h.hashUpdate(h.hashNew('md5'), new ArrayBuffer(1001))`)).toEqual({
      error: expect.stringContaining('larger than'),
    })
    expect(b.evaluate(`h.hashUpdate(h.hashNew('md5'), 'a'.repeat(1000)); 'ok'`)).toBe('ok')
    expect(b.evaluate(`h.hashUpdate(h.hashNew('md5'), 'a'.repeat(1001))`)).toEqual({
      error: expect.stringContaining('larger than'),
    })
    expect(b.evaluate(`h.hashNew('sha1', 'é'.repeat(501))`)).toEqual({
      error: expect.stringContaining('larger than'),
    })
    b.close()
  })

  it('refuses every call once the run has ended, or is past its deadline', () => {
    const b = bridge()
    b.evaluate(`globalThis.id = h.hashNew('sha512')`)
    endBridge(b.state)
    for (const call of [`h.hashNew('md5')`, `h.hashUpdate(id, 'x')`, `h.hashDigest(id)`, `h.random(1)`])
      expect(b.evaluate(call)).toEqual({ error: 'the run has ended' })
    b.close()
    const late = bridge()
    late.state.deadline = performance.now() - 1
    expect(late.evaluate(`h.random(1)`)).toEqual({ error: 'the run is out of time' })
    late.close()
  })

  it('bounds the digests a run may hold open', () => {
    const b = bridge()
    expect(b.evaluate(`for (let i = 0; i < 1000; i++) h.hashNew('md5'); 'ok'`)).toBe('ok')
    expect(b.evaluate(`h.hashNew('md5')`)).toEqual({ error: expect.stringContaining('at most 1000') })
    b.close()
  })
})

import { createHash, createHmac } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { failure, formulaBody, sharedRunner, world } from '../formulas/setup.js'

/**
 * The formula runtime the reference documents (developers.basistheory.com, docs/concepts/what-are-reactors
 * and docs/api/reactors/reactor-formulas: "Reactor formulas can require the
 * @basis-theory/basis-theory-reactor-formulas-sdk-js package … errors" and the runtime's Node modules),
 * as far as it is offered inside the isolation boundary: every helper is engine code.
 */
const runner = sharedRunner()
afterAll(() => runner.close())

async function react(body: string): Promise<unknown> {
  const w = await world({ runner: runner.get() })
  const code = `module.exports = async function (req) { ${body} }`
  const formula = await w.a.admin.reactorFormulas.create(
    formulaBody({ code, configuration: [], request_parameters: [] }),
  )
  const reactor = await w.a.admin.reactors.create({ name: 'r', formula_id: formula.id })
  return w.a.client.reactors.react(reactor.id, {})
}

describe('the reactor formulas SDK (docs: reactor formulas, "Errors")', () => {
  it.each([
    ['BadRequestError', 400],
    ['AuthenticationError', 401],
    ['InvalidPaymentMethodError', 402],
    ['AuthorizationError', 403],
    ['RateLimitError', 429],
    ['ReactorRuntimeError', 500],
  ])('%s answers %i with its message', async (name, status) => {
    const error = await failure(
      react(`const sdk = require('@basis-theory/basis-theory-reactor-formulas-sdk-js')
        const e = new sdk.${name}('card declined')
        if (!(e instanceof Error) || !(e instanceof sdk.${name}) || e.name !== '${name}') throw new Error('bad class')
        throw e`),
    )
    expect({ status: error.status, message: error.message }).toEqual({ status, message: 'card declined' })
  })
})

describe('crypto, util, TextEncoder/TextDecoder', () => {
  it('hashes and HMACs agree with Node', async () => {
    const answer = (await react(`const c = require('crypto')
      return { raw: [
        c.createHash('sha256').update('héllo ').update('world').digest('hex'),
        c.createHash('sha1').update('x'.repeat(200)).digest('base64'),
        c.createHmac('sha256', 'k'.repeat(100)).update('msg').digest('hex'),
        c.createHmac('sha1', 'key').update('msg').digest('base64url'),
      ] }`)) as { raw: string[] }
    expect(answer.raw).toEqual([
      createHash('sha256').update('héllo world').digest('hex'),
      createHash('sha1').update('x'.repeat(200)).digest('base64'),
      createHmac('sha256', 'k'.repeat(100)).update('msg').digest('hex'),
      createHmac('sha1', 'key').update('msg').digest('base64url'),
    ])
  })

  it('random bytes and UUIDs differ between calls and runs', async () => {
    const body = `const c = require('node:crypto')
      return { raw: [c.randomUUID(), c.randomUUID(), Array.from(c.randomBytes(16)).join(','), c.getRandomValues(new Uint8Array(4)).length] }`
    const a = ((await react(body)) as { raw: [string, string, string, number] }).raw
    const b = ((await react(body)) as { raw: [string, string, string, number] }).raw
    expect(a[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(new Set([a[0], a[1], b[0], b[1]]).size).toBe(4)
    expect(a[2]).not.toBe(b[2])
    expect(a[2].split(',')).toHaveLength(16)
    expect(a[3]).toBe(4)
  })

  it('a hostile size is refused inside the engine', async () => {
    for (const size of ['1e9', '-1', '"16"', '1.5', '{ valueOf() { return 1e9 } }']) {
      const error = await failure(react(`require('crypto').randomBytes(${size})`))
      expect({ size, status: error.status, message: error.message }).toEqual({
        size,
        status: 500,
        message: expect.stringContaining('size must be an integer'),
      })
    }
  })

  it('util.format and TextEncoder/TextDecoder round-trip', async () => {
    const answer = (await react(`const util = require('util')
      const bytes = new TextEncoder().encode('añ€😀')
      return { raw: [util.format('%s=%d %j', 'a', 42, { b: 1 }), Array.from(bytes).length, new TextDecoder().decode(bytes), util.isDeepStrictEqual({ a: [1] }, { a: [1] })] }`)) as {
      raw: unknown[]
    }
    expect(answer.raw).toEqual(['a=42 {"b":1}', Buffer.byteLength('añ€😀'), 'añ€😀', true])
  })

  it('modules outside the allow-list still answer a clear error', async () => {
    for (const id of ['fs', 'net', 'child_process', '__proto__', 'constructor', 'hasOwnProperty']) {
      const error = await failure(react(`require(${JSON.stringify(id)})`))
      expect({ id, message: error.message }).toEqual({
        id,
        message: expect.stringContaining(`require(${JSON.stringify(id)}) is not available`),
      })
    }
  })
})

describe('hostile probes through the new helpers', () => {
  it('the host functions behind the helpers are gone, and their constructors are the engine’s', async () => {
    const answer = (await react(`const c = require('crypto')
      const reached = []
      for (const n of ['__randomHex', '__refuse', 'process', 'Buffer']) if (typeof globalThis[n] !== 'undefined') reached.push(n)
      for (const f of [require, c.randomBytes, c.createHash, require('util').format, TextEncoder]) {
        try { const p = f.constructor('return typeof process')(); if (p !== 'undefined') reached.push(p) } catch (e) { reached.push('threw') }
      }
      try { require('fs') } catch (e) { const p = e.constructor.constructor('return typeof process')(); if (p !== 'undefined') reached.push('error') }
      try { c.randomBytes(1e9) } catch (e) { const p = e.constructor.constructor('return typeof process')(); if (p !== 'undefined') reached.push('error2') }
      return { raw: reached }`)) as { raw: string[] }
    expect(answer.raw).toEqual([])
  })

  it('a run that poisons a module does not change the next run’s', async () => {
    await react(
      `require('crypto').createHash = () => 1; require('util').poisoned = 1; TextEncoder.prototype.encode = () => 'x'; return { raw: 1 }`,
    )
    const answer = (await react(
      `return { raw: [typeof require('crypto').createHash('sha256'), 'poisoned' in require('util'), new TextEncoder().encode('a').length] }`,
    )) as { raw: unknown[] }
    expect(answer.raw).toEqual(['object', false, 1])
  })
})

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

async function react(body: string, reactorTimeoutMs?: number): Promise<unknown> {
  const w = await world({ runner: runner.get(), ...(reactorTimeoutMs ? { reactorTimeoutMs } : {}) })
  const code = `module.exports = async function (req) { ${body} }`
  const formula = await w.a.admin.reactorFormulas.create(
    formulaBody({ code, configuration: [], request_parameters: [] }),
  )
  const reactor = await w.a.admin.reactors.create({ name: 'r', formula_id: formula.id })
  return w.a.client.reactors.react(reactor.id, {})
}

describe('the reactor formulas SDK (docs: api/reactors/reactor-errors, "Error Types" and "Error Constructors")', () => {
  it.each([
    ['BadRequestError', 400, 'Bad Request'],
    ['AuthenticationError', 401, 'Authentication Failed'],
    ['InvalidPaymentMethodError', 402, 'Invalid Payment Method'],
    ['AuthorizationError', 403, 'Forbidden'],
    ['RateLimitError', 429, 'Rate Limit Exceeded'],
    ['ReactorRuntimeError', 500, 'Reactor Runtime Error'],
    ['ServiceUnavailableError', 503, 'Service Unavailable Error'],
  ])('%s answers %i, detail "%s", its argument as the errors block', async (name, status, detail) => {
    const error = await failure(
      react(`const sdk = require('@basis-theory/basis-theory-reactor-formulas-sdk-js')
        const e = new sdk.${name}('card declined')
        if (!(e instanceof Error) || !(e instanceof sdk.${name}) || e.name !== '${name}') throw new Error('bad class')
        throw e`),
    )
    expect({ status: error.status, message: error.message, issues: error.issues }).toEqual({
      status,
      message: detail,
      issues: { error: ['card declined'] },
    })
  })

  it.each([
    ['a string', `'My error message'`, { error: ['My error message'] }],
    ['an array', `['error 1', 'error 2']`, { error: ['error 1', 'error 2'] }],
    [
      'an object',
      `{ error1: 'description 1', error2: ['description 2', 'description 3'], nested: { a: 1 } }`,
      { error1: ['description 1'], error2: ['description 2', 'description 3'], nested: ['{"a":1}'] },
    ],
    ['an Error', `new Error('upstream failed')`, { error: ['upstream failed'] }],
    ['nothing', '', { error: ['Something went wrong. Please try again.'] }],
  ])('the constructor takes %s', async (_, argument, errors) => {
    const error = await failure(
      react(`const { ReactorRuntimeError } = require('@basis-theory/basis-theory-reactor-formulas-sdk-js')
        throw new ReactorRuntimeError(${argument})`),
    )
    expect({ status: error.status, message: error.message, issues: error.issues }).toEqual({
      status: 500,
      message: 'Reactor Runtime Error',
      issues: errors,
    })
  })

  it('InvalidReactorConfigurationError names the property; ReactorRuntimeError keeps an error status', async () => {
    const config = await failure(
      react(`const { InvalidReactorConfigurationError } = require('@basis-theory/basis-theory-reactor-formulas-sdk-js')
        throw new InvalidReactorConfigurationError('API_KEY', 'is required')`),
    )
    expect({ status: config.status, message: config.message, issues: config.issues }).toEqual({
      status: 400,
      message: 'Invalid Reactor Configuration',
      issues: { API_KEY: ['is required'] },
    })
    const upstream = await failure(
      react(`const { ReactorRuntimeError } = require('@basis-theory/basis-theory-reactor-formulas-sdk-js')
        throw new ReactorRuntimeError({ status: 502, message: 'bad gateway' })`),
    )
    expect({ status: upstream.status, issues: upstream.issues }).toEqual({
      status: 502,
      issues: { status: ['502'], message: ['bad gateway'] },
    })
  })

  it('a hostile errors block is cut to its limits or dropped, never reaching the host as anything but strings', async () => {
    const big = await failure(
      react(`const e = new Error('x'); e.status = 400
        e.errors = { a0: Array(25).fill('m') }; for (let i = 0; i < 24; i++) e.errors['k' + i] = ['y'.repeat(1500)]
        throw e`),
    )
    expect(Object.keys(big.issues ?? {})).toHaveLength(20)
    expect(big.issues?.a0).toHaveLength(20)
    expect(big.issues?.k0?.[0]).toHaveLength(1000)
    const huge = await failure(
      react(`const e = new Error('x'); e.errors = { a: Array(100).fill('y'.repeat(1000)) }; throw e`),
    )
    expect({ message: huge.message, issues: huge.issues }).toEqual({ message: 'x', issues: undefined })
    for (const errors of [
      `{ a: [1] }`,
      `{ ['__proto__']: ['x'] }`,
      `{ get a() { throw new Error('getter') } }`,
      `'text'`,
      `{ a: 'not an array' }`,
    ]) {
      const error = await failure(react(`const e = new Error('x'); e.errors = ${errors}; throw e`))
      expect({ errors, message: error.message, issues: error.issues }).toEqual({
        errors,
        message: 'x',
        issues: undefined,
      })
    }
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

describe('Buffer and require("buffer") (Node\'s basics, engine code)', () => {
  it('encodes and decodes as Node does', async () => {
    const text = 'héllo wörld €😀'
    const answer = (await react(`const { Buffer: B } = require('buffer')
      const b = Buffer.from(${JSON.stringify(text)})
      return { raw: [
        B === Buffer, Buffer.isBuffer(b), Buffer.isBuffer(new Uint8Array(1)), b instanceof Uint8Array,
        b.toString(), b.toString('hex'), b.toString('base64'), b.toString('base64url'), b.toString('utf-8', 1, 5),
        Buffer.from(b.toString('hex'), 'hex').toString(), Buffer.from(b.toString('base64'), 'base64').toString(),
        Buffer.from(b.toString('base64url'), 'base64url').toString(), Buffer.from('user:pässword', 'binary').toString('base64'),
        Buffer.byteLength(${JSON.stringify(text)}), Buffer.byteLength('00ff', 'hex'),
        Buffer.alloc(3).toString('hex'), Buffer.alloc(5, 'ab').toString(), Buffer.alloc(2, 7).toString('hex'),
        Buffer.concat([Buffer.from('ab'), new Uint8Array([99]), Buffer.from('d')]).toString(), Buffer.concat([Buffer.from('abc')], 2).toString(),
        b.slice(0, 5).toString(), b.subarray(6).toString(), Buffer.isBuffer(b.slice(1)),
        Buffer.from('abc').equals(Buffer.from([97, 98, 99])), Buffer.from('abc').equals(Buffer.from('abd')),
        Buffer.compare(Buffer.from('a'), Buffer.from('b')), JSON.stringify(Buffer.from('hi')),
        require('crypto').createHash('sha256').update(Buffer.from('x')).digest().toString('hex'),
      ] }`)) as { raw: unknown[] }
    const b = Buffer.from(text)
    expect(answer.raw).toEqual([
      true,
      true,
      false,
      true,
      text,
      b.toString('hex'),
      b.toString('base64'),
      b.toString('base64url'),
      b.toString('utf-8', 1, 5),
      text,
      text,
      text,
      Buffer.from('user:pässword', 'binary').toString('base64'),
      Buffer.byteLength(text),
      2,
      '000000',
      'ababa',
      '0707',
      'abcd',
      'ab',
      b.subarray(0, 5).toString(),
      b.subarray(6).toString(),
      true,
      true,
      false,
      -1,
      JSON.stringify(Buffer.from('hi')),
      createHash('sha256').update('x').digest('hex'),
    ])
  })

  it("slices share memory, as Node's do; a hostile size is refused", async () => {
    const answer = (await react(`const b = Buffer.from('abc'); b.slice(1)[0] = 120
      const errors = []
      for (const size of [-1, 1.5, '3', 2 ** 40]) { try { Buffer.alloc(size); errors.push('none') } catch (e) { errors.push(e.name) } }
      try { Buffer.from('x').toString('utf16le') } catch (e) { errors.push(e.message) }
      return { raw: [b.toString(), errors] }`)) as { raw: unknown[] }
    expect(answer.raw).toEqual([
      'axc',
      ['RangeError', 'RangeError', 'RangeError', 'RangeError', expect.stringContaining('Unknown encoding')],
    ])
  })
})

describe('URL and URLSearchParams (WHATWG, engine code)', () => {
  it('parse, resolve and serialize as Node does', async () => {
    const cases = [
      ['HTTPS://Api.Example.COM:443/a/./b/../c?x=1 2&y=%20#frag', undefined],
      ['../d?q=1', 'http://h.example/a/b/c'],
      ['/root', 'https://h.example:8443/a/b'],
      ['?only', 'https://h.example/a/b?old'],
      ['//other.example/p', 'https://h.example/'],
      ['http://u:p@[::1]:8080/x', undefined],
      ['http://127.0.0.1:80/', undefined],
      ['mailto:someone@example.com', undefined],
    ] as const
    const answer = (await react(`const cases = ${JSON.stringify(cases)}
      return { raw: cases.map(([input, base]) => { const u = base === null ? new URL(input) : new URL(input, base)
        return [u.href, u.origin, u.protocol, u.username, u.password, u.host, u.hostname, u.port, u.pathname, u.search, u.hash] }) }`)) as {
      raw: unknown[]
    }
    expect(answer.raw).toEqual(
      cases.map(([input, base]) => {
        const u = new URL(input, base)
        return [
          u.href,
          u.origin,
          u.protocol,
          u.username,
          u.password,
          u.host,
          u.hostname,
          u.port,
          u.pathname,
          u.search,
          u.hash,
        ]
      }),
    )
  })

  it('searchParams read and write the URL; URLSearchParams serializes as Node does', async () => {
    const answer = (await react(`const u = new URL('https://h.example/p?a=1&b=x%20y&a=2')
      u.searchParams.append('c', 'd&e=f'); u.searchParams.set('a', '3'); u.searchParams.delete('b')
      const p = new URLSearchParams({ q: 'a b+c', e: 'é' }); p.sort()
      const errors = []
      for (const bad of ['nope', 'http://exa mple.com/', 'http://[::1/', 'http://h:99999/']) { try { new URL(bad); errors.push(bad) } catch (e) { errors.push(e instanceof TypeError) } }
      return { raw: [u.href, u.searchParams.getAll('a'), u.searchParams.has('b'), p.toString(), [...new URLSearchParams('x=1&y=2').keys()], new URLSearchParams([['k', 'v']]).get('k'), URL.canParse('/x', 'https://h.example'), errors] }`)) as {
      raw: unknown[]
    }
    const u = new URL('https://h.example/p?a=1&b=x%20y&a=2')
    u.searchParams.append('c', 'd&e=f')
    u.searchParams.set('a', '3')
    u.searchParams.delete('b')
    const p = new URLSearchParams({ q: 'a b+c', e: 'é' })
    p.sort()
    expect(answer.raw).toEqual([
      u.href,
      ['3'],
      false,
      p.toString(),
      ['x', 'y'],
      'v',
      true,
      [true, true, true, true],
    ])
  })
})

describe("timers, bounded by the run's time limit", () => {
  it('setTimeout, setInterval and their clears run in order within the run', async () => {
    const answer = (await react(`const t0 = Date.now(); const order = []
      setTimeout(() => order.push('b'), 40); setTimeout((x) => order.push(x), 10, 'a')
      const cancelled = setTimeout(() => order.push('never'), 20); clearTimeout(cancelled)
      await new Promise((resolve) => setTimeout(resolve, 60))
      let n = 0
      await new Promise((resolve) => { const i = setInterval(() => { if (++n === 3) { clearInterval(i); resolve() } }, 5) })
      const { setTimeout: st } = require('timers')
      await new Promise((resolve) => st(resolve, 1))
      return { raw: [order, Date.now() - t0 >= 60, n] }`)) as { raw: unknown[] }
    expect(answer.raw).toEqual([['a', 'b'], true, 3])
  })

  it('a run waiting on a timer due past its limit fails as a timeout at once, and the worker serves the next run', async () => {
    // The limit is a minute: the run's answer comes while the test waits at most half of it, so
    // it came before the limit (timing the answer against a short limit failed on busy machines).
    const error = failure(
      react(`await new Promise((resolve) => setTimeout(resolve, 600000)); return { raw: 1 }`, 60_000),
    )
    let waited: NodeJS.Timeout | undefined
    const halfTheLimit = new Promise<'still waiting'>((resolve) => {
      waited = setTimeout(() => resolve('still waiting'), 30_000)
    })
    const first = await Promise.race([error, halfTheLimit])
    clearTimeout(waited)
    expect(first).not.toBe('still waiting')
    expect({ status: (await error).status, message: (await error).message }).toEqual({
      status: 504,
      message: 'the reactor formula ran longer than 60000 ms',
    })
    expect(await react(`return { raw: 'next' }`)).toEqual({ raw: 'next', tokens: {} })
  }, 60_000)

  it('an interval that never stops ends at the time limit', async () => {
    const error = await failure(react(`setInterval(() => {}, 1); await new Promise(() => {})`, 300))
    expect({ status: error.status, message: error.message }).toEqual({
      status: 504,
      message: 'the reactor formula ran longer than 300 ms',
    })
  })

  it('a timer callback that throws fails the run with its error; a promise nothing can settle is reported', async () => {
    const thrown = await failure(
      react(
        `setTimeout(() => { throw new Error('from a timer') }, 1); await new Promise((r) => setTimeout(r, 50))`,
      ),
    )
    expect(thrown.message).toBe('from a timer')
    const stuck = await failure(react(`await new Promise(() => {})`))
    expect(stuck.message).toContain('never settled')
  })
})

describe('hostile probes through the new helpers', () => {
  it('the host functions behind the helpers are gone, and their constructors are the engine’s', async () => {
    const answer = (await react(`const c = require('crypto')
      const reached = []
      for (const n of ['__randomHex', '__refuse', 'process', 'global']) if (typeof globalThis[n] !== 'undefined') reached.push(n)
      for (const f of [require, c.randomBytes, c.createHash, require('util').format, TextEncoder, Buffer, Buffer.from, URL, URLSearchParams, setTimeout, clearTimeout, setInterval]) {
        try { const p = f.constructor('return typeof process')(); if (p !== 'undefined') reached.push(p) } catch (e) { reached.push('threw') }
      }
      try { require('fs') } catch (e) { const p = e.constructor.constructor('return typeof process')(); if (p !== 'undefined') reached.push('error') }
      try { c.randomBytes(1e9) } catch (e) { const p = e.constructor.constructor('return typeof process')(); if (p !== 'undefined') reached.push('error2') }
      try { new URL('nope') } catch (e) { const p = e.constructor.constructor('return typeof process')(); if (p !== 'undefined') reached.push('error3') }
      const t = setTimeout(() => {}, 1)
      if (typeof t !== 'number') reached.push('timer handle ' + typeof t)
      const b = Buffer.from('x')
      if (Object.getPrototypeOf(Object.getPrototypeOf(b)) !== Uint8Array.prototype) reached.push('buffer prototype')
      if (b.buffer.constructor.constructor('return typeof process')() !== 'undefined') reached.push('buffer')
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

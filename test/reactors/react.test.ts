import { afterAll, describe, expect, it } from 'vitest'
import { unchecked } from '../../entry/index.js'
import type { Token } from '../../src/kernel/types.js'
import { failure, formulaBody, type RequestParameter, sharedRunner, world } from '../formulas/setup.js'

const runner = sharedRunner()
afterAll(() => runner.close())

const ECHO = 'module.exports = async function (req) { return { raw: req } }'

/** A world with one reactor on a formula with `code` and `params` (no configuration). */
async function reactorWith(
  code: string,
  params: RequestParameter[] = [],
  extra: { reactorTimeoutMs?: number } = {},
) {
  const w = await world({ runner: runner.get(), ...extra })
  const formula = await w.a.admin.reactorFormulas.create(
    formulaBody({ code, configuration: [{ name: 'region', type: 'string' }], request_parameters: params }),
  )
  const reactor = await w.a.admin.reactors.create({
    name: 'r',
    formula_id: formula.id,
    configuration: { region: 'eu' },
  })
  const react = (args?: unknown, client = w.a.client) =>
    unchecked(client).reactors.react(reactor.id, args === undefined ? {} : { args })
  return { ...w, formula, reactor, react }
}

describe('react: args', () => {
  const params: RequestParameter[] = [
    { name: 'amount', type: 'number' },
    { name: 'live', type: 'boolean' },
    { name: 'zip', type: 'string' },
    { name: 'card.number', type: 'string' },
    { name: 'card.exp.month', type: 'number', optional: true },
    { name: 'note', type: 'string', optional: true },
  ]
  const args = { amount: '12.5', live: 'TRUE', zip: 12345, card: { number: 4242, cvc: '1' } }

  it('casts declared args, writes nested ones back, forwards the rest, passes configuration', async () => {
    const { react } = await reactorWith(ECHO, params)
    const answer = await react({
      ...args,
      extra: [1, { a: 'b' }],
      card: { ...args.card, exp: { month: '07' } },
    })
    expect(answer).toEqual({
      raw: {
        args: {
          amount: 12.5,
          live: true,
          zip: '12345',
          card: { number: '4242', cvc: '1', exp: { month: 7 } },
          extra: [1, { a: 'b' }],
        },
        configuration: { region: 'eu' },
      },
      tokens: {},
    })
    expect((await react({ ...args, live: 'false', amount: -3 })).raw).toMatchObject({
      args: { live: false, amount: -3 },
    })
    expect((await react({ ...args, live: true, zip: false })).raw).toMatchObject({ args: { zip: 'false' } })
  })

  it.each([
    ['a required arg missing', { amount: undefined }, 'args.amount', 'is required'],
    ['a required nested arg missing', { card: { cvc: '1' } }, 'args.card.number', 'is required'],
    ['a parent that is not an object', { card: 'x' }, 'args.card.number', 'is required'],
    ['a null required arg', { zip: null }, 'args.zip', 'is required'],
    ['a word for a number', { amount: 'twelve' }, 'args.amount', 'must be a number'],
    ['an empty string for a number', { amount: ' ' }, 'args.amount', 'must be a number'],
    ['hex for a number', { amount: '0x10' }, 'args.amount', 'must be a number'],
    ['a boolean for a number', { amount: true }, 'args.amount', 'must be a number'],
    ['yes for a boolean', { live: 'yes' }, 'args.live', 'must be true or false'],
    ['a number for a boolean', { live: 1 }, 'args.live', 'must be true or false'],
    ['an object for a string', { zip: { code: 1 } }, 'args.zip', 'must be a string'],
    ['an array for a nested string', { card: { number: [4] } }, 'args.card.number', 'must be a string'],
    [
      'a bad optional nested arg',
      { card: { number: '1', exp: { month: 'May' } } },
      'args.card.exp.month',
      'must be a number',
    ],
  ])('%s → validation_failed naming it', async (_, change, field, message) => {
    const { react, store } = await reactorWith(ECHO, params)
    const input: Record<string, unknown> = { ...args, ...change }
    for (const key of Object.keys(input)) if (input[key] === undefined) delete input[key]
    const error = await failure(react(input))
    expect(error.code).toBe('validation_failed')
    expect(error.issues?.[field]).toEqual([message])
    expect((await store.dump()).tokens).toEqual([])
  })

  it('without declared parameters any payload is accepted as is', async () => {
    const { react } = await reactorWith(ECHO)
    expect((await react({ anything: ['goes', 1, null] })).raw).toMatchObject({
      args: { anything: ['goes', 1, null] },
    })
    expect((await react()).raw).toMatchObject({ args: {} })
    expect((await failure(react([1]))).issues).toHaveProperty(['args'])
  })
})

describe('react: tokenize', () => {
  const TOKENIZE = `module.exports = async function (req) {
    return {
      raw: { ok: true },
      tokenize: {
        card: { type: 'card', data: { number: req.args.number }, metadata: { source: 'reactor' } },
        nested: { list: [{ type: 'token', data: 'a' }, { type: 'token', data: 'b', containers: ['/pci/'] }] },
      },
    }
  }`

  it('creates every token in the caller tenant, shaped like the output, readable with tokens.get', async () => {
    const { react, a, b, store } = await reactorWith(TOKENIZE)
    const answer = (await react({ number: '4242424242424242' })) as {
      raw: unknown
      tokens: { card: Token; nested: { list: Token[] } }
    }
    expect(answer.raw).toEqual({ ok: true })
    expect(answer.tokens.card).toMatchObject({
      type: 'card',
      tenant_id: a.tenant.id,
      metadata: { source: 'reactor' },
    })
    expect(answer.tokens.card).not.toHaveProperty('data')
    expect(answer.tokens.nested.list.map((t) => t.containers)).toEqual([['/general/high/'], ['/pci/']])
    const read = await a.client.tokens.get(answer.tokens.card.id)
    expect(read.created_by).toBe(a.private.application.id)
    const stored = (await store.dump()).tokens.find((t) => t.id === read.id)
    // At rest the data is sealed: the card number is not in the stored record.
    expect(JSON.stringify(stored)).not.toContain('4242424242424242')
    expect(stored?.data).toEqual({ $sealed: expect.any(String) })
    expect((await failure(b.client.tokens.get(answer.tokens.card.id))).code).toBe('not_found')
  })

  it('tokenizes plain values as token-type tokens answered by id, like the Tokenize endpoint (docs/api/tokens/tokenize)', async () => {
    const w = await reactorWith(
      'module.exports = async () => ({ tokenize: { first_name: "John", tags: ["vip", null], card: { type: "token", data: "x" } } })',
    )
    const out = (await w.react()) as { tokens: { first_name: string; tags: [string, null]; card: Token } }
    expect(typeof out.tokens.first_name).toBe('string')
    expect(out.tokens.tags[1]).toBeNull()
    expect(out.tokens.card).toMatchObject({ type: 'token' })
    const reveal = { description: 'all', priority: 1, container: '/', transform: 'reveal' as const }
    const reader = await w.a.app('private', [], [{ ...reveal, permissions: ['token:read'] }])
    expect(await reader.client.tokens.get(out.tokens.first_name)).toMatchObject({
      type: 'token',
      data: 'John',
    })
    expect((await reader.client.tokens.get(out.tokens.tags[0])).data).toBe('vip')
  })

  it('accepts an array, or one token body', async () => {
    const many = await reactorWith(
      'module.exports = async () => ({ tokenize: [{ type: "token", data: 1 }, { type: "token", data: 2 }] })',
    )
    const out = (await many.react()) as { tokens: Token[] }
    expect(out.tokens).toHaveLength(2)
    expect(out).not.toHaveProperty('raw')
    const one = await reactorWith('module.exports = async () => ({ tokenize: { type: "token", data: "x" } })')
    expect((await one.react()).tokens).toMatchObject({ type: 'token' })
  })

  it('a bad body names its place in tokenize; a duplicate id is a conflict; nothing is written', async () => {
    const bad = await reactorWith(
      'module.exports = async () => ({ tokenize: { ok: { type: "token", data: 1 }, bad: { type: "token", data: 2, containers: ["nope"] } } })',
    )
    const error = await failure(bad.react())
    expect(error.code).toBe('validation_failed')
    expect(Object.keys(error.issues ?? {}).some((k) => k.startsWith('tokenize.bad.containers'))).toBe(true)
    const dup = await reactorWith(
      'module.exports = async () => ({ tokenize: [{ id: "t1", type: "t", data: 1 }, { id: "t1", type: "t", data: 2 }] })',
    )
    expect((await failure(dup.react())).code).toBe('conflict')
    const existing = await reactorWith(
      'module.exports = async () => ({ tokenize: { id: "t2", type: "t", data: 1 } })',
    )
    await existing.a.client.tokens.create({ id: 't2', type: 't', data: 0 })
    expect((await failure(existing.react())).code).toBe('conflict')
    for (const w of [bad, dup]) expect((await w.store.dump()).tokens).toEqual([])
  })

  it('needs token:use (a permission or a rule) and token:create for what it tokenizes', async () => {
    const { react, a } = await reactorWith(TOKENIZE)
    const reader = await a.app('private', ['token:use'])
    expect((await failure(react({ number: '4242424242424242' }, reader.client))).code).toBe('forbidden')
    const none = await a.app('private', ['token:read'])
    expect((await failure(react({ number: '4242424242424242' }, none.client))).code).toBe('forbidden')
    const ruled = await a.app(
      'private',
      [],
      [
        {
          description: 'pci',
          priority: 1,
          container: '/pci/',
          transform: 'reveal',
          permissions: ['token:use', 'token:create'],
        },
      ],
    )
    expect((await failure(react({ number: '4242424242424242' }, ruled.client))).code).toBe('forbidden')
    const wide = await a.app(
      'private',
      [],
      [
        {
          description: 'all',
          priority: 1,
          container: '/',
          transform: 'reveal',
          permissions: ['token:use', 'token:create'],
        },
      ],
    )
    expect((await react({ number: '4242424242424242' }, wide.client)).raw).toEqual({ ok: true })
  })
})

describe('react: failures', () => {
  it.each([
    [
      'a thrown status',
      'throw Object.assign(new Error("teapot"), { status: 418 })',
      'formula_failed',
      418,
      'teapot',
    ],
    ['a thrown plain object', 'throw { status: 503, message: "down" }', 'formula_failed', 503, 'down'],
    ['a status out of range', 'throw { status: 302, message: "moved" }', 'formula_failed', 500, 'moved'],
    ['a plain error', 'throw new Error("boom")', 'formula_failed', 500, 'boom'],
    ['a thrown string', 'throw "bad"', 'formula_failed', 500, 'bad'],
    ['a non-object answer', 'return 5', 'formula_failed', 500, 'must answer an object'],
    ['an answer that is not JSON', 'return { raw: 10n }', 'formula_failed', 500, 'not JSON'],
    ['a promise that never settles', 'await new Promise(() => {})', 'formula_failed', 500, 'never settled'],
  ])('%s', async (_, body, code, status, message) => {
    const { react } = await reactorWith(`module.exports = async function () { ${body} }`)
    const error = await failure(react())
    expect({ code: error.code, status: error.status }).toEqual({ code, status })
    expect(error.message).toContain(message)
  })

  it.each([
    ['a syntax error', 'module.exports = async () => {', 'SyntaxError'],
    ['no exported function', 'exports.handler = async () => ({})', 'must export a function'],
    ['a throw while loading', 'throw new Error("at load")', 'at load'],
  ])('%s → formula_invalid', async (_, code, message) => {
    const w = await world({ runner: runner.get() })
    const pub = await w.service.admin.createOfficialFormula(
      formulaBody({ type: 'official', configuration: [], request_parameters: [] }),
    )
    // The compile check refuses the syntax error, so put the code in place as stored data.
    const stored = (await w.store.dump()).formulas[0]!
    await w.store.write({ ops: [{ op: 'formula.put', formula: { ...stored, code } }] })
    const reactor = await w.a.admin.reactors.create({ name: 'r', formula_id: pub.id })
    const error = await failure(w.a.client.reactors.react(reactor.id, {}))
    expect(error.code).toBe('formula_invalid')
    expect(error.message).toContain(message)
  })

  it('with `runner: null`, react answers formula_invalid', async () => {
    const { a } = await world({ runner: null })
    const formula = await a.admin.reactorFormulas.create(
      formulaBody({ configuration: [], request_parameters: [] }),
    )
    const reactor = await a.admin.reactors.create({ name: 'r', formula_id: formula.id })
    const error = await failure(a.client.reactors.react(reactor.id, {}))
    expect(error.code).toBe('formula_invalid')
    expect(error.message).toMatch(/no formula runner/)
  })
})

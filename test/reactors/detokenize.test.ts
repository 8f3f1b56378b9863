/**
 * Detokenization in react args, as the reference documents it (docs/api/reactors/reactors.mdx
 * "Detokenization", docs/expressions/detokenization.mdx at cd98157).
 */
import { afterAll, describe, expect, it } from 'vitest'
import { unchecked } from '../../entry/index.js'
import { failure, formulaBody, type RequestParameter, sharedRunner, world } from '../formulas/setup.js'

const runner = sharedRunner()
afterAll(() => runner.close())

const ECHO = 'module.exports = async function (req) { return { raw: req.args } }'

async function reactorWith(params: RequestParameter[] = []) {
  const w = await world({ runner: runner.get() })
  const formula = await w.a.admin.reactorFormulas.create(
    formulaBody({ code: ECHO, configuration: [], request_parameters: params }),
  )
  const reactor = await w.a.admin.reactors.create({ name: 'r', formula_id: formula.id, configuration: {} })
  const react = (args: unknown, client = w.a.client) => unchecked(client).reactors.react(reactor.id, { args })
  return { ...w, reactor, react }
}

describe('react: detokenization (docs/api/reactors/reactors.mdx#detokenization)', () => {
  it('replaces {{ <token id> }} by the token data, complex data whole, in nested args and inside strings (docs/expressions/detokenization.mdx)', async () => {
    const { a, react } = await reactorWith()
    await a.client.tokens.create({ id: 'ssn-1', type: 'ssn', data: '111-22-3333' })
    const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2025, cvc: '123' }
    await a.client.tokens.create({ id: 'card-1', type: 'card', data: card })
    await a.client.tokens.create({ id: 'n', type: 'n', data: 42 })
    const answer = await react({
      ssn: '{{ssn-1}}',
      spaced: '{{  ssn-1 }}',
      card: '{{ card-1 }}',
      nested: { list: ['{{n}}', 'plain', 7] },
      line: 'ssn {{ ssn-1 }} and n={{n}}',
      customer_id: 'myCustomerId1234',
    })
    expect(answer.raw).toEqual({
      ssn: '111-22-3333',
      spaced: '111-22-3333',
      card,
      nested: { list: [42, 'plain', 7] },
      line: 'ssn 111-22-3333 and n=42',
      customer_id: 'myCustomerId1234',
    })
  })

  it('validates and casts after detokenization: one complex token may supply several parameters', async () => {
    const { a, react } = await reactorWith([
      { name: 'card.number', type: 'string' },
      { name: 'card.expiration_month', type: 'number' },
      { name: 'amount', type: 'number' },
    ])
    await a.client.tokens.create({
      id: 'card-1',
      type: 'token',
      data: { number: 4242, expiration_month: '07' },
    })
    await a.client.tokens.create({ id: 'amt', type: 'amount', data: '12.5' })
    const answer = await react({ card: '{{card-1}}', amount: '{{amt}}' })
    expect(answer.raw).toEqual({ card: { number: '4242', expiration_month: 7 }, amount: 12.5 })
    await a.client.tokens.create({ id: 'word', type: 'amount', data: 'lots' })
    const error = await failure(react({ card: '{{card-1}}', amount: '{{word}}' }))
    expect(error.code).toBe('validation_failed')
    expect(Object.keys(error.issues ?? {})).toEqual(['args.amount'])
  })

  it("runs an expression's filters: the reference's 'Override a Field on a Token' (docs/expressions/detokenization.mdx)", async () => {
    const { a, react } = await reactorWith([
      { name: 'card.number', type: 'string' },
      { name: 'card.expiration_month', type: 'number' },
      { name: 'card.expiration_year', type: 'number' },
      { name: 'card.cvc', type: 'string' },
      { name: 'card_owner_full_name', type: 'string' },
    ])
    const card = { number: '4242424242424242', expiration_month: 11, expiration_year: 2025, cvc: '123' }
    await a.client.tokens.create({ id: 'card-1', type: 'card', data: card })
    const answer = await react({
      card: {
        number: "{{card-1 | json: '$.number'}}",
        expiration_month: "{{card-1 | json: '$.expiration_month'}}",
        expiration_year: "{{card-1 | json: '$.expiration_year'}}",
        cvc: '987',
      },
      card_owner_full_name: 'John Doe',
    })
    expect(answer.raw).toEqual({
      card: { number: '4242424242424242', expiration_month: 11, expiration_year: 2025, cvc: '987' },
      card_owner_full_name: 'John Doe',
    })
  })

  it('an unknown, expired or other tenant token is 400 naming the arg; nothing leaks of another tenant', async () => {
    const { a, b, clock, react } = await reactorWith()
    await b.client.tokens.create({ id: 'theirs', type: 'x', data: 'secret' })
    await a.client.tokens.create({ id: 'soon', type: 'x', data: 's', expires_at: '2030-01-01T00:01:00Z' })
    for (const id of ['nope', 'theirs']) {
      const error = await failure(react({ deep: { v: `{{${id}}}` } }))
      expect(error.code).toBe('validation_failed')
      expect(Object.keys(error.issues ?? {})).toEqual(['args.deep.v'])
      expect(JSON.stringify(error)).not.toContain('secret')
    }
    expect((await react({ v: '{{soon}}' })).raw).toEqual({ v: 's' })
    clock.advance(60_000)
    expect(Object.keys((await failure(react({ v: '{{soon}}' }))).issues ?? {})).toEqual(['args.v'])
  })

  it("a card's cvc reaches the formula for an hour after it was given, then no more", async () => {
    const { a, clock, react } = await reactorWith()
    const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031, cvc: '123' }
    await a.client.tokens.create({ id: 'card-1', type: 'card', data: card })
    clock.advance(60 * 60_000 - 1)
    expect((await react({ card: '{{ card-1 }}' })).raw).toEqual({ card })
    clock.advance(1)
    const { cvc: _cvc, ...noCvc } = card
    expect((await react({ card: '{{ card-1 }}' })).raw).toEqual({ card: noCvc })
  })

  it('needs token:use on each token: a rule on another container is 403, a mask transform gives the mask', async () => {
    const { a, react } = await reactorWith()
    await a.client.tokens.create({ id: 'pci', type: 'x', data: 'card', mask: '****', containers: ['/pci/'] })
    await a.client.tokens.create({ id: 'gen', type: 'x', data: 'note', containers: ['/general/'] })
    const scoped = await a.app(
      'private',
      [],
      [
        {
          description: '',
          priority: 1,
          container: '/general/',
          transform: 'reveal',
          permissions: ['token:use'],
        },
        { description: '', priority: 2, container: '/pci/', transform: 'mask', permissions: ['token:use'] },
      ],
    )
    expect((await react({ g: '{{gen}}', p: '{{pci}}' }, scoped.client)).raw).toEqual({ g: 'note', p: '****' })
    const generalOnly = await a.app(
      'private',
      [],
      [
        {
          description: '',
          priority: 1,
          container: '/general/',
          transform: 'reveal',
          permissions: ['token:use'],
        },
      ],
    )
    expect((await react({ g: '{{gen}}' }, generalOnly.client)).raw).toEqual({ g: 'note' })
    expect((await failure(react({ p: '{{pci}}' }, generalOnly.client))).code).toBe('forbidden')
  })

  it('at most 100 tokens per request; malformed expressions and unknown filters are 400', async () => {
    const { a, react } = await reactorWith()
    const ids = Array.from({ length: 101 }, (_, i) => `t${i}`)
    for (const id of ids) await a.client.tokens.create({ id, type: 'x', data: id })
    const hundred = Object.fromEntries(ids.slice(0, 100).map((id) => [id, `{{${id}}}`]))
    const answer = await react({ ...hundred, again: '{{t0}}' })
    expect((answer.raw as Record<string, string>).t99).toBe('t99')
    const over = await failure(react(Object.fromEntries(ids.map((id) => [id, `{{${id}}}`]))))
    expect(over.code).toBe('validation_failed')
    expect(Object.keys(over.issues ?? {})).toEqual(['args'])
    for (const bad of ['{{ t0 | no_such_filter }}', '{{ }}', '{{a/b}}']) {
      const error = await failure(react({ x: bad }))
      expect(Object.keys(error.issues ?? {}), bad).toEqual(['args.x'])
    }
    // Text that only looks like braces is left alone.
    expect((await react({ x: '{ t0 }', y: '{{t0' })).raw).toEqual({ x: '{ t0 }', y: '{{t0' })
  })

  it('{{ token_intent: <id> }} is the live intent with its data (cvc too); an unknown one is 400', async () => {
    const { a, react } = await reactorWith()
    const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031, cvc: '321' }
    const collector = (await a.app('public', ['token-intent:create'])).client
    const intent = await collector.tokenIntents.create({ type: 'card', data: card })
    const answer = await react({ i: `{{ token_intent: ${intent.id} }}` })
    expect((answer.raw as { i: { id: string; data: unknown } }).i).toMatchObject({
      id: intent.id,
      data: card,
    })
    const error = await failure(react({ i: '{{ token_intent: no-such-intent }}' }))
    expect(Object.keys(error.issues ?? {})).toEqual(['args.i'])
  })
})

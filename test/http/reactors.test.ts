import { describe, expect, it } from 'vitest'
import type { ReactorFormulaInput } from '../../entry/index.js'
import { fakeRunner } from './fake-runner.js'
import { empty, json, problem, setup } from './setup.js'

const formula = (
  name: string,
  code = 'module.exports = async (req) => ({ raw: req.args })',
): ReactorFormulaInput => ({
  name,
  description: 'test formula',
  type: 'private',
  code,
  configuration: [{ name: 'region', type: 'string' }],
  request_parameters: [
    { name: 'card.number', type: 'string' },
    { name: 'amount', type: 'number', optional: true },
  ],
})

type Formula = { id: string; name: string; type: string; status: string; description?: string }
type Page<T> = { pagination: Record<string, number>; data: T[] }

describe('reactor formulas over HTTP', () => {
  it('creates 201, lists 200 with the name filter and pages, gets 200, replaces 200, deletes 204', async () => {
    const { call, keys, service } = await setup({ runner: fakeRunner() })
    const official = await service.admin.createOfficialFormula({
      ...formula('Official Payments'),
      type: 'official',
    })
    const created = await json<Formula>(
      await call('POST', '/reactor-formulas', { key: keys.management, body: formula('Pay Out') }),
      201,
    )
    expect(created).toMatchObject({ name: 'Pay Out', type: 'private', status: 'verified' })
    await json(
      await call('POST', '/reactor-formulas/', { key: keys.management, body: formula('Lookup') }),
      201,
    )

    const names = async (query: string) =>
      (
        await json<Page<Formula>>(
          await call('GET', `/reactor-formulas${query}`, { key: keys.management }),
          200,
        )
      ).data.map((f) => f.name)
    expect(await names('')).toEqual(['Lookup', 'Official Payments', 'Pay Out'])
    expect(await names('?name=PAY')).toEqual(['Official Payments', 'Pay Out'])
    expect(await names('?name=pay*')).toEqual(['Pay Out'])
    expect(await names('?page=2&size=2')).toEqual(['Pay Out'])

    expect(
      (
        await json<Formula>(
          await call('GET', `/reactor-formulas/${official.id}`, { key: keys.management }),
          200,
        )
      ).type,
    ).toBe('official')
    const { description: _d, ...withoutDescription } = formula('Pay Out v2')
    const replaced = await json<Formula>(
      await call('PUT', `/reactor-formulas/${created.id}`, {
        key: keys.management,
        body: withoutDescription,
      }),
      200,
    )
    expect(replaced.name).toBe('Pay Out v2')
    expect(replaced).not.toHaveProperty('description')

    await empty(await call('DELETE', `/reactor-formulas/${created.id}`, { key: keys.management }), 204)
    await problem(await call('GET', `/reactor-formulas/${created.id}`, { key: keys.management }), 404)
  })

  it('answers 400 naming the field, 403 without permission or on an official formula', async () => {
    const { call, keys, service } = await setup({ runner: fakeRunner() })
    const syntax = await problem(
      await call('POST', '/reactor-formulas', { key: keys.management, body: formula('x', 'SYNTAX') }),
      400,
    )
    expect(syntax.errors).toHaveProperty('code')
    const { name: _n, ...nameless } = formula('x')
    expect(
      (await problem(await call('POST', '/reactor-formulas', { key: keys.management, body: nameless }), 400))
        .errors,
    ).toHaveProperty('name')
    await problem(await call('POST', '/reactor-formulas', { key: keys.full, body: formula('x') }), 403)
    const official = await service.admin.createOfficialFormula({ ...formula('Official'), type: 'official' })
    await problem(
      await call('PUT', `/reactor-formulas/${official.id}`, { key: keys.management, body: formula('mine') }),
      403,
    )
    await problem(await call('DELETE', `/reactor-formulas/${official.id}`, { key: keys.management }), 403)
  })
})

describe('reactors over HTTP', () => {
  it('creates 201, lists 200, gets 200, replaces 200, reacts 200 with { raw, tokens }, deletes 204', async () => {
    const { call, keys } = await setup({ runner: fakeRunner() })
    const f = await json<Formula>(
      await call('POST', '/reactor-formulas', { key: keys.management, body: formula('Pay') }),
      201,
    )
    const reactor = await json<{ id: string; formula_id: string; configuration: unknown }>(
      await call('POST', '/reactors', {
        key: keys.management,
        body: { name: 'payouts', formula_id: f.id, configuration: { region: 'eu' } },
      }),
      201,
    )
    expect(reactor).toMatchObject({ formula_id: f.id, configuration: { region: 'eu' } })
    const list = await json<Page<{ id: string }>>(
      await call('GET', '/reactors?size=5', { key: keys.management }),
      200,
    )
    expect(list.pagination).toEqual({ total_items: 1, page_number: 1, page_size: 5, total_pages: 1 })
    await json(await call('GET', `/reactors/${reactor.id}`, { key: keys.management }), 200)
    const renamed = await json(
      await call('PUT', `/reactors/${reactor.id}/`, {
        key: keys.management,
        body: { name: 'renamed', configuration: { region: 'us' } },
      }),
      200,
    )
    expect(renamed).toMatchObject({ name: 'renamed', configuration: { region: 'us' } })

    const result = await json<{ raw: unknown; tokens: Record<string, { id: string; type: string }> }>(
      await call('POST', `/reactors/${reactor.id}/react`, {
        key: keys.full,
        body: {
          args: {
            card: { number: 4242 },
            amount: '12.5',
            extra: true,
            tokenize: { card: { type: 'card', data: { number: '4242424242424242' } } },
          },
        },
      }),
      200,
    )
    expect(result.raw).toEqual({
      args: { card: { number: '4242' }, amount: 12.5, extra: true },
      configuration: { region: 'us' },
    })
    expect(result.tokens.card).toMatchObject({ type: 'card' })
    expect(
      (await json(await call('GET', `/tokens/${result.tokens.card!.id}`, { key: keys.full }), 200)).data,
    ).toEqual({ number: '4242424242424242' })

    await empty(await call('DELETE', `/reactors/${reactor.id}`, { key: keys.management }), 204)
    await problem(await call('GET', `/reactors/${reactor.id}`, { key: keys.management }), 404)
    await problem(
      await call('POST', `/reactors/${reactor.id}/react`, { key: keys.full, body: { args: {} } }),
      404,
    )
  })

  it('answers 400 for bad configuration or args, 403 without token:use, 422 for code that cannot run, and the formula status', async () => {
    const { call, keys, keyFor } = await setup({ runner: fakeRunner() })
    const make = async (code: string) => {
      const f = await json<Formula>(
        await call('POST', '/reactor-formulas', { key: keys.management, body: formula(code, code) }),
        201,
      )
      return json<{ id: string }>(
        await call('POST', '/reactors', {
          key: keys.management,
          body: { name: code, formula_id: f.id, configuration: { region: 'eu' } },
        }),
        201,
      )
    }
    const ok = await make('fine')
    const f = (
      await json<Page<Formula>>(await call('GET', '/reactor-formulas', { key: keys.management }), 200)
    ).data[0]!
    const badConfig = await problem(
      await call('POST', '/reactors', { key: keys.management, body: { name: 'x', formula_id: f.id } }),
      400,
    )
    expect(Object.keys(badConfig.errors!).some((k) => k.startsWith('configuration'))).toBe(true)

    const missing = await problem(
      await call('POST', `/reactors/${ok.id}/react`, { key: keys.full, body: {} }),
      400,
    )
    expect(missing.errors).toHaveProperty(['args.card.number'])
    const uncastable = await problem(
      await call('POST', `/reactors/${ok.id}/react`, {
        key: keys.full,
        body: { args: { card: { number: '1' }, amount: 'lots' } },
      }),
      400,
    )
    expect(uncastable.errors).toHaveProperty(['args.amount'])
    const reader = await keyFor('private', ['token:read'])
    const args = { args: { card: { number: '1' } } }
    await problem(await call('POST', `/reactors/${ok.id}/react`, { key: reader, body: args }), 403)

    const invalid = await make('INVALID')
    expect(
      (
        await problem(
          await call('POST', `/reactors/${invalid.id}/react`, { key: keys.full, body: args }),
          422,
        )
      ).title,
    ).toBe('Unprocessable Entity')
    const refused = await make('THROW_402')
    const body = await problem(
      await call('POST', `/reactors/${refused.id}/react`, { key: keys.full, body: args }),
      402,
    )
    expect(body.detail).toBe('the formula refused')
    const slow = await make('TIMEOUT')
    await problem(await call('POST', `/reactors/${slow.id}/react`, { key: keys.full, body: args }), 504)
  })

  it('answers 422 when the service runs no formulas (`runner: null`)', async () => {
    const { call, keys } = await setup({ runner: null })
    const f = await json<Formula>(
      await call('POST', '/reactor-formulas', { key: keys.management, body: formula('x') }),
      201,
    )
    const r = await json<{ id: string }>(
      await call('POST', '/reactors', {
        key: keys.management,
        body: { name: 'x', formula_id: f.id, configuration: { region: 'eu' } },
      }),
      201,
    )
    await problem(
      await call('POST', `/reactors/${r.id}/react`, {
        key: keys.full,
        body: { args: { card: { number: '1' } } },
      }),
      422,
    )
  })
})

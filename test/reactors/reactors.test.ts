import { describe, expect, it } from 'vitest'
import { unchecked } from '../../entry/index.js'
import { failure, formulaBody, world } from '../formulas/setup.js'

const contract = formulaBody({
  configuration: [
    { name: 'region', type: 'string' },
    { name: 'limit', type: 'number' },
    { name: 'live', type: 'boolean' },
  ],
})
const good = { region: 'eu', limit: 10, live: false }

describe('reactors', () => {
  it('create, get, list, update (PUT) and delete', async () => {
    const { a, clock } = await world()
    const formula = await a.admin.reactorFormulas.create(contract)
    const reactor = await a.admin.reactors.create({
      name: ' Lookup ',
      formula_id: formula.id,
      configuration: good,
    })
    expect(reactor).toEqual({
      id: expect.any(String),
      tenant_id: a.tenant.id,
      name: 'Lookup',
      formula_id: formula.id,
      formula,
      configuration: good,
      created_at: '2030-01-01T00:00:00.000Z',
      created_by: a.management.application.id,
    })
    expect(await a.admin.reactors.get(reactor.id)).toEqual(reactor)
    clock.advance(1)
    await a.admin.reactors.create({ name: 'second', formula_id: formula.id, configuration: good })
    const page = await a.admin.reactors.list({ size: '1', page: '2' })
    expect(page.pagination).toEqual({ total_items: 2, page_number: 2, page_size: 1, total_pages: 2 })
    expect(page.data.map((r) => r.name)).toEqual(['second'])

    clock.advance(5000)
    const updated = await a.admin.reactors.update(reactor.id, {
      name: 'Renamed',
      configuration: { ...good, live: true },
    })
    expect(updated).toEqual({
      ...reactor,
      name: 'Renamed',
      configuration: { ...good, live: true },
      modified_at: '2030-01-01T00:00:05.001Z',
      modified_by: a.management.application.id,
    })
    await a.admin.reactors.delete(reactor.id)
    expect((await failure(a.admin.reactors.get(reactor.id))).code).toBe('not_found')
    expect((await failure(a.admin.reactors.delete(reactor.id))).code).toBe('not_found')
  })

  it.each([
    ['a setting missing', { region: 'eu', limit: 1 }, 'configuration.live'],
    ['a string that is not a number', { ...good, limit: 'ten' }, 'configuration.limit'],
    ['a number for a boolean', { ...good, live: 1 }, 'configuration.live'],
    ['a string that is not a boolean', { ...good, live: 'yes' }, 'configuration.live'],
    ['an undeclared setting', { ...good, extra: 'x' }, 'configuration.extra'],
    ['an object value', { ...good, region: { a: 1 } }, 'configuration.region'],
  ])('a configuration with %s is refused, naming it', async (_, configuration, field) => {
    const { a, store } = await world()
    const formula = await a.admin.reactorFormulas.create(contract)
    const error = await failure(
      unchecked(a.admin).reactors.create({ name: 'r', formula_id: formula.id, configuration }),
    )
    expect(error.code).toBe('validation_failed')
    expect(Object.keys(error.issues ?? {})).toContain(field)
    expect((await store.dump()).reactors).toEqual([])
    const reactor = await a.admin.reactors.create({ name: 'r', formula_id: formula.id, configuration: good })
    const again = await failure(unchecked(a.admin).reactors.update(reactor.id, { name: 'r', configuration }))
    expect(Object.keys(again.issues ?? {})).toContain(field)
    expect(await a.admin.reactors.get(reactor.id)).toEqual(reactor)
  })

  it('refuses other bodies: unknown keys, missing name, a formula that is not visible', async () => {
    const { a, b, service } = await world()
    const formula = await a.admin.reactorFormulas.create(formulaBody({ configuration: [] }))
    const body = { name: 'r', formula_id: formula.id }
    expect((await failure(unchecked(a.admin).reactors.create({ ...body, id: 'x' }))).issues).toHaveProperty([
      'id',
    ])
    expect(
      (await failure(unchecked(a.admin).reactors.create({ formula_id: formula.id }))).issues,
    ).toHaveProperty(['name'])
    expect((await failure(b.admin.reactors.create(body))).code).toBe('not_found')
    expect((await failure(a.admin.reactors.create({ ...body, formula_id: 'nope' }))).code).toBe('not_found')
    expect(await a.admin.reactors.create(body)).toMatchObject({ configuration: {} })

    const pub = await service.admin.createOfficialFormula(
      formulaBody({ type: 'official', configuration: [] }),
    )
    expect(await b.admin.reactors.create({ name: 'r', formula_id: pub.id })).toMatchObject({
      formula_id: pub.id,
    })
    const soon = await service.admin.createOfficialFormula(
      formulaBody({ type: 'official', configuration: [] }),
      {
        status: 'coming_soon',
      },
    )
    expect((await failure(b.admin.reactors.create({ name: 'r', formula_id: soon.id }))).code).toBe(
      'forbidden',
    )
  })

  it('update may move a reactor to another formula, checked against its contract', async () => {
    const { a } = await world()
    const first = await a.admin.reactorFormulas.create(contract)
    const second = await a.admin.reactorFormulas.create(
      formulaBody({ configuration: [{ name: 'key', type: 'string' }] }),
    )
    const reactor = await a.admin.reactors.create({ name: 'r', formula_id: first.id, configuration: good })
    const refused = await failure(
      a.admin.reactors.update(reactor.id, { name: 'r', formula_id: second.id, configuration: good }),
    )
    expect(refused.issues).toHaveProperty(['configuration.key'])
    const moved = await a.admin.reactors.update(reactor.id, {
      name: 'r',
      formula_id: second.id,
      configuration: { key: 'k' },
    })
    expect(moved.formula_id).toBe(second.id)
    await a.admin.reactorFormulas.delete(first.id)
    expect((await failure(a.admin.reactorFormulas.delete(second.id))).code).toBe('conflict')
  })

  it("another tenant's reactor is not found, for every operation", async () => {
    const { a, b } = await world()
    const formula = await a.admin.reactorFormulas.create(contract)
    const reactor = await a.admin.reactors.create({ name: 'r', formula_id: formula.id, configuration: good })
    for (const call of [
      b.admin.reactors.get(reactor.id),
      b.admin.reactors.update(reactor.id, { name: 'x', configuration: good }),
      b.admin.reactors.delete(reactor.id),
      b.client.reactors.react(reactor.id, { args: { card: { number: '4242' } } }),
    ]) {
      expect((await failure(call)).code).toBe('not_found')
    }
    expect((await b.admin.reactors.list({})).data).toEqual([])
  })

  it('needs reactor permissions; react needs token:use', async () => {
    const { a } = await world()
    const formula = await a.admin.reactorFormulas.create(contract)
    const reactor = await a.admin.reactors.create({ name: 'r', formula_id: formula.id, configuration: good })
    const r = a.client.reactors
    for (const call of [
      r.create({ name: 'r', formula_id: formula.id, configuration: good }),
      r.list({}),
      r.get(reactor.id),
      r.update(reactor.id, { name: 'r', configuration: good }),
      r.delete(reactor.id),
      a.admin.reactors.react(reactor.id, {}),
    ]) {
      expect((await failure(call)).code).toBe('forbidden')
    }
  })
})

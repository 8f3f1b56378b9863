/**
 * Reactors as the 2023 reference documents them (developers.basistheory.com
 * docs/api/reactors/reactors.mdx): the body `{ name, configuration, formula: { id },
 * application?: { id } }`, the reactor object carrying `formula` and `application`, list filters
 * `name` and `id`, configuration strings cast to the formula's declared types; and today's inline
 * reactors (`{ name, code, configuration }`) beside them.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { unchecked } from '../../entry/index.js'
import { failure, formulaBody, world } from '../formulas/setup.js'
import { fakeRunner } from '../http/fake-runner.js'

const contract = formulaBody({
  configuration: [
    { name: 'region', type: 'string' },
    { name: 'limit', type: 'number' },
    { name: 'live', type: 'boolean' },
  ],
})

const runner = fakeRunner()
afterAll(() => runner.close())

describe('reactors (docs/api/reactors/reactors.mdx)', () => {
  it('Create Reactor: formula: { id } and application: { id }; the answer carries formula and application', async () => {
    const { a, store } = await world({ runner })
    const formula = await a.admin.reactorFormulas.create(contract)
    const reactor = await a.admin.reactors.create({
      name: 'My Reactor',
      configuration: { region: 'eu', limit: '5', live: 'true' },
      formula: { id: formula.id },
      application: { id: a.private.application.id },
    })
    expect(reactor.formula).toEqual(formula)
    expect(reactor.application).toEqual(a.private.application)
    // Configuration values are cast to the formula's declared types, as react args are.
    expect(reactor.configuration).toEqual({ region: 'eu', limit: 5, live: true })
    expect(await a.admin.reactors.get(reactor.id)).toEqual(reactor)
    const [stored] = (await store.dump()).reactors
    expect(stored).not.toHaveProperty('formula')
    expect(stored?.application_id).toBe(a.private.application.id)
  })

  it('Create Reactor: refuses a management application, another tenant’s application, and a formula plus code', async () => {
    const { a, b, store } = await world({ runner })
    const formula = await a.admin.reactorFormulas.create(contract)
    const body = {
      name: 'r',
      configuration: { region: 'eu', limit: 1, live: false },
      formula: { id: formula.id },
    }
    const management = await failure(
      a.admin.reactors.create({ ...body, application: { id: a.management.application.id } }),
    )
    expect(management.issues).toHaveProperty(['application.id'])
    const foreign = await failure(
      a.admin.reactors.create({ ...body, application: { id: b.private.application.id } }),
    )
    expect(foreign.code).toBe('not_found')
    const both = await failure(
      a.admin.reactors.create({ ...body, code: 'module.exports = async () => ({})' }),
    )
    expect(both.issues).toHaveProperty(['code'])
    const impossible = await failure(
      a.admin.reactors.create({ ...body, configuration: { region: 'eu', limit: 'many', live: false } }),
    )
    expect(impossible.issues).toHaveProperty(['configuration.limit'])
    expect((await store.dump()).reactors).toEqual([])
  })

  it('List Reactors: name (wildcard search, as formulas) and id (array) filter', async () => {
    const { a, clock } = await world({ runner })
    const names = ['Card Lookup', 'card enrich', 'Bank Verify']
    const ids: string[] = []
    for (const name of names) {
      clock.advance(1)
      ids.push((await a.admin.reactors.create({ name, code: 'module.exports = async () => ({})' })).id)
    }
    const list = async (query: Record<string, unknown>) =>
      (await a.admin.reactors.list(query)).data.map((r) => r.name)
    expect(await list({ name: 'card' })).toEqual(['Card Lookup', 'card enrich'])
    expect(await list({ name: '*verify' })).toEqual(['Bank Verify'])
    expect(await list({ id: [ids[2], ids[0]] })).toEqual(['Card Lookup', 'Bank Verify'])
    expect(await list({ id: ids[1] })).toEqual(['card enrich'])
    expect((await a.admin.reactors.list({ name: 'card', size: '1' })).pagination.total_items).toBe(2)
  })

  it('Patch Reactor: a merge patch of name, configuration (setting by setting) and application (null removes)', async () => {
    const { a, clock } = await world({ runner })
    const reactor = await a.admin.reactors.create({
      name: 'inline',
      code: 'module.exports = async () => ({})',
      configuration: { A: '1', B: '2' },
      application: { id: a.private.application.id },
    })
    clock.advance(1000)
    const patched = await a.admin.reactors.patch(reactor.id, {
      configuration: { A: null, C: '3' },
      application: null,
    })
    expect(patched).toMatchObject({ name: 'inline', configuration: { B: '2', C: '3' } })
    expect(patched.application).toBeUndefined()
    expect(patched.modified_at).toBe('2030-01-01T00:00:01.000Z')
    const renamed = await a.admin.reactors.patch(reactor.id, { name: 'renamed' })
    expect(renamed).toMatchObject({ name: 'renamed', code: reactor.code, configuration: { B: '2', C: '3' } })
    expect((await failure(a.admin.reactors.patch(reactor.id, { code: 'SYNTAX' }))).issues).toHaveProperty([
      'code',
    ])
    expect((await failure(unchecked(a.admin).reactors.patch(reactor.id, { id: 'x' }))).issues).toHaveProperty(
      ['id'],
    )
  })

  it('React: an inline reactor runs its own code with args as sent and its configuration', async () => {
    const { a } = await world({ runner })
    const reactor = await a.admin.reactors.create({
      name: 'r',
      code: 'module.exports = x',
      configuration: { K: 'v' },
    })
    const out = await a.client.reactors.react(reactor.id, { args: { n: '1' } })
    expect(out.raw).toEqual({ args: { n: '1' }, configuration: { K: 'v' } })
  })

  it('Update Reactor: PUT keeps the formula or code when neither is given, and may move between them', async () => {
    const { a } = await world({ runner })
    const formula = await a.admin.reactorFormulas.create(formulaBody({ configuration: [] }))
    const reactor = await a.admin.reactors.create({ name: 'r', formula: { id: formula.id } })
    const kept = await a.admin.reactors.update(reactor.id, { name: 'r2' })
    expect(kept.formula_id).toBe(formula.id)
    const inline = await a.admin.reactors.update(reactor.id, { name: 'r3', code: 'module.exports = x' })
    expect(inline.formula).toBeUndefined()
    expect(inline.code).toBe('module.exports = x')
    // The formula is no longer used: it can be deleted.
    await a.admin.reactorFormulas.delete(formula.id)
  })
})

import { describe, expect, it } from 'vitest'
import { unchecked } from '../../entry/index.js'
import { failure, formulaBody, world } from './setup.js'

const official = (name: string) => formulaBody({ name, type: 'official' })

describe('reactor formulas', () => {
  it('create stamps creator and time, status verified; get returns it; PUT replaces it', async () => {
    const { a, clock } = await world()
    const created = await a.admin.reactorFormulas.create(formulaBody({ icon: 'data:image/png;base64,AAAA' }))
    expect(created).toEqual({
      id: expect.any(String),
      name: 'Card Lookup',
      description: 'looks a card up',
      type: 'private',
      status: 'verified',
      icon: 'data:image/png;base64,AAAA',
      code: formulaBody().code,
      configuration: [{ name: 'region', type: 'string' }],
      request_parameters: [{ name: 'card.number', type: 'string', optional: false }],
      created_at: '2030-01-01T00:00:00.000Z',
      created_by: a.management.application.id,
    })
    expect(await a.admin.reactorFormulas.get(created.id)).toEqual(created)

    clock.advance(60_000)
    const { description: _d, ...withoutDescription } = formulaBody({ name: 'Renamed', configuration: [] })
    const updated = await a.admin.reactorFormulas.update(created.id, withoutDescription)
    expect(updated).toEqual({
      ...created,
      name: 'Renamed',
      configuration: [],
      modified_at: '2030-01-01T00:01:00.000Z',
      modified_by: a.management.application.id,
      description: undefined,
      icon: undefined,
    })
    expect(updated).not.toHaveProperty('description')
    expect(updated).not.toHaveProperty('icon')
    expect(await a.admin.reactorFormulas.get(created.id)).toEqual(updated)
  })

  it('lists official and own formulas by name, filtered and paged', async () => {
    const { a, b, service } = await world()
    await service.admin.createOfficialFormula(official('Official Payments'))
    await a.admin.reactorFormulas.create(formulaBody({ name: 'Pay Out' }))
    await a.admin.reactorFormulas.create(formulaBody({ name: 'Lookup' }))
    await b.admin.reactorFormulas.create(formulaBody({ name: 'B payments' }))
    const names = async (query: object) => (await a.admin.reactorFormulas.list(query)).data.map((f) => f.name)
    expect(await names({})).toEqual(['Lookup', 'Official Payments', 'Pay Out'])
    expect(await names({ name: 'PAY' })).toEqual(['Official Payments', 'Pay Out'])
    expect(await names({ name: 'pay*' })).toEqual(['Pay Out'])
    expect(await names({ name: '*pay*' })).toEqual(['Official Payments', 'Pay Out'])
    const page = await a.admin.reactorFormulas.list({ page: '2', size: '2' })
    expect(page).toEqual({
      pagination: { total_items: 3, page_number: 2, page_size: 2, total_pages: 2 },
      data: [expect.objectContaining({ name: 'Pay Out' })],
    })
    expect(page.data[0]).not.toHaveProperty('tenant_id')
    expect((await failure(a.admin.reactorFormulas.list({ size: 101 }))).issues).toHaveProperty(['size'])
    expect((await failure(unchecked(a.admin).reactorFormulas.list({ other: 1 }))).code).toBe(
      'validation_failed',
    )
  })

  it("official formulas are read-only to tenants; another tenant's private formula is not found", async () => {
    const { a, b, service } = await world()
    const pub = await service.admin.createOfficialFormula(official('Shared'))
    expect(pub).toMatchObject({ type: 'official', status: 'verified' })
    expect(pub).not.toHaveProperty('created_by')
    const mine = await a.admin.reactorFormulas.create(formulaBody())

    expect(await b.admin.reactorFormulas.get(pub.id)).toEqual(pub)
    expect((await failure(b.admin.reactorFormulas.update(pub.id, formulaBody()))).code).toBe('forbidden')
    expect((await failure(b.admin.reactorFormulas.delete(pub.id))).code).toBe('forbidden')

    const unknown = await failure(b.admin.reactorFormulas.get('00000000-0000-4000-8000-000000000000'))
    for (const call of [
      b.admin.reactorFormulas.get(mine.id),
      b.admin.reactorFormulas.update(mine.id, formulaBody()),
      b.admin.reactorFormulas.delete(mine.id),
    ]) {
      const error = await failure(call)
      expect({ code: error.code, message: error.message }).toEqual({
        code: unknown.code,
        message: unknown.message,
      })
    }
    expect(unknown.code).toBe('not_found')
    expect((await b.admin.reactorFormulas.list({})).data.map((f) => f.id)).toEqual([pub.id])
    expect(await a.admin.reactorFormulas.get(mine.id)).toEqual(mine)
  })

  it('deletes a formula no reactor uses; one in use is a conflict, checked in the write', async () => {
    const { a, b, service } = await world()
    const mine = await a.admin.reactorFormulas.create(formulaBody())
    const reactor = await a.admin.reactors.create({
      name: 'r',
      formula_id: mine.id,
      configuration: { region: 'eu' },
    })
    expect((await failure(a.admin.reactorFormulas.delete(mine.id))).code).toBe('conflict')
    await a.admin.reactors.delete(reactor.id)
    await a.admin.reactorFormulas.delete(mine.id)
    expect((await failure(a.admin.reactorFormulas.get(mine.id))).code).toBe('not_found')
    expect((await failure(a.admin.reactorFormulas.delete(mine.id))).code).toBe('not_found')

    const pub = await service.admin.createOfficialFormula(official('Shared'))
    await b.admin.reactors.create({ name: 'r', formula_id: pub.id, configuration: { region: 'us' } })
    expect((await failure(service.admin.deleteOfficialFormula(pub.id))).code).toBe('conflict')
  })

  it('a reactor moved to another formula, or to inline code, no longer holds the one it left', async () => {
    const { a } = await world()
    const one = await a.admin.reactorFormulas.create(formulaBody({ name: 'One' }))
    const two = await a.admin.reactorFormulas.create(formulaBody({ name: 'Two' }))
    const reactor = await a.admin.reactors.create({
      name: 'r',
      formula_id: one.id,
      configuration: { region: 'eu' },
    })
    const other = await a.admin.reactors.create({
      name: 's',
      formula_id: two.id,
      configuration: { region: 'eu' },
    })
    await a.admin.reactors.update(reactor.id, {
      name: 'r',
      formula_id: two.id,
      configuration: { region: 'eu' },
    })
    await a.admin.reactorFormulas.delete(one.id)
    // Two reactors run `two`: moving one away leaves it in use.
    await a.admin.reactors.patch(other.id, { code: 'module.exports = async () => ({})', configuration: null })
    expect((await failure(a.admin.reactorFormulas.delete(two.id))).code).toBe('conflict')
    // Concurrent PATCHes of one reactor all land; the formula it ends with is the one it holds.
    const three = await a.admin.reactorFormulas.create(formulaBody({ name: 'Three' }))
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) =>
        a.admin.reactors.patch(reactor.id, { formula_id: i % 2 ? three.id : two.id, name: `r${i}` }),
      ),
    )
    expect(results.filter((r) => r.status === 'rejected')).toEqual([])
    const held = (await a.admin.reactors.get(reactor.id)).formula!.id
    const free = held === two.id ? three.id : two.id
    await a.admin.reactorFormulas.delete(free)
    expect((await failure(a.admin.reactorFormulas.delete(held))).code).toBe('conflict')
    await a.admin.reactors.delete(reactor.id)
    await a.admin.reactorFormulas.delete(held)
  })

  it('a delete racing a reactor create: exactly one wins, never a dangling reactor', async () => {
    for (let round = 0; round < 20; round++) {
      const { a, store } = await world()
      const mine = await a.admin.reactorFormulas.create(formulaBody())
      const results = await Promise.allSettled([
        a.admin.reactors.create({ name: 'r', formula_id: mine.id, configuration: { region: 'eu' } }),
        a.admin.reactorFormulas.delete(mine.id),
      ])
      const dump = await store.dump()
      const reactorMade = results[0].status === 'fulfilled'
      expect(reactorMade).toBe(dump.reactors.length === 1)
      expect(dump.formulas.length).toBe(reactorMade ? 1 : 0)
    }
  })

  it('the operator updates and deletes official formulas; its status option', async () => {
    const { a, clock, service } = await world()
    const pub = await service.admin.createOfficialFormula(official('Shared'), { status: 'coming_soon' })
    expect(pub.status).toBe('coming_soon')
    clock.advance(1000)
    const updated = await service.admin.updateOfficialFormula(pub.id, official('Shared v2'), {
      status: 'verified',
    })
    expect(updated).toMatchObject({
      name: 'Shared v2',
      status: 'verified',
      modified_at: '2030-01-01T00:00:01.000Z',
    })
    expect(await a.admin.reactorFormulas.get(pub.id)).toEqual(updated)
    const mine = await a.admin.reactorFormulas.create(formulaBody())
    expect((await failure(service.admin.updateOfficialFormula(mine.id, official('x')))).code).toBe(
      'not_found',
    )
    expect((await failure(service.admin.deleteOfficialFormula(mine.id))).code).toBe('not_found')
    await service.admin.deleteOfficialFormula(pub.id)
    expect((await failure(a.admin.reactorFormulas.get(pub.id))).code).toBe('not_found')
  })

  it('needs the reactor permissions', async () => {
    const { a } = await world()
    const mine = await a.admin.reactorFormulas.create(formulaBody())
    const none = await a.app('management', ['application:read'])
    const f = none.client.reactorFormulas
    for (const call of [
      f.create(formulaBody()),
      f.list({}),
      f.get(mine.id),
      f.update(mine.id, formulaBody()),
      f.delete(mine.id),
    ]) {
      expect((await failure(call)).code).toBe('forbidden')
    }
    expect((await failure(a.client.reactorFormulas.list({}))).code).toBe('forbidden')
    const reader = await a.app('management', ['reactor:read'])
    expect((await reader.client.reactorFormulas.list({})).data).toHaveLength(1)
  })
})

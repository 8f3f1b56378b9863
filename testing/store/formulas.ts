import { expect, it } from 'vitest'
import type { Op, Store } from '../../src/store/index.js'
import { formula, NOW, T, U } from './records.js'

/** Formulas and reactors: official and own formulas, name filters, formula use across tenants. Registered inside the store suite's `describe`. */
export function formulasTests(fresh: () => Promise<Store>): void {
  it('shows tenants official formulas and their own, filtered by name and paged', async () => {
    const store = await fresh()
    await store.write({
      ops: [
        { op: 'formula.put', formula: formula('f1', 'Card Lookup', null) },
        { op: 'formula.put', formula: formula('f2', 'card enrich') },
        { op: 'formula.put', formula: formula('f3', 'Bank Verify') },
        { op: 'formula.put', formula: formula('f4', 'Card Secret', U) },
      ],
    })
    const names = async (name?: string, offset = 0, limit = 10) =>
      (await store.listFormulas(T, { offset, limit, ...(name === undefined ? {} : { name }) })).items.map(
        (f) => f.name,
      )
    expect(await names()).toEqual(['Bank Verify', 'Card Lookup', 'card enrich'])
    expect(await names('CARD')).toEqual(['Card Lookup', 'card enrich'])
    expect(await names('card*')).toEqual(['Card Lookup', 'card enrich'])
    expect(await names('*verify')).toEqual(['Bank Verify'])
    expect(await names('c*k*p')).toEqual(['Card Lookup'])
    expect(await names('.*')).toEqual([])
    expect(await names(undefined, 1, 1)).toEqual(['Card Lookup'])
    expect((await store.listFormulas(T, { offset: 0, limit: 1 })).total).toBe(3)
    expect((await store.getFormula(T, 'f1'))?.type).toBe('official')
    expect(await store.getFormula(T, 'f4')).toBeNull()
    expect((await store.getFormula(U, 'f4'))?.name).toBe('Card Secret')
    expect(await store.getFormula(null, 'f2')).toBeNull()
    await store.close()
  })

  it('formula.unused holds while no formula-use record names the formula, of any tenant', async () => {
    const store = await fresh()
    const reactor = (id: string, formulaId: string, tenant = T) => ({
      id,
      tenant_id: tenant,
      name: id,
      formula_id: formulaId,
      configuration: { a: 1 },
      created_at: NOW,
      created_by: 'app-1',
    })
    const use = (formula_id: string, reactor_id: string, tenant_id = T): Op => ({
      op: 'formula_use.put',
      use: { formula_id, tenant_id, reactor_id },
    })
    const unuse = (formula_id: string, reactor_id: string, tenant_id = T): Op => ({
      op: 'formula_use.delete',
      formula_id,
      tenant_id,
      reactor_id,
    })
    await store.write({ ops: [{ op: 'formula.put', formula: formula('f1', 'One', null) }] })
    const unused = async (id = 'f1') =>
      (await store.write({ checks: [{ check: 'formula.unused', id }], ops: [] })).ok
    expect(await unused()).toBe(true)
    // A reactor alone uses nothing: its use record, which the core writes beside it, does.
    await store.write({ ops: [{ op: 'reactor.put', reactor: reactor('r1', 'f1') }] })
    expect(await unused()).toBe(true)
    await store.write({ ops: [use('f1', 'r1')] })
    await store.write({ ops: [{ op: 'reactor.put', reactor: reactor('r2', 'f1', U) }, use('f1', 'r2', U)] })
    expect(await unused()).toBe(false)
    expect(await unused('f2')).toBe(true)
    expect((await store.listReactors(T, { offset: 0, limit: 10 })).items.map((r) => r.id)).toEqual(['r1'])
    expect(await store.getReactor(U, 'r1')).toBeNull()
    // Putting a use again keeps one record: one delete ends it.
    await store.write({ ops: [use('f1', 'r1')] })
    await store.write({ ops: [{ op: 'reactor.delete', tenant_id: T, id: 'r1' }, unuse('f1', 'r1')] })
    expect(await unused()).toBe(false) // U's reactor still runs it
    // Deleting a record that is not there (another tenant's key, another reactor) changes nothing.
    await store.write({ ops: [unuse('f1', 'r2'), unuse('f1', 'r1', U), unuse('f2', 'r2', U)] })
    expect(await unused()).toBe(false)
    await store.write({
      ops: [{ op: 'reactor.put', reactor: reactor('r2', 'f2', U) }, unuse('f1', 'r2', U), use('f2', 'r2', U)],
    })
    expect(await unused()).toBe(true)
    expect(await unused('f2')).toBe(false)
    const present = (tenant: string, id: string) =>
      store
        .write({ checks: [{ check: 'reactor.present', tenant_id: tenant, id }], ops: [] })
        .then((r) => r.ok)
    expect(await present(U, 'r2')).toBe(true)
    expect(await present(T, 'r2')).toBe(false)
    await store.close()
  })

  it('reactor.unchanged holds for the reactor as read only', async () => {
    const store = await fresh()
    const r = {
      id: 'r1',
      tenant_id: T,
      name: 'one',
      formula_id: 'f1',
      configuration: { a: 1 },
      created_at: NOW,
      created_by: 'app-1',
    }
    await store.write({ ops: [{ op: 'reactor.put', reactor: r }] })
    const unchanged = async (reactor: typeof r, tenant = T) =>
      (
        await store.write({
          checks: [{ check: 'reactor.unchanged', tenant_id: tenant, id: 'r1', reactor }],
          ops: [],
        })
      ).ok
    expect(await unchanged(r)).toBe(true)
    expect(await unchanged(r, U)).toBe(false)
    expect(await unchanged({ ...r, name: 'two' })).toBe(false)
    await store.write({ ops: [{ op: 'reactor.put', reactor: { ...r, configuration: { a: 2 } } }] })
    expect(await unchanged(r)).toBe(false)
    await store.write({ ops: [{ op: 'reactor.delete', tenant_id: T, id: 'r1' }] })
    expect(await unchanged({ ...r, configuration: { a: 2 } })).toBe(false)
    await store.close()
  })

  it('lists reactors filtered by name (as formulas) and by ids; inline-code reactors use no formula', async () => {
    const store = await fresh()
    const reactor = (id: string, name: string, minute: number) => ({
      id,
      tenant_id: T,
      name,
      code: 'module.exports = async () => ({})',
      configuration: {},
      created_at: `2030-01-01T00:0${minute}:00.000Z`,
      created_by: 'app-1',
    })
    await store.write({ ops: [{ op: 'formula.put', formula: formula('f1', 'One') }] })
    await store.write({
      ops: [
        { op: 'reactor.put', reactor: reactor('r1', 'Card Lookup', 1) },
        { op: 'reactor.put', reactor: reactor('r2', 'card enrich', 2) },
        { op: 'reactor.put', reactor: reactor('r3', 'Bank Verify', 3) },
        { op: 'reactor.put', reactor: { ...reactor('r4', 'Card Other', 4), tenant_id: U } },
      ],
    })
    const ids = async (query: { name?: string; ids?: string[] }, offset = 0, limit = 10) =>
      (await store.listReactors(T, { offset, limit, ...query })).items.map((r) => r.id)
    expect(await ids({})).toEqual(['r1', 'r2', 'r3'])
    expect(await ids({ name: 'CARD' })).toEqual(['r1', 'r2'])
    expect(await ids({ name: '*verify' })).toEqual(['r3'])
    expect(await ids({ name: 'c*k*p' })).toEqual(['r1'])
    expect(await ids({ name: '%' })).toEqual([])
    expect(await ids({ ids: ['r3', 'r1', 'r4', 'nope'] })).toEqual(['r1', 'r3'])
    expect(await ids({ name: 'card', ids: ['r2', 'r3'] })).toEqual(['r2'])
    expect((await store.listReactors(T, { offset: 1, limit: 1, name: 'card' })).total).toBe(2)
    expect(await ids({ name: 'card' }, 1, 1)).toEqual(['r2'])
    // Renaming re-indexes the name.
    await store.write({ ops: [{ op: 'reactor.put', reactor: reactor('r3', 'Card Bank', 3) }] })
    expect(await ids({ name: 'card b' })).toEqual(['r3'])
    const unused = (await store.write({ checks: [{ check: 'formula.unused', id: 'f1' }], ops: [] })).ok
    expect(unused).toBe(true)
    await store.close()
  })
}

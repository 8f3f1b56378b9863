import { expect, it } from 'vitest'
import type { Check, Store } from '../../src/store/index.js'
import { app, formula, NOW, session, T, token, tx, U } from './records.js'

const reactor = (id: string, formulaId: string, tenant = T) => ({
  id,
  tenant_id: tenant,
  name: id,
  formula_id: formulaId,
  configuration: {},
  created_at: NOW,
  created_by: 'app-1',
})

/**
 * Each guard kind fails where it must, and a write refused by it writes nothing and names it.
 * Registered inside the store suite's `describe`.
 */
export function guardTests(fresh: () => Promise<Store>): void {
  /** Whether `check` holds, shown by a write it guards: refused writes leave the marker token absent. */
  const guarded = async (store: Store, check: Check, marker: string) => {
    const result = await store.write({ checks: [check], ops: [{ op: 'token.put', token: token(marker) }] })
    const written = (await store.getToken(T, marker)) !== null
    expect(written).toBe(result.ok)
    if (!result.ok) expect(result.failed).toEqual(check)
    return result.ok
  }

  it('formula.present holds for the own and official formulas only, and fails once deleted', async () => {
    const store = await fresh()
    await store.write({
      ops: [
        { op: 'formula.put', formula: formula('own', 'Own') },
        { op: 'formula.put', formula: formula('official', 'Official', null) },
        { op: 'formula.put', formula: formula('other', 'Other', U) },
      ],
    })
    const present = (id: string, marker: string) =>
      guarded(store, { check: 'formula.present', tenant_id: T, id }, marker)
    expect(await present('own', 'm1')).toBe(true)
    expect(await present('official', 'm2')).toBe(true)
    expect(await present('other', 'm3')).toBe(false)
    expect(await present('missing', 'm4')).toBe(false)
    await store.write({ ops: [{ op: 'formula.delete', tenant_id: T, id: 'own' }] })
    await store.write({ ops: [{ op: 'formula.delete', tenant_id: null, id: 'official' }] })
    expect(await present('own', 'm5')).toBe(false)
    expect(await present('official', 'm6')).toBe(false)
    expect(await store.getFormula(T, 'own')).toBeNull()
    expect(await store.getFormula(T, 'official')).toBeNull()
    expect((await store.getFormula(U, 'other'))?.id).toBe('other')
    await store.close()
  })

  it('application.present and reactor.present fail for a missing, deleted or foreign record', async () => {
    const store = await fresh()
    await store.write({
      ops: [
        { op: 'application.put', application: app('a1') },
        { op: 'formula.put', formula: formula('f', 'F', null) },
        { op: 'reactor.put', reactor: reactor('r1', 'f') },
      ],
    })
    const appPresent = (tenant: string, id: string, marker: string) =>
      guarded(store, { check: 'application.present', tenant_id: tenant, id }, marker)
    const reactorPresent = (tenant: string, id: string, marker: string) =>
      guarded(store, { check: 'reactor.present', tenant_id: tenant, id }, marker)
    expect(await appPresent(T, 'a1', 'm1')).toBe(true)
    expect(await appPresent(U, 'a1', 'm2')).toBe(false)
    expect(await reactorPresent(T, 'r1', 'm3')).toBe(true)
    expect(await reactorPresent(U, 'r1', 'm4')).toBe(false)
    await store.write({
      ops: [
        { op: 'application.delete', tenant_id: T, id: 'a1' },
        { op: 'reactor.delete', tenant_id: T, id: 'r1' },
      ],
    })
    expect(await appPresent(T, 'a1', 'm5')).toBe(false)
    expect(await reactorPresent(T, 'r1', 'm6')).toBe(false)
    expect(await store.findKey('hash-a1')).toBeNull()
    await store.close()
  })

  it('transaction.unchanged fails for a deleted, moved or changed transaction', async () => {
    const store = await fresh()
    const open = tx('t1')
    await store.write({ ops: [{ op: 'transaction.put', transaction: open }] })
    const unchanged = (transaction: typeof open, marker: string) =>
      guarded(store, { check: 'transaction.unchanged', tenant_id: T, id: 't1', transaction }, marker)
    expect(await unchanged(open, 'm3')).toBe(true)
    expect(await unchanged({ ...open, tenant_id: U }, 'm4')).toBe(false)
    expect(
      (
        await store.write({
          checks: [{ check: 'transaction.unchanged', tenant_id: U, id: 't1', transaction: open }],
          ops: [],
        })
      ).ok,
    ).toBe(false)
    await store.write({
      ops: [
        { op: 'transaction.put', transaction: { ...open, version: 1 } },
        {
          op: 'staged.put',
          staged: { tenant_id: T, transaction_id: 't1', token_id: 'y', seq: 1, token: token('y') },
        },
      ],
    })
    expect(await unchanged(open, 'm5')).toBe(false)
    const staged = await store.getTransaction(T, 't1')
    expect(staged?.version).toBe(1)
    expect(await unchanged(staged!, 'm6')).toBe(true)
    await store.write({ ops: [{ op: 'transaction.delete', tenant_id: T, id: 't1' }] })
    expect(await store.getTransaction(T, 't1')).toBeNull()
    expect(await unchanged(staged!, 'm8')).toBe(false)
    expect(await guarded(store, { check: 'token.unlocked', tenant_id: T, id: 'y', now: NOW }, 'm9')).toBe(
      true,
    )
    await store.close()
  })

  it('session.unchanged and formula.unused refuse the write they guard', async () => {
    const store = await fresh()
    await store.write({
      ops: [
        { op: 'formula.put', formula: formula('f', 'F', null) },
        { op: 'reactor.put', reactor: reactor('r', 'f', U) },
        { op: 'formula_use.put', use: { formula_id: 'f', tenant_id: U, reactor_id: 'r' } },
      ],
    })
    expect(await guarded(store, { check: 'formula.unused', id: 'f' }, 'm1')).toBe(false)
    const s = session('s1')
    await store.write({ ops: [{ op: 'session.put', session: { ...s, state: 'authorized' } }] })
    expect(
      await guarded(store, { check: 'session.unchanged', tenant_id: T, id: 's1', session: s }, 'm2'),
    ).toBe(false)
    await store.close()
  })
}

import { expect, it } from 'vitest'
import type { Op, Store } from '../../src/store/index.js'
import { app, NOW, session, T, U } from './records.js'

/** Tenants, applications and sessions found by key hash, and application lists. Registered inside the store suite's `describe`. */
export function keysTests(fresh: () => Promise<Store>): void {
  it('tells whether it holds any tenant', async () => {
    const store = await fresh()
    expect(await store.hasTenants()).toBe(false)
    await store.write({ ops: [{ op: 'tenant.put', tenant: { id: T, name: 'a', created_at: NOW } }] })
    expect(await store.hasTenants()).toBe(true)
    expect(await store.getTenant(T)).toEqual({ id: T, name: 'a', created_at: NOW })
    expect(await store.getTenant(U)).toBeNull()
    await store.close()
  })

  it('finds applications and sessions by key hash; deleting drops the key', async () => {
    const store = await fresh()
    await store.write({ ops: [{ op: 'application.put', application: app('a1') }] })
    await store.write({ ops: [{ op: 'session.put', session: session('s1') }] })
    expect(await store.findKey('hash-a1')).toEqual({ kind: 'application', application: app('a1') })
    expect(await store.findKey('key-s1')).toEqual({ kind: 'session', session: session('s1') })
    expect(await store.findKey('nope')).toBeNull()
    // Re-keying an application drops the old hash.
    await store.write({
      ops: [{ op: 'application.put', application: { ...app('a1'), key_hash: 'hash-new' } }],
    })
    expect(await store.findKey('hash-a1')).toBeNull()
    expect((await store.findKey('hash-new'))?.kind).toBe('application')
    await store.write({ ops: [{ op: 'application.delete', tenant_id: T, id: 'a1' }] })
    await store.write({ ops: [{ op: 'session.delete', tenant_id: T, id: 's1' }] })
    expect(await store.findKey('hash-new')).toBeNull()
    expect(await store.findKey('key-s1')).toBeNull()
    expect(await store.getSessionByNonce(T, 'nonce-s1')).toBeNull()
    await store.close()
  })

  it('finds an application by each of its keys; changing its keys drops the ones it no longer holds', async () => {
    const store = await fresh()
    const key = (id: string) => ({ id, key_hash: `hash-${id}`, created_at: NOW })
    const { key_hash: _legacy, ...base } = app('a1')
    const two = { ...base, keys: [key('k1'), key('k2')] }
    await store.write({ ops: [{ op: 'application.put', application: two }] })
    expect(await store.findKey('hash-k1')).toEqual({ kind: 'application', application: two })
    expect(await store.findKey('hash-k2')).toEqual({ kind: 'application', application: two })
    expect(await store.findKey('hash-a1')).toBeNull()
    // A compare-and-set on the whole record: a stale copy is refused.
    const one = { ...base, keys: [key('k2'), key('k3')] }
    const stale = await store.write({
      checks: [{ check: 'application.unchanged', tenant_id: T, id: 'a1', application: base }],
      ops: [{ op: 'application.put', application: one }],
    })
    expect(stale.ok).toBe(false)
    const fresh1 = await store.write({
      checks: [{ check: 'application.unchanged', tenant_id: T, id: 'a1', application: two }],
      ops: [{ op: 'application.put', application: one }],
    })
    expect(fresh1.ok).toBe(true)
    expect(await store.findKey('hash-k1')).toBeNull()
    expect((await store.findKey('hash-k3'))?.kind).toBe('application')
    // A record from before several keys (key_hash) moving to keys drops its old hash.
    await store.write({ ops: [{ op: 'application.put', application: app('a2') }] })
    const { key_hash: _old, ...a2 } = app('a2')
    await store.write({ ops: [{ op: 'application.put', application: { ...a2, keys: [key('k9')] } }] })
    expect(await store.findKey('hash-a2')).toBeNull()
    const owner = await store.findKey('hash-k9')
    expect(owner?.kind === 'application' && owner.application.id).toBe('a2')
    await store.write({ ops: [{ op: 'application.delete', tenant_id: T, id: 'a1' }] })
    expect(await store.findKey('hash-k2')).toBeNull()
    expect(await store.findKey('hash-k3')).toBeNull()
    await store.close()
  })

  it('lists applications of one tenant in creation order, paged', async () => {
    const store = await fresh()
    const ops: Op[] = []
    for (let i = 0; i < 5; i++) {
      ops.push({
        op: 'application.put',
        application: { ...app(`a${i}`), created_at: `2030-01-0${i + 1}T00:00:00.000Z` },
      })
    }
    ops.push({ op: 'application.put', application: app('other', U) })
    await store.write({ ops })
    const page = await store.listApplications(T, { offset: 1, limit: 2 })
    expect(page.total).toBe(5)
    expect(page.items.map((a) => a.id)).toEqual(['a1', 'a2'])
    const some = await store.listApplications(T, { offset: 0, limit: 10, ids: ['a3', 'other', 'a0', 'nope'] })
    expect(some.total).toBe(2)
    expect(some.items.map((a) => a.id)).toEqual(['a0', 'a3'])
    const paged = await store.listApplications(T, { offset: 1, limit: 1, ids: ['a3', 'a0', 'a4'] })
    expect([paged.total, paged.items.map((a) => a.id)]).toEqual([3, ['a3']])
    expect(await store.getApplication(U, 'a1')).toBeNull()
    expect((await store.getApplication(T, 'a1'))?.id).toBe('a1')
    await store.close()
  })
}

import { expect, it } from 'vitest'
import type { StoredSession } from '../../src/kernel/index.js'
import type { Store } from '../../src/store/index.js'
import { NOW, session, T, U } from './records.js'

/** Sessions: single-use nonces under 100-way races, and the compare-and-set guard. Registered inside the store suite's `describe`. */
export function sessionsTests(fresh: () => Promise<Store>): void {
  /** The session put again as authorized, guarded (as the core does) on it being as it was read. */
  const authorize = (store: Store, read: StoredSession, by: string) =>
    store.write({
      checks: [{ check: 'session.unchanged', tenant_id: read.tenant_id, id: read.id, session: read }],
      ops: [
        {
          op: 'session.put',
          session: { ...read, state: 'authorized', permissions: ['token:read'], authorized_by: by },
        },
      ],
    })

  it('lets exactly one of 100 concurrent authorizations of one nonce win', async () => {
    const store = await fresh()
    await store.write({ ops: [{ op: 'session.put', session: session('s1') }] })
    const read = (await store.getSessionByNonce(T, 'nonce-s1'))!
    expect(read.state).toBe('created')
    const results = await Promise.all(Array.from({ length: 100 }, (_, i) => authorize(store, read, `a${i}`)))
    expect(results.filter((r) => r.ok)).toHaveLength(1)
    const winner = await store.getSessionByNonce(T, 'nonce-s1')
    expect(winner?.state).toBe('authorized')
    expect(results.map((r) => r.ok)[Number(winner?.authorized_by?.slice(1))]).toBe(true)
    // A later attempt built on the first read is refused and changes nothing.
    const late = await authorize(store, read, 'late')
    expect(late).toMatchObject({ ok: false, failed: { check: 'session.unchanged' } })
    expect((await store.getSessionByNonce(T, 'nonce-s1'))?.authorized_by).toBe(winner?.authorized_by)
    await store.close()
  })

  it('session.unchanged fails for a changed, deleted or other tenant’s session', async () => {
    const store = await fresh()
    const created = session('s1')
    await store.write({ ops: [{ op: 'session.put', session: created }] })
    const unchanged = (s: StoredSession) =>
      store
        .write({
          checks: [{ check: 'session.unchanged', tenant_id: s.tenant_id, id: s.id, session: s }],
          ops: [],
        })
        .then((r) => r.ok)
    expect(await unchanged(created)).toBe(true)
    expect(await unchanged({ ...created, tenant_id: U })).toBe(false)
    expect(await unchanged({ ...created, expires_at: NOW })).toBe(false)
    await store.write({ ops: [{ op: 'session.delete', tenant_id: T, id: 's1' }] })
    expect(await unchanged(created)).toBe(false)
    expect(await store.getSessionByNonce(T, 'nonce-s1')).toBeNull()
    await store.close()
  })
}

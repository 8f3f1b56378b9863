import { expect, it } from 'vitest'
import type { Store } from '../../src/store/contract.js'
import { NOW, session, T, U } from './records.js'

/** Sessions: single-use nonces under 100-way races, and expiry. Registered inside the store suite's `describe`. */
export function sessionsTests(fresh: () => Promise<Store>): void {
  it('lets exactly one of 100 concurrent authorizations of one nonce win', async () => {
    const store = await fresh()
    await store.write({ ops: [{ op: 'session.put', session: session('s1') }] })
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        store.write({
          checks: [{ check: 'session.pending', tenant_id: T, nonce_hash: 'nonce-s1', now: NOW }],
          ops: [
            {
              op: 'session.put',
              session: session('s1', {
                state: 'authorized',
                permissions: ['token:read'],
                authorized_by: `a${i}`,
              }),
            },
          ],
        }),
      ),
    )
    expect(results.filter((r) => r.ok)).toHaveLength(1)
    const winner = await store.getSessionByNonce(T, 'nonce-s1')
    expect(winner?.state).toBe('authorized')
    const pending = await store.write({
      checks: [{ check: 'session.pending', tenant_id: T, nonce_hash: 'nonce-s1', now: NOW }],
      ops: [],
    })
    expect(pending.ok).toBe(false)
    await store.close()
  })

  it('does not treat an expired session as pending', async () => {
    const store = await fresh()
    await store.write({ ops: [{ op: 'session.put', session: session('s1') }] })
    const result = await store.write({
      checks: [
        { check: 'session.pending', tenant_id: T, nonce_hash: 'nonce-s1', now: '2030-01-01T00:03:00.000Z' },
      ],
      ops: [],
    })
    expect(result.ok).toBe(false)
    expect(
      (
        await store.write({
          checks: [{ check: 'session.pending', tenant_id: U, nonce_hash: 'nonce-s1', now: NOW }],
          ops: [],
        })
      ).ok,
    ).toBe(false)
    await store.close()
  })
}

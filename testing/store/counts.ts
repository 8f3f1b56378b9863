import { expect, it } from 'vitest'
import type { Store } from '../../src/store/index.js'
import { idem } from './idempotency.js'
import { NOW, session, T, tx, U } from './records.js'

/**
 * `countRecords`: a tenant's idempotency records, created sessions and what its open transactions
 * staged (`transaction.staged`, a sum of characters), kept in step by every write
 * that puts or deletes one, exact under concurrent writes, untouched by a write whose guard fails.
 * Registered inside the store suite's `describe`.
 */
export function countsTests(fresh: () => Promise<Store>, reopen?: (store: Store) => Promise<Store>): void {
  it('counts a tenant’s idempotency records: a put of a new one adds, a put over one does not, a delete takes away', async () => {
    const store = await fresh()
    const count = () =>
      Promise.all([store.countRecords(T, 'idempotency'), store.countRecords(U, 'idempotency')])
    expect(await count()).toEqual([0, 0])
    await store.write({
      ops: [
        { op: 'idempotency.put', record: idem('a') },
        { op: 'idempotency.put', record: idem('b') },
        { op: 'idempotency.put', record: idem('u', { tenant_id: U }) },
      ],
    })
    expect(await count()).toEqual([2, 1])
    await store.write({ ops: [{ op: 'idempotency.put', record: idem('a', { state: 'done', answer: '1' }) }] })
    expect(await count()).toEqual([2, 1])
    // A write whose guard fails changes no count.
    const refused = await store.write({
      checks: [{ check: 'idempotency.absent', tenant_id: T, id: 'a' }],
      ops: [{ op: 'idempotency.put', record: idem('c') }],
    })
    expect(refused.ok).toBe(false)
    expect(await count()).toEqual([2, 1])
    await store.write({
      ops: [
        { op: 'idempotency.delete', tenant_id: T, id: 'a' },
        { op: 'idempotency.delete', tenant_id: T, id: 'missing' },
      ],
    })
    expect(await count()).toEqual([1, 1])
    expect(await store.countRecords('nobody', 'idempotency')).toBe(0)
    await store.close()
  })

  it('counts exactly under 50 concurrent claims of new keys and 20 of one key', async () => {
    const store = await fresh()
    const claim = (id: string, claim: string) =>
      store.write({
        checks: [{ check: 'idempotency.absent', tenant_id: T, id }],
        ops: [{ op: 'idempotency.put', record: idem(id, { claim }) }],
      })
    await Promise.all([
      ...Array.from({ length: 50 }, (_, n) => claim(`k${n}`, 'c')),
      ...Array.from({ length: 20 }, (_, n) => claim('same', `c${n}`)),
    ])
    expect(await store.countRecords(T, 'idempotency')).toBe(51)
    await Promise.all(
      Array.from({ length: 50 }, (_, n) =>
        store.write({ ops: [{ op: 'idempotency.delete', tenant_id: T, id: `k${n}` }] }),
      ),
    )
    expect(await store.countRecords(T, 'idempotency')).toBe(1)
    await store.close()
  })

  it('counts a tenant’s sessions in state created: authorizing one or deleting it takes it away', async () => {
    const store = await fresh()
    const count = () =>
      Promise.all([store.countRecords(T, 'session.created'), store.countRecords(U, 'session.created')])
    await store.write({
      ops: [
        { op: 'session.put', session: session('s1') },
        { op: 'session.put', session: session('s2') },
        { op: 'session.put', session: session('s3') },
        { op: 'session.put', session: session('u1', { tenant_id: U }) },
      ],
    })
    expect(await count()).toEqual([3, 1])
    // A put over a created session that leaves it created does not count it twice.
    await store.write({ ops: [{ op: 'session.put', session: session('s1', { expires_at: NOW }) }] })
    expect(await count()).toEqual([3, 1])
    const authorized = session('s2', { state: 'authorized', permissions: ['token:read'] })
    await store.write({ ops: [{ op: 'session.put', session: authorized }] })
    expect(await count()).toEqual([2, 1])
    await store.write({ ops: [{ op: 'session.put', session: authorized }] })
    await store.write({ ops: [{ op: 'session.delete', tenant_id: T, id: 's2' }] })
    expect(await count()).toEqual([2, 1])
    await store.write({ ops: [{ op: 'session.delete', tenant_id: T, id: 's3' }] })
    expect(await count()).toEqual([1, 1])
    if (reopen) {
      const again = await reopen(store)
      expect(await again.countRecords(T, 'session.created')).toBe(1)
      expect(await again.countRecords(U, 'session.created')).toBe(1)
      await again.close()
    } else await store.close()
  })

  it('sums the staged characters of a tenant’s open transactions: a put moves it by the change, an end or a delete takes it away', async () => {
    const store = await fresh()
    const count = () =>
      Promise.all([store.countRecords(T, 'transaction.staged'), store.countRecords(U, 'transaction.staged')])
    const put = (id: string, extra: Parameters<typeof tx>[1] = {}) =>
      ({ op: 'transaction.put', transaction: tx(id, extra) }) as const
    await store.write({
      ops: [put('x1', { staged_chars: 100 }), put('x2'), put('y1', { tenant_id: U, staged_chars: 7 })],
    })
    expect(await count()).toEqual([100, 7])
    await store.write({ ops: [put('x2', { staged_chars: 40, version: 1 })] })
    await store.write({ ops: [put('x1', { staged_chars: 150, version: 1 })] })
    expect(await count()).toEqual([190, 7])
    // A refused write moves nothing, nor does the guard itself.
    const refused = await store.write({
      checks: [{ check: 'count.within', tenant_id: T, kind: 'transaction.staged', max: 189 }],
      ops: [put('x2', { staged_chars: 41, version: 2 })],
    })
    expect(refused.ok).toBe(false)
    const held = await store.write({
      checks: [{ check: 'count.within', tenant_id: T, kind: 'transaction.staged', max: 190 }],
      ops: [put('x2', { staged_chars: 41, version: 2 })],
    })
    expect(held.ok).toBe(true)
    expect(await count()).toEqual([191, 7])
    // Ended (any state but open), or deleted: its share goes.
    await store.write({ ops: [put('x1', { staged_chars: 150, state: 'committed', version: 2 })] })
    expect(await count()).toEqual([41, 7])
    await store.write({ ops: [{ op: 'transaction.delete', tenant_id: T, id: 'x2' }] })
    await store.write({ ops: [{ op: 'transaction.delete', tenant_id: T, id: 'x1' }] })
    expect(await count()).toEqual([0, 7])
    if (reopen) {
      const again = await reopen(store)
      expect(await again.countRecords(U, 'transaction.staged')).toBe(7)
      await again.close()
    } else await store.close()
  })
}

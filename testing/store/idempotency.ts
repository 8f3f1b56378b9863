import { expect, it } from 'vitest'
import type { IdempotencyRecord } from '../../src/kernel/index.js'
import type { Store } from '../../src/store/index.js'
import { NOW, T, U } from './records.js'

/** An idempotency record of tenant `T` (or as `extra` says), pending under claim `c1`. */
export const idem = (id: string, extra: Partial<IdempotencyRecord> = {}): IdempotencyRecord => ({
  tenant_id: T,
  id,
  state: 'pending',
  claim: 'c1',
  request: `request-${id}`,
  created_at: NOW,
  lease_until: '2030-01-01T00:02:00.000Z',
  expires_at: '2030-01-02T00:00:00.000Z',
  ...extra,
})

/** Idempotency records: put, get, claim guards, expiry listing. Registered inside the store suite's `describe`. */
export function idempotencyTests(fresh: () => Promise<Store>): void {
  it('keeps idempotency records by tenant and id; a claim is taken by exactly one write', async () => {
    const store = await fresh()
    const claim = (record: IdempotencyRecord) =>
      store.write({
        checks: [{ check: 'idempotency.absent', tenant_id: record.tenant_id, id: record.id }],
        ops: [{ op: 'idempotency.put', record }],
      })
    const results = await Promise.all([claim(idem('k1')), claim(idem('k1', { claim: 'c2' }))])
    expect(results.filter((r) => r.ok)).toHaveLength(1)
    const held = await store.getIdempotency(T, 'k1')
    expect(held?.state).toBe('pending')
    expect(await store.getIdempotency(U, 'k1')).toBeNull()
    expect((await claim(idem('k1', { tenant_id: U }))).ok).toBe(true)

    // Completing needs the claim the record holds.
    const done = { ...held!, state: 'done' as const, answer: '{"id":"x"}' }
    const other = held!.claim === 'c1' ? 'c2' : 'c1'
    const wrong = await store.write({
      checks: [{ check: 'idempotency.claimed', tenant_id: T, id: 'k1', claim: other }],
      ops: [{ op: 'idempotency.put', record: done }],
    })
    expect(wrong.ok).toBe(false)
    const right = await store.write({
      checks: [{ check: 'idempotency.claimed', tenant_id: T, id: 'k1', claim: held!.claim }],
      ops: [{ op: 'idempotency.put', record: done }],
    })
    expect(right).toEqual({ ok: true })
    expect(await store.getIdempotency(T, 'k1')).toEqual(done)
    expect((await store.dump()).idempotency).toEqual([done, idem('k1', { tenant_id: U })])
    await store.write({ ops: [{ op: 'idempotency.delete', tenant_id: T, id: 'k1' }] })
    expect(await store.getIdempotency(T, 'k1')).toBeNull()
    await store.close()
  })

  it('lists idempotency records whose expires_at has come', async () => {
    const store = await fresh()
    await store.write({
      ops: [
        { op: 'idempotency.put', record: idem('old', { expires_at: '2030-01-01T00:05:00.000Z' }) },
        { op: 'idempotency.put', record: idem('new', { expires_at: '2030-01-03T00:00:00.000Z' }) },
        { op: 'idempotency.put', record: idem('u', { tenant_id: U, expires_at: NOW }) },
      ],
    })
    const list = async (before: string, limit = 10) =>
      (await store.listExpired({ kind: 'idempotency', before, limit }))
        .map((k) => `${k.tenant_id}/${k.id}`)
        .sort()
    expect(await list('2029-12-31T00:00:00.000Z')).toEqual([])
    expect(await list('2030-01-01T00:05:00.000Z')).toEqual([`${T}/old`, `${U}/u`])
    expect(await list('2030-01-04T00:00:00.000Z', 2)).toHaveLength(2)
    await store.close()
  })

  it("lists a tenant's idempotency records by id in keyset pages, expired or not, never another tenant's", async () => {
    const store = await fresh()
    const ids = ['k2', 'Z', 'k10', 'k1', 'old']
    await store.write({
      ops: [
        ...ids.map((id) => ({
          op: 'idempotency.put' as const,
          record: idem(id, id === 'old' ? { expires_at: '2029-12-31T00:00:00.000Z' } : {}),
        })),
        { op: 'idempotency.put', record: idem('k0', { tenant_id: U }) },
      ],
    })
    const page = async (after: string | undefined, limit: number) =>
      (await store.listIdempotency(T, { ...(after === undefined ? {} : { after }), limit })).map((r) => r.id)
    expect(await page(undefined, 10)).toEqual(['Z', 'k1', 'k10', 'k2', 'old'])
    expect(await page(undefined, 2)).toEqual(['Z', 'k1'])
    expect(await page('k1', 2)).toEqual(['k10', 'k2'])
    expect(await page('k2', 2)).toEqual(['old'])
    expect(await page('old', 2)).toEqual([])
    // `after` need not be a record's id; a page of 0 is empty.
    expect(await page('k15', 10)).toEqual(['k2', 'old'])
    expect(await page(undefined, 0)).toEqual([])
    expect(await store.listIdempotency(T, { limit: 1 })).toEqual([idem('Z')])
    expect((await store.listIdempotency(U, { limit: 10 })).map((r) => r.id)).toEqual(['k0'])
    expect(await store.listIdempotency('tenant-none', { limit: 10 })).toEqual([])
    await store.close()
  })
}

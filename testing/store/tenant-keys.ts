import { expect, it } from 'vitest'
import type { Tenant } from '../../src/kernel/index.js'
import type { Store } from '../../src/store/index.js'

/**
 * The tenant record's compare-and-set (`tenant.unchanged`), which the data-key lifecycle changes a
 * tenant's keys under: exactly one of racing updates built on one read wins. Registered inside the
 * store suite's `describe`.
 */
export function tenantKeysTests(fresh: () => Promise<Store>): void {
  const tenant = (sealed: number): Tenant => ({
    id: 'tk',
    name: 'keys',
    created_at: '2030-01-01T00:00:00.000Z',
    data_key: { key_id: 'local:x', wrapped: 'AAAA' },
    keys: {
      current: 1,
      versions: [{ version: 1, created_at: '2030-01-01T00:00:00.000Z', key_id: 'local:x', wrapped: 'BBBB' }],
      sealed,
      rotated_at: '2030-01-01T00:00:00.000Z',
    },
  })
  const reserve = (store: Store, read: Tenant, grant: number) =>
    store.write({
      checks: [{ check: 'tenant.unchanged', tenant_id: read.id, tenant: read }],
      ops: [
        { op: 'tenant.put', tenant: { ...read, keys: { ...read.keys!, sealed: read.keys!.sealed + grant } } },
      ],
    })

  it('tenant.unchanged: exactly one of 50 racing reservations built on one read wins; the rest change nothing', async () => {
    const store = await fresh()
    await store.write({ ops: [{ op: 'tenant.put', tenant: tenant(0) }] })
    const read = (await store.getTenant('tk'))!
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => reserve(store, read, i + 1)))
    const won = results.findIndex((r) => r.ok)
    expect(results.filter((r) => r.ok)).toHaveLength(1)
    expect(results.find((r) => !r.ok)).toMatchObject({ ok: false, failed: { check: 'tenant.unchanged' } })
    expect((await store.getTenant('tk'))?.keys?.sealed).toBe(won + 1)
    await store.close()
  })

  it('tenant.unchanged fails for a changed or absent tenant', async () => {
    const store = await fresh()
    expect((await reserve(store, tenant(0), 1)).ok).toBe(false)
    expect(await store.getTenant('tk')).toBeNull()
    await store.write({ ops: [{ op: 'tenant.put', tenant: tenant(5) }] })
    expect((await reserve(store, tenant(4), 1)).ok).toBe(false)
    expect((await reserve(store, tenant(5), 1)).ok).toBe(true)
    expect((await store.getTenant('tk'))?.keys?.sealed).toBe(6)
    await store.close()
  })
}

import { expect, it } from 'vitest'
import { manualClock } from '../../src/clock.js'
import { createService } from '../../src/service.js'
import type { Store } from '../../src/store/contract.js'

/** A fixed test master key: the service encrypts token data before it reaches the store. */
const MASTER_KEY = new Uint8Array(32).fill(7)

/** The service over the store under test: its read-modify-write paths under contention. */
export function serviceTests(fresh: () => Promise<Store>): void {
  it('50 concurrent PATCHes of one token all succeed, each merged on top of the others', async () => {
    const service = createService({
      store: await fresh(),
      clock: manualClock('2030-01-01T00:00:00.000Z'),
      masterKey: MASTER_KEY,
    })
    const tenant = await service.admin.createTenant({ name: 'race' })
    const { key } = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'writer',
      type: 'private',
      permissions: ['token:create', 'token:read', 'token:update'],
    })
    const client = service.connect(key)
    const t = await client.tokens.create({ type: 'x', data: { n: 0 } })
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, (_, i) =>
        client.tokens.update(t.id, { metadata: { [`k${i}`]: String(i) } }),
      ),
    )
    expect(results.filter((r) => r.status === 'rejected')).toEqual([])
    const metadata = (await client.tokens.get(t.id)).metadata
    expect(Object.keys(metadata ?? {}).sort()).toEqual(Array.from({ length: 50 }, (_, i) => `k${i}`).sort())
    await service.close()
  })

  it('writes staged at once in one transaction all land on commit', async () => {
    const service = createService({
      store: await fresh(),
      clock: manualClock('2030-01-01T00:00:00.000Z'),
      masterKey: MASTER_KEY,
    })
    const tenant = await service.admin.createTenant({ name: 'race' })
    const { key } = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'writer',
      type: 'private',
      permissions: ['token:create', 'token:read'],
    })
    const client = service.connect(key)
    const tx = await client.transactions.create()
    const inTx = service.connect(key, { transactionId: tx.id })
    await Promise.all(
      Array.from({ length: 30 }, (_, i) => inTx.tokens.create({ id: `s${i}`, type: 'x', data: i })),
    )
    await client.transactions.commit(tx.id)
    for (let i = 0; i < 30; i++) expect((await client.tokens.get(`s${i}`)).id).toBe(`s${i}`)
    await service.close()
  })
}

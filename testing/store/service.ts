import { expect, it } from 'vitest'
import { createService } from '../../entry/index.js'
import type { Permission } from '../../src/kernel/index.js'
import { manualClock } from '../../src/kernel/index.js'
import type { Store } from '../../src/store/index.js'

/** A fixed test master key: the service encrypts token data before it reaches the store. */
const MASTER_KEY = new Uint8Array(32).fill(7)

/** A service over `store` with a tenant and one private application holding `permissions`. */
async function serviceOn(store: Store, name: string, permissions: Permission[]) {
  const clock = manualClock('2030-01-01T00:00:00.000Z')
  const service = createService({ store, clock, masterKey: MASTER_KEY })
  const tenant = await service.admin.createTenant({ name: 'race' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name,
    type: 'private',
    permissions,
  })
  return { service, tenant, key, clock, client: service.connect(key) }
}

/** The service over the store under test: its read-modify-write paths under contention. */
export function serviceTests(fresh: () => Promise<Store>): void {
  // Fifty read-modify-write retries on one row: PostgreSQL on a busy machine may take a minute.
  it('50 concurrent PATCHes of one token all succeed, each merged on top of the others', async () => {
    const { service, client } = await serviceOn(await fresh(), 'writer', [
      'token:create',
      'token:read',
      'token:update',
    ])
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
  }, 120_000)

  it('writes staged at once in one transaction all land on commit', async () => {
    const { service, key, client } = await serviceOn(await fresh(), 'writer', ['token:create', 'token:read'])
    const tx = await client.transactions.create()
    const inTx = service.connect(key, { transactionId: tx.id })
    await Promise.all(
      Array.from({ length: 30 }, (_, i) => inTx.tokens.create({ id: `s${i}`, type: 'x', data: i })),
    )
    await client.transactions.commit(tx.id)
    for (let i = 0; i < 30; i++) expect((await client.tokens.get(`s${i}`)).id).toBe(`s${i}`)
    await service.close()
  })

  it('a transaction of 1 000 staged creates (its bound) through the service commits all, rolls back all, or expires with none applied', async () => {
    for (const end of ['commit', 'rollback', 'expiry'] as const) {
      const store = await fresh()
      const { service, tenant, key, clock, client } = await serviceOn(store, 'bulk', [
        'token:create',
        'token:read',
        'token:search',
      ])
      const tx = await client.transactions.create()
      const inTx = service.connect(key, { transactionId: tx.id })
      for (let from = 0; from < 1000; from += 100) {
        await inTx.tokens.tokenize(
          Array.from({ length: 100 }, (_, i) => ({ type: 'token', data: `bulk-${from + i}` })),
        )
      }
      expect((await store.dump()).staged, end).toHaveLength(1000)
      expect((await client.tokens.listV2({ size: 10 })).data, end).toEqual([])
      expect((await inTx.tokens.listV2({ size: 100 })).data, end).toHaveLength(100)
      if (end === 'commit') await client.transactions.commit(tx.id)
      else if (end === 'rollback') await client.transactions.rollback(tx.id)
      else {
        clock.advance(60 * 60_000)
        await service.admin.sweep()
      }
      const dump = await store.dump()
      expect(dump.staged, end).toEqual([])
      expect(
        dump.tokens.filter((t) => t.tenant_id === tenant.id),
        end,
      ).toHaveLength(end === 'commit' ? 1000 : 0)
      expect(
        dump.transactions.map((t) => t.state),
        end,
      ).toEqual([end === 'commit' ? 'committed' : end === 'rollback' ? 'rolled_back' : 'expired'])
      await service.close()
    }
  }, 60_000)

  it('no link outlives its token when 99 links race one delete, at once or committed', async () => {
    const store = await fresh()
    const { service, tenant, key, client } = await serviceOn(store, 'linker', [
      'token:create',
      'token:read',
      'token:delete',
    ])
    for (const round of ['now', 'committed', 'child'] as const) {
      const parent = await client.tokens.create({ id: `p-${round}`, type: 'x', data: 1 })
      const kids = await Promise.all(
        Array.from({ length: 99 }, (_, i) =>
          client.tokens.create({ id: `c-${round}-${i}`, type: 'x', data: i }),
        ),
      )
      // Links of the parent (or, in round `child`, of one child) race its delete.
      const doomed = round === 'child' ? kids[0]!.id : parent.id
      const remove = async () => {
        if (round !== 'committed') return client.tokens.delete(doomed)
        const tx = await client.transactions.create()
        await service.connect(key, { transactionId: tx.id }).tokens.delete(doomed)
        await client.transactions.commit(tx.id)
      }
      // Links start a few turns apart, so that some land between the delete's read and its write.
      const after = async <T>(turns: number, f: () => Promise<T>) => {
        for (let t = 0; t < turns; t++) await Promise.resolve()
        return f()
      }
      const links = kids.map((kid, i) =>
        after(i % 33, () =>
          round === 'child'
            ? client.tokens.children.link(i === 0 ? parent.id : kid.id, kids[0]!.id)
            : client.tokens.children.link(parent.id, kid.id),
        ),
      )
      links.splice(49, 0, remove())
      const results = await Promise.allSettled(links)
      expect(results[49]!.status, `round ${round}: the delete`).toBe('fulfilled')
      // A link refused is refused as a missing token (404) or its lock (409), never a 5xx.
      for (const r of results) {
        if (r.status === 'rejected')
          expect(['not_found', 'conflict']).toContain((r.reason as { code?: string }).code)
      }
      expect(await store.listLinks(tenant.id, doomed), `round ${round}`).toEqual([])
      const dump = await store.dump()
      const present = new Set(dump.tokens.map((t) => `${t.tenant_id}/${t.id}`))
      const orphans = dump.associations.filter(
        (a) => !present.has(`${a.tenant_id}/${a.parent_id}`) || !present.has(`${a.tenant_id}/${a.child_id}`),
      )
      expect(orphans, `round ${round}: links to a deleted token`).toEqual([])
    }
    await service.close()
  })
}

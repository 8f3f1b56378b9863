import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { link, NOW, put, T, token } from './fixtures.js'
import { tempDir } from './helpers.js'

describe('file store writes', () => {
  it('a write that LMDB refuses fails alone and whole: the writes sharing its commit land', async () => {
    // A budget for applying no loaded machine runs out of (the budget is another test's), so the
    // writes retried one by one all go into the next commit.
    const store = await fileStore({ path: await tempDir(), applyMs: 60_000 })
    // Issued together, so they share one commit; the middle one names a key longer than LMDB takes.
    const long = 'x'.repeat(3000)
    const results = await Promise.allSettled([
      store.write({ ops: [put('before')] }),
      store.write({ ops: [put('part'), put(long)] }),
      store.write({ ops: [put('after'), link('before', 'after')] }),
    ])
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
    expect(await store.getToken(T, 'before')).not.toBeNull()
    expect(await store.getToken(T, 'after')).not.toBeNull()
    expect(await store.hasAssociation(T, 'before', 'after')).toBe(true)
    // Nothing of the refused write is there, and reading a key too long to store answers absent.
    expect(await store.getToken(T, 'part')).toBeNull()
    expect(await store.getToken(T, long)).toBeNull()
    // The commit that met the refusal was dropped whole and is not counted; the three went into the next.
    expect(store.stats()).toMatchObject({ writes: 3, commits: 1 })
    await store.close()
  })

  it("keeps a tenant's token count exact when a commit carries many creates, deletes and a refused write", async () => {
    const path = await tempDir()
    const store = await fileStore({ path })
    const totalIn = async (s: typeof store, tenant = T) =>
      (await s.listTokens(tenant, { offset: 0, limit: 1, now: NOW })).total
    const total = (tenant = T) => totalIn(store, tenant)
    await Promise.all(Array.from({ length: 10 }, (_, n) => store.write({ ops: [put(`old-${n}`)] })))
    expect(await total()).toBe(10)
    // Issued together: one commit (or a few) of creates, deletes, a put over a token already there
    // (no new token), another tenant's creates and one write LMDB refuses, retried write by write.
    const results = await Promise.allSettled([
      ...Array.from({ length: 50 }, (_, n) => store.write({ ops: [put(`new-${n}`)] })),
      ...Array.from({ length: 4 }, (_, n) =>
        store.write({ ops: [{ op: 'token.delete', tenant_id: T, id: `old-${n}` }] }),
      ),
      store.write({ ops: [put('old-9', { metadata: { again: 'yes' } })] }),
      store.write({ ops: [put('refused-part'), put('x'.repeat(3000))] }),
      ...Array.from({ length: 3 }, (_, n) =>
        store.write({ ops: [put(`b-${n}`, { tenant_id: 'tenant-b' })] }),
      ),
    ])
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(1)
    expect(await total()).toBe(10 + 50 - 4)
    expect(await total('tenant-b')).toBe(3)
    // The counts are what is stored: a reopen reads the same.
    await store.close()
    const again = await fileStore({ path })
    expect(await totalIn(again)).toBe(10 + 50 - 4)
    await again.close()
  })

  it('answers a guard-only write from the newest snapshot, and refuses calls once closed', async () => {
    const store = await fileStore({ path: await tempDir() })
    await store.write({ ops: [put('a')] })
    const check = { check: 'token.present', tenant_id: T, id: 'a' } as const
    expect(await store.write({ checks: [check], ops: [] })).toEqual({ ok: true })
    await store.write({ ops: [{ op: 'token.delete', tenant_id: T, id: 'a' }] })
    expect(await store.write({ checks: [check], ops: [] })).toEqual({ ok: false, failed: check })
    await store.close()
    await expect(store.getToken(T, 'a')).rejects.toMatchObject({ code: 'closed' })
    await expect(store.write({ ops: [put('b', { created_at: NOW })] })).rejects.toMatchObject({
      code: 'closed',
    })
  })

  it('a tenant with 3000 writes queued holds another tenant’s write back by at most one commit', async () => {
    const store = await fileStore({ path: await tempDir(), durability: 'none' })
    const order: string[] = []
    const writes = Array.from({ length: 3000 }, (_, n) =>
      store.write({ ops: [put(`a-${n}`)] }).then(() => order.push(`a-${n}`)),
    )
    writes.push(store.write({ ops: [put('b-0', { tenant_id: 'tenant-b' })] }).then(() => order.push('b-0')))
    await Promise.all(writes)
    // Commits carry about 1000 ops: B's write goes in the first one taken after it queued, not after
    // all of A's (FIFO would answer it last, at 3001).
    expect(order.indexOf('b-0')).toBeLessThan(2000)
    // A's own writes are answered in the order they came.
    const a = order.filter((id) => id.startsWith('a-'))
    expect(a).toEqual(Array.from({ length: 3000 }, (_, n) => `a-${n}`))
    expect(await store.getToken('tenant-b', 'b-0')).not.toBeNull()
    await store.close()
  })

  it('a commit applies writes for at most `applyMs`; the rest go into the next commits, in order, none lost', async () => {
    const store = await fileStore({ path: await tempDir(), durability: 'none', applyMs: 0 })
    const order: string[] = []
    const writes = Array.from({ length: 40 }, (_, n) =>
      store.write({ ops: [put(`a-${n}`)] }).then(() => order.push(`a-${n}`)),
    )
    await Promise.all(writes)
    expect(order).toEqual(Array.from({ length: 40 }, (_, n) => `a-${n}`))
    for (let n = 0; n < 40; n++) expect(await store.getToken(T, `a-${n}`)).not.toBeNull()
    // With no time to apply more, each commit carries the one write begun in it.
    expect(store.stats()).toMatchObject({ writes: 40, commits: 40 })
    await store.close()

    const grouped = await fileStore({ path: await tempDir(), durability: 'none' })
    await Promise.all(Array.from({ length: 40 }, (_, n) => grouped.write({ ops: [put(`b-${n}`)] })))
    // With the default budget, writes queued together share commits.
    expect(grouped.stats().writes).toBe(40)
    expect(grouped.stats().commits).toBeLessThan(40)
    await grouped.close()
  })

  it('writers that each wait for their commit before writing again share every commit', async () => {
    // A budget for applying no loaded machine runs out of (the budget is another test's).
    const store = await fileStore({ path: await tempDir(), applyMs: 60_000 })
    // Eight writers, five writes each, every one waiting for its last to be on disk: each commit
    // carries all eight, as the next writes all arrive while LMDB starts the next transaction.
    await Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        for (let n = 0; n < 5; n++) await store.write({ ops: [put(`w${w}-${n}`)] })
      }),
    )
    expect(store.stats()).toMatchObject({ writes: 40, commits: 5 })
    for (let w = 0; w < 8; w++) expect(await store.getToken(T, `w${w}-4`)).not.toBeNull()
    await store.close()
  })

  it("counts a tenant's tokens with its writes (puts again, deletes, other tenants)", async () => {
    const path = await tempDir()
    let store = await fileStore({ path })
    const total = async (tenant: string, now = NOW) =>
      (await store.listTokens(tenant, { offset: 0, limit: 1, now })).total
    await store.write({
      ops: [put('a'), put('b'), put('c'), put('e', { expires_at: '2030-01-01T00:30:00.000Z' })],
    })
    await store.write({ ops: [put('a'), { op: 'token.put', token: token('a', { tenant_id: 'other' }) }] })
    await store.write({
      ops: [
        { op: 'token.delete', tenant_id: T, id: 'b' },
        { op: 'token.delete', tenant_id: T, id: 'never' },
      ],
    })
    expect(await total(T)).toBe(3)
    expect(await total(T, '2030-01-01T00:30:00.000Z')).toBe(2) // e has expired
    expect(await total('other')).toBe(1)
    expect(await total('nobody')).toBe(0)
    await store.close()
    // Reopened, the counts are read back, not recounted.
    store = await fileStore({ path })
    expect(await total(T)).toBe(3)
    await store.write({ ops: [put('d')] })
    expect(await total(T)).toBe(4)
    await store.close()
  })
})

import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { StoreError } from '../../src/store/error.js'
import { sweepExpired } from '../../src/sweep.js'

const TTL = { transactionTtlMs: 3_600_000 }

import type { Op, StoredSession } from '../../src/types.js'
import { NOW, put, T, tx } from './fixtures.js'
import { healed, tempDir } from './helpers.js'

const session = (id: string, expires_at: string): StoredSession => ({
  id,
  tenant_id: T,
  application_id: 'pub-1',
  key_hash: `key-${id}`,
  nonce_hash: `nonce-${id}`,
  state: 'created',
  permissions: [],
  created_at: NOW,
  expires_at,
})

describe('file store durability', () => {
  it.each(['fdatasync', 'dsync'] as const)(
    'shares one sync among concurrent writes (group commit, %s)',
    async (sync) => {
      const dir = await tempDir()
      const store = await fileStore({ path: dir, sync })
      const n = 200
      const results = await Promise.all(
        Array.from({ length: n }, (_, i) => store.write({ ops: [put(`t${i}`)] })),
      )
      expect(results.every((r) => r.ok)).toBe(true)
      const { syncs, flushes, records } = store.stats()
      expect(records).toBe(n)
      expect(syncs).toBe(flushes)
      expect(syncs).toBeLessThan(n / 10)
      // One writer at a time: one sync per write.
      for (let i = 0; i < 5; i++) await store.write({ ops: [put(`s${i}`)] })
      expect(store.stats().syncs).toBe(syncs + 5)
      await store.close()
      const again = await fileStore({ path: dir })
      expect((await again.dump()).tokens).toHaveLength(n + 5)
      await again.close()
    },
  )

  it('journals nothing for a failed check or an empty batch', async () => {
    const dir = await tempDir()
    const store = await fileStore({ path: dir })
    await store.write({ ops: [put('a')] })
    const { journalBytes, records } = store.stats()
    const refused = await store.write({
      checks: [{ check: 'token.absent', tenant_id: T, id: 'a' }],
      ops: [put('b')],
    })
    expect(refused.ok).toBe(false)
    expect(await store.write({ ops: [] })).toEqual({ ok: true })
    expect(await sweepExpired(store, NOW, TTL)).toMatchObject({ sessions: 0, transactions: 0 })
    expect(store.stats()).toMatchObject({ journalBytes, records })
    await store.close()
  })

  it("journals the sweep's writes like any write", async () => {
    const dir = await tempDir()
    const store = await fileStore({ path: dir, durability: 'none' })
    await store.write({
      ops: [
        { op: 'session.put', session: session('s1', '2030-01-01T00:03:00.000Z') },
        { op: 'session.put', session: session('s2', '2030-01-01T05:00:00.000Z') },
        { op: 'transaction.put', transaction: tx('t1', { locks: ['x'] }) },
      ],
    })
    expect(await sweepExpired(store, '2030-01-01T01:00:00.000Z', TTL)).toMatchObject({
      sessions: 1,
      transactions: 1,
    })
    const before = await store.dump()
    await store.close()
    const again = await fileStore({ path: dir, durability: 'none' })
    expect(await again.dump()).toEqual(before)
    expect(await again.findKey('key-s1')).toBeNull()
    expect((await again.getTransaction(T, 't1'))?.state).toBe('expired')
    await again.close()
  })

  it.each(['fdatasync', 'dsync'] as const)(
    'refuses the writes of a failed sync with a retryable StoreError, serves reads, and resumes writes by itself (%s)',
    async (sync) => {
      const dir = await tempDir()
      let fail = false
      const logs: string[] = []
      const store = await fileStore({
        path: dir,
        sync,
        log: (line) => logs.push(line),
        hooks: {
          step: (step) => {
            if (fail && (step === 'journal.sync' || step === 'disk.probe')) throw new Error('EIO: simulated')
          },
        },
      })
      await store.write({ ops: [put('kept')] })
      fail = true
      const pending = await Promise.allSettled([
        store.write({ ops: [put('x')] }),
        store.write({ ops: [put('y')] }),
      ])
      expect(pending.map((p) => p.status)).toEqual(['rejected', 'rejected'])
      const reason = (pending[0] as PromiseRejectedResult).reason as StoreError
      expect(reason).toBeInstanceOf(StoreError)
      expect([reason.code, reason.retryAfter]).toEqual(['unavailable', 1])
      expect(store.stats().healthy).toBe(false)
      // While the disk fails, reads are served and writes are refused with the same coded error.
      expect(await store.getToken(T, 'kept')).not.toBeNull()
      await expect(store.write({ ops: [put('z')] })).rejects.toMatchObject({ code: 'unavailable' })
      await expect(store.compact()).rejects.toMatchObject({ code: 'unavailable' })
      fail = false
      await healed(store)
      // The refused writes are gone from memory too; writes go on.
      expect(await store.getToken(T, 'x')).toBeNull()
      expect(await store.getToken(T, 'y')).toBeNull()
      await store.write({ ops: [put('z')] })
      expect(logs.some((l) => /a write failed.*EIO: simulated/.test(l))).toBe(true)
      expect(logs.some((l) => /writes resumed/.test(l))).toBe(true)
      await store.close()
      const again = await fileStore({ path: dir })
      expect((await again.dump()).tokens.map((t) => t.id)).toEqual(['kept', 'z'])
      await again.close()
    },
  )

  it('refuses a batch JSON cannot hold without applying it; rebuilds memory if an op throws halfway', async () => {
    const dir = await tempDir()
    const store = await fileStore({ path: dir, durability: 'none', log: () => {} })
    await store.write({ ops: [put('kept')] })
    const bigint = { op: 'token.put', token: { ...put('big'), data: { n: 1n } } } as unknown as Op
    await expect(store.write({ ops: [put('before-big'), bigint] })).rejects.toThrow(/BigInt/)
    expect(await store.getToken(T, 'before-big')).toBeNull()
    const broken = { op: 'token.put', token: null } as unknown as Op
    await expect(store.write({ ops: [put('half'), broken] })).rejects.toThrow()
    expect(await store.getToken(T, 'kept')).not.toBeNull()
    await healed(store)
    expect(await store.getToken(T, 'half')).toBeNull()
    await store.close()
    const again = await fileStore({ path: dir, durability: 'none' })
    expect((await again.dump()).tokens.map((t) => t.id)).toEqual(['kept'])
    await again.close()
  })

  it('close waits for pending writes', async () => {
    const dir = await tempDir()
    const store = await fileStore({ path: dir })
    const writes = Array.from({ length: 20 }, (_, i) => store.write({ ops: [put(`t${i}`)] }))
    await store.close()
    expect(await Promise.all(writes)).toEqual(writes.map(() => ({ ok: true })))
    const again = await fileStore({ path: dir })
    expect((await again.dump()).tokens).toHaveLength(20)
    await again.close()
  })

  it("never syncs with durability 'none', and checks its options", async () => {
    const dir = await tempDir()
    const store = await fileStore({ path: dir, durability: 'none' })
    await Promise.all([store.write({ ops: [put('a')] }), store.write({ ops: [put('b')] })])
    expect(store.stats()).toMatchObject({ syncs: 0, flushes: 1, records: 2 })
    await store.close()
    await expect(fileStore({ path: dir, compactRatio: -1 })).rejects.toThrow(/compactRatio/)
    await expect(fileStore({ path: dir, compactMinBytes: Number.NaN })).rejects.toThrow(/compactMinBytes/)
    // @ts-expect-error: not a durability
    await expect(fileStore({ path: dir, durability: 'sometimes' })).rejects.toThrow(/durability/)
  })
})

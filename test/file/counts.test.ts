import { open as openLmdb } from 'lmdb'
import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import type { LogEntry } from '../../src/kernel/index.js'
import { idem } from '../../testing/store/idempotency.js'
import { session, T, tx } from '../../testing/store/records.js'
import { tempDir } from './helpers.js'

describe('file store counts', () => {
  it('keeps the counts across a reopen, with the records they count', async () => {
    const path = await tempDir()
    const store = await fileStore({ path, durability: 'none' })
    await store.write({
      ops: [
        { op: 'idempotency.put', record: idem('a') },
        { op: 'idempotency.put', record: idem('b') },
        { op: 'session.put', session: session('s1') },
        { op: 'session.put', session: session('s2', { state: 'authorized' }) },
      ],
    })
    await store.close()
    const again = await fileStore({ path, durability: 'none' })
    expect(await again.countRecords(T, 'idempotency')).toBe(2)
    expect(await again.countRecords(T, 'session.created')).toBe(1)
    await again.write({ ops: [{ op: 'idempotency.delete', tenant_id: T, id: 'a' }] })
    expect(await again.countRecords(T, 'idempotency')).toBe(1)
    await again.close()
  })

  it("moves each tenant's count of audit entries by the entries one write adds and removes", async () => {
    const path = await tempDir()
    const store = await fileStore({ path, durability: 'none' })
    const entry = (tenant: string, seq: number, mac = ''): LogEntry => ({
      tenant_id: tenant,
      id: `w.000000:${String(seq).padStart(12, '0')}`,
      lane: 'w.000000',
      seq,
      actor_type: 'application',
      entity_type: 'token',
      entity_id: `t${seq}`,
      operation: 'read',
      message: 'token.get: answered masked',
      outcome: 'success',
      created_at: '2030-01-01T00:00:00.000Z',
      mac,
    })
    // One write: three entries of T (the last sealing the group), two of another tenant.
    await store.write({
      ops: [
        { op: 'log.put', entry: entry(T, 0) },
        { op: 'log.put', entry: entry('other', 0) },
        { op: 'log.put', entry: entry(T, 1) },
        { op: 'log.put', entry: entry('other', 1, 'm') },
        { op: 'log.put', entry: entry(T, 2, 'm') },
      ],
    })
    expect(await store.countRecords(T, 'log')).toBe(3)
    expect(await store.countRecords('other', 'log')).toBe(2)
    // One write that seals an entry again (no new entry), removes one of T and adds one: T stays at 3.
    await store.write({
      ops: [
        { op: 'log.put', entry: entry(T, 2, 'm2') },
        { op: 'log.delete', tenant_id: T, id: entry(T, 0).id },
        { op: 'log.put', entry: entry(T, 3, 'm') },
        { op: 'log.delete', tenant_id: 'other', id: entry('other', 0).id },
        { op: 'log.delete', tenant_id: 'other', id: entry('other', 1).id },
      ],
    })
    expect(await store.countRecords(T, 'log')).toBe(3)
    expect(await store.countRecords('other', 'log')).toBe(0)
    await store.close()
    const again = await fileStore({ path, durability: 'none' })
    expect(await again.countRecords(T, 'log')).toBe(3)
    await again.close()
  })

  it("refuses a development build's format 1 store, which kept no counts, naming its format", async () => {
    const path = await tempDir()
    await (await fileStore({ path, durability: 'none' })).close()
    const raw = openLmdb({ path, keyEncoding: 'binary', encoding: 'json', maxDbs: 30 })
    await raw.openDB({ name: 'meta', keyEncoding: 'binary', encoding: 'json' }).put(Buffer.from('format'), 1)
    await raw.close()
    await expect(fileStore({ path, durability: 'none' })).rejects.toMatchObject({
      code: 'corrupt',
      message: expect.stringContaining('format 1 by a development build'),
    })
  })

  it('fills the staged count once from the transactions a store held before it was kept, then keeps it', async () => {
    const path = await tempDir()
    const store = await fileStore({ path, durability: 'none' })
    await store.write({
      ops: [
        { op: 'transaction.put', transaction: tx('o1', { staged_chars: 300 }) },
        { op: 'transaction.put', transaction: tx('o2', { staged_chars: 45 }) },
        { op: 'transaction.put', transaction: tx('c1', { staged_chars: 9000, state: 'committed' }) },
      ],
    })
    await store.close()
    // As a store written before the count was: no count, no marker.
    const raw = openLmdb({ path, keyEncoding: 'binary', encoding: 'json', maxDbs: 30 })
    const meta = raw.openDB({ name: 'meta', keyEncoding: 'binary', encoding: 'json' })
    const keys = [...meta.getKeys()].map((k) => Buffer.from(k as Buffer))
    const dropped = keys.filter((k) => k.includes(Buffer.from('transaction.staged')))
    expect(dropped.length).toBe(2)
    for (const k of dropped) await meta.remove(k)
    await raw.close()
    const again = await fileStore({ path, durability: 'none' })
    expect(await again.countRecords(T, 'transaction.staged')).toBe(345)
    await again.write({
      ops: [{ op: 'transaction.put', transaction: tx('o1', { staged_chars: 300, state: 'rolled_back' }) }],
    })
    await again.close()
    // Filled once: a reopen keeps the count as the writes left it.
    const third = await fileStore({ path, durability: 'none' })
    expect(await third.countRecords(T, 'transaction.staged')).toBe(45)
    await third.close()
  })
})

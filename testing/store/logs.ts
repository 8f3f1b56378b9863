import { expect, it } from 'vitest'
import type { LogEntry } from '../../src/kernel/index.js'
import type { Store } from '../../src/store/index.js'
import { T, U } from './records.js'

/** An audit log entry of tenant `tenant` (MAC and chain fields as placeholders: the store keeps them as given). */
export const logEntry = (lane: string, seq: number, fields: Partial<LogEntry> = {}): LogEntry => ({
  tenant_id: T,
  id: `${lane}:${String(seq).padStart(12, '0')}`,
  actor_type: 'application',
  entity_type: 'token',
  operation: 'read',
  message: 'token.get: answered',
  outcome: 'success',
  created_at: `2030-01-01T00:00:0${seq}.000Z`,
  lane,
  seq,
  mac: 'm',
  ...fields,
})

/**
 * `listLogs` and the `log.*` ops: entries kept as given, in every order (`chain`, `newest`,
 * `oldest`) with keyset cursors, entity and date filters, per tenant, and landing only with their
 * write. Registered inside the store suite's `describe`.
 */
export function logsTests(fresh: () => Promise<Store>): void {
  it('keeps log entries and pages them in chain, newest and oldest order with keyset cursors and filters', async () => {
    const store = await fresh()
    const entries = [
      logEntry('w.000001', 0, { entity_id: 'a' }),
      logEntry('w.000000', 1, { entity_id: 'b', entity_type: 'application' }),
      logEntry('w.000000', 2, { entity_id: 'a' }),
      logEntry('w.000001', 3, { entity_id: 'c' }),
      logEntry('w.000000', 4, { tenant_id: U }),
    ]
    await store.write({ ops: entries.map((entry) => ({ op: 'log.put' as const, entry })) })
    const ids = (list: LogEntry[]) => list.map((e) => e.seq)
    expect(ids(await store.listLogs(T, { order: 'chain', limit: 10 }))).toEqual([1, 2, 0, 3])
    const newest = await store.listLogs(T, { order: 'newest', limit: 2 })
    expect(ids(newest)).toEqual([3, 2])
    expect(ids(await store.listLogs(T, { order: 'newest', limit: 10, after: newest[1]! }))).toEqual([1, 0])
    expect(
      ids(await store.listLogs(T, { order: 'oldest', limit: 10, to: '2030-01-01T00:00:02.000Z' })),
    ).toEqual([0, 1, 2])
    expect(ids(await store.listLogs(T, { order: 'newest', limit: 10, entity_type: 'token' }))).toEqual([
      3, 2, 0,
    ])
    expect(
      ids(await store.listLogs(T, { order: 'newest', limit: 10, entity_type: 'token', entity_id: 'a' })),
    ).toEqual([2, 0])
    expect(
      ids(
        await store.listLogs(T, {
          order: 'newest',
          limit: 10,
          from: '2030-01-01T00:00:01.000Z',
          to: '2030-01-01T00:00:02.000Z',
        }),
      ),
    ).toEqual([2, 1])
    expect(await store.listLogs(U, { order: 'chain', limit: 10 })).toEqual([entries[4]])
    await store.write({ ops: [{ op: 'log.delete', tenant_id: T, id: entries[2]!.id }] })
    expect(ids(await store.listLogs(T, { order: 'chain', limit: 10 }))).toEqual([1, 0, 3])
    expect(
      ids(await store.listLogs(T, { order: 'newest', limit: 10, entity_type: 'token', entity_id: 'a' })),
    ).toEqual([0])
  })

  it('files every entry it keeps in its indexes as it is (unindexedLog), and passes over one removed since', async () => {
    const store = await fresh()
    const entries = [
      logEntry('w.000000', 0, { entity_id: 'a' }),
      logEntry('w.000000', 1, { entity_type: 'application' }),
      logEntry('w.000000', 2, { entity_id: 'a' }),
    ]
    await store.write({ ops: entries.map((entry) => ({ op: 'log.put' as const, entry })) })
    const stored = await store.listLogs(T, { order: 'chain', limit: 10 })
    expect(stored).toHaveLength(3)
    expect(await store.unindexedLog(T, stored)).toBeNull()
    expect(await store.unindexedLog(U, stored)).toBeNull()
    await store.write({ ops: [{ op: 'log.delete', tenant_id: T, id: entries[1]!.id }] })
    expect(await store.unindexedLog(T, stored)).toBeNull()
    // Put again under another entity: filed where it now is.
    await store.write({ ops: [{ op: 'log.put', entry: { ...entries[2]!, entity_id: 'b', mac: 'n' } }] })
    expect(await store.unindexedLog(T, stored)).toBeNull()
  })

  it('pages chain order by keyset cursor in id order, whatever the lanes (prefixes of each other, a `:` in one)', async () => {
    const store = await fresh()
    const lanes = ['w.1', 'w.10', 'w.1-', 'w.0', 'w.00', 'w.1:b', 'w.1:', 'v']
    // Put in an order that is not the ids' (the seqs of each lane go up; the lanes interleave).
    const entries = [0, 1, 2].flatMap((seq) => lanes.map((lane) => logEntry(lane, seq)))
    await store.write({ ops: entries.map((entry) => ({ op: 'log.put' as const, entry })) })
    const ids = entries.map((e) => e.id).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    const paged: string[] = []
    let after: LogEntry | undefined
    for (let page = 0; page < 20; page++) {
      const got = await store.listLogs(T, { order: 'chain', limit: 3, ...(after ? { after } : {}) })
      paged.push(...got.map((e) => e.id))
      if (got.length < 3) break
      after = got.at(-1)
    }
    expect(paged).toEqual(ids)
    // A cursor whose entry is gone still pages on from its place.
    await store.write({ ops: [{ op: 'log.delete', tenant_id: T, id: ids[4]! }] })
    const rest = await store.listLogs(T, {
      order: 'chain',
      limit: 100,
      after: entries.find((e) => e.id === ids[4])!,
    })
    expect(rest.map((e) => e.id)).toEqual(ids.slice(5))
  })

  it('lands an entry only with its write: a refused write keeps none', async () => {
    const store = await fresh()
    const refused = await store.write({
      checks: [{ check: 'application.present', tenant_id: T, id: 'none' }],
      ops: [{ op: 'log.put', entry: logEntry('w.000000', 0) }],
    })
    expect(refused.ok).toBe(false)
    expect(await store.listLogs(T, { order: 'chain', limit: 10 })).toEqual([])
  })
}

/**
 * A writer numbers its entries' ids in the order it seals them, on all its lanes at once: a store's
 * index of ids grows at its end however many writes are in flight, each lane's seqs rise in it, and
 * verification follows every lane of a writer side by side. Retention removes a writer's oldest
 * entries and leaves its mark, which says where each lane goes on.
 */
import { createHmac } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { chained, Lanes, macText } from '../../src/audit/chain.js'
import type { EntryDraft } from '../../src/audit/index.js'
import { removeOldEntries, verifyLogs } from '../../src/audit/index.js'
import type { LogEntry } from '../../src/kernel/index.js'
import { delegatingStore } from '../../src/store/delegate.js'
import type { LogQuery, Store } from '../../src/store/index.js'

const mac = (tenantId: string, values: readonly string[]) =>
  values.map((v) => createHmac('sha256', `key-of-${tenantId}`).update(v).digest('base64url'))

const draft = (name: string, minute = 0): EntryDraft => ({
  tenant_id: 't1',
  actor_type: 'application',
  entity_type: 'token',
  entity_id: name,
  operation: 'read',
  message: 'token.get: answered masked',
  outcome: 'success',
  created_at: new Date(Date.UTC(2030, 0, 1, 0, minute)).toISOString(),
})

/**
 * Writes of `sizes` entries each, all holding their lanes at once (as writes in flight do), each
 * stored in a write of its own in the order given; then each lane given back.
 */
async function inFlight(store: Store, lanes: Lanes, sizes: number[], minute = 0) {
  const held = sizes.map((n) => lanes.take('t1', n))
  const written: LogEntry[] = []
  for (const [w, h] of held.entries()) {
    const entries = (await chained(
      mac,
      h,
      Array.from({ length: sizes[w]! }, (_, i) => draft(`w${w}-${i}`, minute)),
    )) as LogEntry[]
    await store.write({ ops: entries.map((entry) => ({ op: 'log.put' as const, entry })) })
    written.push(...entries)
  }
  for (const h of held) lanes.settle(h, 'ok')
  return written
}

const chain = (store: Pick<Store, 'listLogs'>) => store.listLogs('t1', { order: 'chain', limit: 1000 })

/** A store that answers `entries` as its chain, in the order given (as a store edited below it would). */
const answering = (entries: LogEntry[]): Pick<Store, 'listLogs' | 'unindexedLog'> => ({
  listLogs: async (_t: string, q: LogQuery) => {
    const from = q.after ? entries.findIndex((e) => e.id === q.after!.id) + 1 : 0
    return entries.slice(from, from + q.limit)
  },
  // Answered as it is, with no index to miss.
  unindexedLog: async () => null,
})

describe('entries numbered by their writer', () => {
  it('keeps the order they were sealed in across the lanes in flight, each lane in seq order, and verifies', async () => {
    const store = memoryStore()
    const lanes = new Lanes()
    const written = [...(await inFlight(store, lanes, [2, 1, 3])), ...(await inFlight(store, lanes, [1, 2]))]
    const stored = await chain(store)
    // Chain order is the order of sealing: every new entry goes at the end of the ids.
    expect(stored.map((e) => e.id)).toEqual(written.map((e) => e.id))
    expect([...stored.map((e) => e.id)].sort()).toEqual(stored.map((e) => e.id))
    // The second round's writes took lanes of the first: their seqs go on.
    expect(new Set(stored.map((e) => e.lane)).size).toBe(3)
    for (const lane of new Set(stored.map((e) => e.lane))) {
      const seqs = stored.filter((e) => e.lane === lane).map((e) => e.seq)
      expect(seqs).toEqual(seqs.map((_, i) => i))
    }
    expect(await verifyLogs(store, mac, 't1')).toEqual({ ok: true, entries: 9, lanes: 3 })
  })

  it('detects two entries of different lanes answered in each other’s place, and an entry answered twice', async () => {
    const store = memoryStore()
    const written = await inFlight(store, new Lanes(), [1, 1, 1])
    expect(written[0]!.lane).not.toBe(written[1]!.lane)
    expect(await verifyLogs(answering(written), mac, 't1')).toMatchObject({ ok: true })
    const swapped = [written[1]!, written[0]!, written[2]!]
    expect(await verifyLogs(answering(swapped), mac, 't1')).toMatchObject({
      ok: false,
      broken: { id: written[0]!.id, reason: 'place' },
    })
    const twice = [written[0]!, written[1]!, written[1]!, written[2]!]
    expect(await verifyLogs(answering(twice), mac, 't1')).toMatchObject({
      ok: false,
      broken: { id: written[1]!.id, reason: 'place' },
    })
  })

  it('detects a group whose sealing entry was removed, the next entry of another lane (a group is consecutive)', async () => {
    const store = memoryStore()
    const written = await inFlight(store, new Lanes(), [2, 1])
    expect(written[0]!.mac).toBe('')
    await store.write({ ops: [{ op: 'log.delete', tenant_id: 't1', id: written[1]!.id }] })
    expect(await verifyLogs(store, mac, 't1')).toMatchObject({
      ok: false,
      broken: { id: written[0]!.id, reason: 'mac' },
    })
  })

  it('answers a stored entry of the wrong shape as out of place, without throwing', async () => {
    const written = await inFlight(memoryStore(), new Lanes(), [1, 1])
    const odd = { ...written[1]!, lane: 42 } as unknown as LogEntry
    expect(await verifyLogs(answering([written[0]!, odd]), mac, 't1')).toMatchObject({
      ok: false,
      broken: { reason: 'place' },
    })
  })

  it('detects a removed entry of one lane among the others (a gap in that lane)', async () => {
    const store = memoryStore()
    const lanes = new Lanes()
    const first = await inFlight(store, lanes, [1, 1])
    const second = await inFlight(store, lanes, [1, 1])
    const victim = first.find((e) => second.some((s) => s.lane === e.lane))!
    await store.write({ ops: [{ op: 'log.delete', tenant_id: 't1', id: victim.id }] })
    expect(await verifyLogs(store, mac, 't1')).toMatchObject({ ok: false, broken: { reason: 'gap' } })
  })
})

describe('retention by writer', () => {
  it('removes the oldest entries of every lane, and a lane whose entries all went goes on later where the mark says', async () => {
    const store = memoryStore()
    const lanes = new Lanes()
    // Minute 0: three writes in flight (three lanes); minute 5: one write, on one of those lanes.
    await inFlight(store, lanes, [2, 1, 1], 0)
    await inFlight(store, lanes, [1], 5)
    const before = new Date(Date.UTC(2030, 0, 1, 0, 1)).toISOString()
    const now = new Date(Date.UTC(2030, 0, 1, 0, 6)).toISOString()
    expect(await removeOldEntries(store, mac, 't1', before, now)).toEqual({ removed: 4, fewer: 3 })
    const kept = await chain(store)
    expect(kept.map((e) => e.operation)).toEqual(['log.retention', 'read'])
    expect(await verifyLogs(store, mac, 't1')).toEqual({ ok: true, entries: 2, lanes: 1 })
    // The idle lanes, taken again, go on at their seqs: the mark says where they start.
    await inFlight(store, lanes, [1, 1, 1], 7)
    const now2 = await chain(store)
    expect(
      now2
        .slice(2)
        .map((e) => e.seq)
        .sort(),
    ).toEqual([1, 2, 2])
    expect(await verifyLogs(store, mac, 't1')).toEqual({ ok: true, entries: 5, lanes: 3 })
    // Without the mark, those lanes start past 0: a gap.
    await store.write({ ops: [{ op: 'log.delete', tenant_id: 't1', id: kept[0]!.id }] })
    expect(await verifyLogs(store, mac, 't1')).toMatchObject({ ok: false, broken: { reason: 'gap' } })
  })

  it('a second step folds the mark it removes into the new one', async () => {
    const store = memoryStore()
    const lanes = new Lanes()
    await inFlight(store, lanes, [1, 1], 0)
    await inFlight(store, lanes, [1], 2)
    await inFlight(store, lanes, [1], 4)
    const at = (minute: number) => new Date(Date.UTC(2030, 0, 1, 0, minute)).toISOString()
    expect(await removeOldEntries(store, mac, 't1', at(1), at(10))).toMatchObject({ removed: 2 })
    expect(await removeOldEntries(store, mac, 't1', at(3), at(11))).toMatchObject({ removed: 1, fewer: 1 })
    const kept = await chain(store)
    expect(kept.map((e) => e.operation)).toEqual(['log.retention', 'read'])
    expect(kept[0]!.created_at).toBe(at(11))
    await inFlight(store, lanes, [1, 1], 12)
    expect(await verifyLogs(store, mac, 't1')).toMatchObject({ ok: true, entries: 4, lanes: 2 })
  })

  it('removes nothing of a writer whose old entries fail their MAC: a new mark would seal the change', async () => {
    const store = memoryStore()
    const lanes = new Lanes()
    const old = await inFlight(store, lanes, [1, 1], 0)
    const kept = await inFlight(store, lanes, [1, 1], 5)
    // The kept entry at seq 1 of a lane removed, and the old one of that lane edited to seq 1: a
    // mark made from it would say the lane goes on at 2, and the gap would be gone.
    const lane = kept[0]!.lane
    await store.write({ ops: [{ op: 'log.delete', tenant_id: 't1', id: kept[0]!.id }] })
    const edited = { ...old.find((e) => e.lane === lane)!, seq: 1 }
    await store.write({ ops: [{ op: 'log.put', entry: edited }] })
    const before = new Date(Date.UTC(2030, 0, 1, 0, 1)).toISOString()
    expect(await removeOldEntries(store, mac, 't1', before, before)).toEqual({ removed: 0, fewer: 0 })
    expect(await chain(store)).toHaveLength(3)
    expect(await verifyLogs(store, mac, 't1')).toMatchObject({
      ok: false,
      broken: { id: edited.id, reason: 'gap', expected: 0 },
    })
  })

  it('reads at most 4096 of one writer’s entries a step: of 4097 before the cut, 4096 go', async () => {
    const store = memoryStore()
    const lanes = new Lanes()
    // 4097 entries of one writer, the last one old and the others not: the cut is the last one.
    for (let i = 0; i < 4096; i++) await inFlight(store, lanes, [1], 10)
    await inFlight(store, lanes, [1], 0)
    const at = (minute: number) => new Date(Date.UTC(2030, 0, 1, 0, minute)).toISOString()
    expect(await removeOldEntries(store, mac, 't1', at(1), at(11))).toEqual({ removed: 4096, fewer: 4095 })
    const kept = await chain(store)
    expect(kept.map((e) => e.operation)).toEqual(['log.retention', 'read'])
    expect(kept[1]!.created_at).toBe(at(0))
    expect(await verifyLogs(store, mac, 't1')).toMatchObject({ ok: true, entries: 2 })
  })

  it('holds after two sweeps ran at once and each left its mark (two processes), and the next sweep leaves one', async () => {
    const inner = memoryStore()
    // The first sweep's write is held until the second's landed: each read the log before the other wrote.
    let holdFirst: Promise<void> | undefined
    let releaseFirst = () => {}
    let writes = 0
    const store = delegatingStore(inner, {
      write: async (batch) => {
        if (batch.ops.some((op) => op.op === 'log.delete') && writes++ === 0) {
          holdFirst = new Promise((r) => {
            releaseFirst = r
          })
          await holdFirst
        }
        return inner.write(batch)
      },
    })
    const lanes = new Lanes()
    for (let minute = 0; minute < 4; minute++) await inFlight(inner, lanes, [2, 1], minute)
    const at = (minute: number) => new Date(Date.UTC(2030, 0, 1, 0, minute)).toISOString()
    const first = removeOldEntries(store, mac, 't1', at(1), at(9))
    await new Promise((r) => setImmediate(r))
    while (holdFirst === undefined) await new Promise((r) => setImmediate(r))
    await removeOldEntries(store, mac, 't1', at(2), at(9))
    releaseFirst()
    await first
    const marks = (await chain(inner)).filter((e) => e.operation === 'log.retention')
    expect(marks).toHaveLength(2)
    expect(await verifyLogs(inner, mac, 't1')).toMatchObject({ ok: true })
    // Past them, an entry removed below them is a gap all the same.
    await removeOldEntries(inner, mac, 't1', at(3), at(9))
    const after = await chain(inner)
    expect(after.filter((e) => e.operation === 'log.retention')).toHaveLength(1)
    expect(await verifyLogs(inner, mac, 't1')).toMatchObject({ ok: true })
    const entry = after.find((e) => e.operation !== 'log.retention')!
    await inner.write({ ops: [{ op: 'log.delete', tenant_id: 't1', id: entry.id }] })
    expect(await verifyLogs(inner, mac, 't1')).toMatchObject({ ok: false })
  })

  it('refuses a mark anywhere but first among its writer’s entries, even sealed', async () => {
    const store = memoryStore()
    const lanes = new Lanes()
    const written = await inFlight(store, lanes, [1, 1], 0)
    const before = new Date(Date.UTC(2030, 0, 1, 0, 1)).toISOString()
    await inFlight(store, lanes, [1], 2)
    await removeOldEntries(store, mac, 't1', before, before)
    const [mark] = await chain(store)
    expect(mark!.operation).toBe('log.retention')
    // The mark's fields under a later id of its writer, sealed with the right key: out of place.
    const later = `${written[1]!.id.slice(0, -12)}${'9'.repeat(12)}`
    const { mac: _m, ...fields } = { ...mark!, id: later }
    const moved = { ...fields, mac: mac('t1', [macText(fields)])[0]! }
    await store.write({ ops: [{ op: 'log.put', entry: moved }] })
    expect(await verifyLogs(store, mac, 't1')).toMatchObject({
      ok: false,
      broken: { id: later, reason: 'place' },
    })
  })
})

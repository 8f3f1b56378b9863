/**
 * The dispatcher's claims and results are gathered into shared store writes: writes asked together
 * go out in one store write, a failed guard answers false for its own entry alone (the others land),
 * and a store write that throws is tried again each on its own.
 */
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import type { OutboxEntry } from '../../src/kernel/index.js'
import type { Store } from '../../src/store/index.js'
import { OutboxWrites, unchanged } from '../../src/webhooks/outbox-writes.js'

const entry = (id: string): OutboxEntry => ({
  tenant_id: 'tenant-a',
  id,
  kind: 'webhook',
  url: 'https://hooks.example.test/in',
  body: '{}',
  created_at: '2030-01-01T00:00:00.000Z',
  state: 'pending',
  due_at: '2030-01-01T00:00:00.000Z',
  attempts: [],
})

const claimed = (e: OutboxEntry): OutboxEntry => ({
  ...e,
  claim: `claim-${e.id}`,
  due_at: '2030-01-01T00:00:30.000Z',
})

/** A memory store holding `ids`, counting its writes (and their ops); `throwOnce` makes the next write of more than one op throw. */
async function setUp(ids: string[]) {
  const store = memoryStore()
  for (const id of ids) await store.write({ ops: [{ op: 'outbox.put', entry: entry(id) }] })
  const counts = { writes: 0, throwOnce: false, sizes: [] as number[] }
  const write = store.write.bind(store)
  const counted: Pick<Store, 'write'> = {
    write: async (batch) => {
      counts.writes++
      counts.sizes.push(batch.ops.length)
      if (counts.throwOnce && batch.ops.length > 1) {
        counts.throwOnce = false
        throw new Error('the store is away')
      }
      return write(batch)
    },
  }
  const held = async (id: string) =>
    (await store.listOutbox('tenant-a', { limit: 100 })).find((e) => e.id === id)
  return { store, counts, writes: new OutboxWrites(counted), held }
}

describe('OutboxWrites', () => {
  it('three claims asked together go out in one store write', async () => {
    const { counts, writes, held } = await setUp(['e1', 'e2', 'e3'])
    const results = await Promise.all(
      ['e1', 'e2', 'e3'].map((id) =>
        writes.write(unchanged(entry(id)), [{ op: 'outbox.put', entry: claimed(entry(id)) }]),
      ),
    )
    expect(results).toEqual([true, true, true])
    expect(counts.writes).toBe(1)
    expect((await held('e2'))?.claim).toBe('claim-e2')
  })

  it('a stale guard answers false for its own entry, and the others land', async () => {
    const { counts, writes, held } = await setUp(['e1', 'e2', 'e3'])
    const stale = { ...entry('e2'), attempts: [{ at: '2029-12-31T00:00:00.000Z', ok: false }] }
    const results = await Promise.all([
      writes.write(unchanged(entry('e1')), [{ op: 'outbox.put', entry: claimed(entry('e1')) }]),
      writes.write(unchanged(stale), [{ op: 'outbox.put', entry: claimed(stale) }]),
      writes.write(unchanged(entry('e3')), [{ op: 'outbox.put', entry: claimed(entry('e3')) }]),
    ])
    expect(results).toEqual([true, false, true])
    expect((await held('e1'))?.claim).toBe('claim-e1')
    expect((await held('e2'))?.claim).toBeUndefined()
    expect((await held('e3'))?.claim).toBe('claim-e3')
    // The shared write was refused, then the two others went out on their own.
    expect(counts.writes).toBe(3)
  })

  it('a shared write that throws is tried again, each write on its own', async () => {
    const { counts, writes, held } = await setUp(['e1', 'e2'])
    counts.throwOnce = true
    const results = await Promise.all(
      ['e1', 'e2'].map((id) =>
        writes.write(unchanged(entry(id)), [{ op: 'outbox.put', entry: claimed(entry(id)) }]),
      ),
    )
    expect(results).toEqual([true, true])
    expect((await held('e1'))?.claim).toBe('claim-e1')
    expect(counts.writes).toBe(3)
  })

  it('65 writes asked together take two store writes: 64 in the first', async () => {
    const ids = Array.from({ length: 65 }, (_, i) => `e${String(i).padStart(3, '0')}`)
    const { counts, writes } = await setUp(ids)
    const results = await Promise.all(
      ids.map((id) => writes.write(unchanged(entry(id)), [{ op: 'outbox.put', entry: claimed(entry(id)) }])),
    )
    expect(results.every(Boolean)).toBe(true)
    expect(counts.sizes).toEqual([64, 1])
    expect(counts.writes).toBe(2)
  })
})

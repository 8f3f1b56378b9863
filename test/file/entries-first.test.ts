import { describe, expect, it, vi } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import type { LogEntry } from '../../src/kernel/types.js'
import { put, T } from './fixtures.js'
import { tempDir } from './helpers.js'
import { opened } from './lmdb-opened.js'

// A read's audit entries are committed without a sync (docs/audit-log.md); queued beside another
// tenant's writes that wait for theirs, they go first, so a read waits for no sync but the one of
// the commit under way when it came (docs/stores.md).

/** lmdb as it is, its `open` noting each environment it opened (`opened`). */
vi.mock('lmdb', async (original) => (await import('./lmdb-opened.js')).noting(await original()))

/** The methods of the store's environment these tests wrap. */
interface Env {
  childTransaction(run: () => unknown): Promise<unknown>
  transactionSync(run: () => unknown, flags?: number): unknown
}

/** The environment lmdb opened last: the store's. */
const storeEnv = () => opened.at(-1) as Env

/**
 * Calls `then` once, right after the store's next synced commit applied its writes (LMDB runs its
 * transaction's body on this thread, then commits and syncs it on its own): what is queued then
 * waits for that commit's sync.
 */
function afterNextApply(then: () => void): void {
  const env = storeEnv()
  const own = env.childTransaction.bind(env)
  env.childTransaction = (run) => {
    env.childTransaction = own
    return own(() => {
      const result = run()
      then()
      return result
    })
  }
}

/** The `n`th audit entry of a read of tenant B: a write of entries only. */
const entry = (n: number): LogEntry => ({
  ...{ tenant_id: 'tenant-b', id: `wb:${String(n).padStart(12, '0')}`, lane: 'wb.000000', seq: n },
  ...{ mac: 'm', actor_type: 'application', entity_type: 'token', operation: 'read' },
  ...{ message: 'Read a token', outcome: 'success', created_at: '2026-01-01T00:00:00.000Z' },
})

describe('file store: entries of reads beside synced writes', () => {
  it("commits a read's entries ahead of the synced writes queued with them, all of them landing", async () => {
    const store = await fileStore({ path: await tempDir(), applyMs: 60_000 })
    const order: string[] = []
    const done = (name: string) => () => order.push(name)
    // While the first write's commit syncs, a write of tenant A and a read's entry of tenant B queue.
    const writes: Promise<unknown>[] = []
    afterNextApply(() => {
      writes.push(store.write({ ops: [put('a-1')] }).then(done('a-1')))
      writes.push(store.write({ ops: [{ op: 'log.put', entry: entry(0) }] }).then(done('entry')))
    })
    writes.push(store.write({ ops: [put('a-0')] }).then(done('a-0')))
    await writes[0]
    await Promise.all(writes)
    // Before: the entry shared a-1's synced commit and was answered with it, after it.
    expect(order).toEqual(['a-0', 'entry', 'a-1'])
    expect(store.stats()).toMatchObject({ writes: 3, commits: 3 })
    expect(await store.getToken(T, 'a-1')).not.toBeNull()
    expect((await store.listLogs('tenant-b', { order: 'chain', limit: 10 })).map((e) => e.id)).toEqual([
      entry(0).id,
    ])
    await store.close()
  })

  it('never passes over a synced write twice, however many entries keep coming', async () => {
    const store = await fileStore({ path: await tempDir(), applyMs: 60_000 })
    const env = storeEnv()
    const order: string[] = []
    const writes: Promise<unknown>[] = []
    let n = 0
    const read = () => {
      const own = n++
      writes.push(
        store.write({ ops: [{ op: 'log.put', entry: entry(own) }] }).then(() => order.push(`entry-${own}`)),
      )
    }
    // Each commit of entries queues the next entry as it applies, up to 20: one always waits.
    const unsynced = env.transactionSync.bind(env)
    env.transactionSync = (run, flags) =>
      unsynced(() => {
        const result = run()
        if (n < 20) read()
        return result
      }, flags)
    afterNextApply(() => {
      writes.push(store.write({ ops: [put('a-1')] }).then(() => order.push('a-1')))
      read()
    })
    await store.write({ ops: [put('a-0')] })
    // Writes queued while the ones awaited commit are awaited in turn.
    for (let awaited = 0; awaited < writes.length; ) {
      const now = writes.length
      await Promise.all(writes.slice(awaited, now))
      awaited = now
    }
    // One commit of entries goes ahead of it (the entry it queued joins the synced commit); before,
    // it waited for all 20.
    expect(order.indexOf('a-1')).toBeLessThanOrEqual(2)
    expect(order.filter((o) => o.startsWith('entry'))).toHaveLength(n)
    await store.close()
  })
})

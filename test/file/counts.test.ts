import { describe, expect, it } from 'vitest'
import { countKey } from '../../adapters/file/apply.js'
import { openDatabases } from '../../adapters/file/env.js'
import { fileStore } from '../../adapters/file/index.js'
import { idem } from '../../testing/store/idempotency.js'
import { session, T } from '../../testing/store/records.js'
import { tempDir } from './helpers.js'

describe('file store counts', () => {
  it('a store written before it kept counts is counted once when it opens', async () => {
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
    // Take away the counts and their marker, as a store of the earlier format holds neither.
    const dbs = openDatabases(path, false)
    dbs.env.transactionSync(() => {
      dbs.meta.remove(countKey('idempotency', T))
      dbs.meta.remove(countKey('session.created', T))
      dbs.meta.remove(Buffer.from('counted'))
    })
    expect(dbs.meta.get(countKey('idempotency', T))).toBeUndefined()
    dbs.release()
    await dbs.env.close()
    const again = await fileStore({ path, durability: 'none' })
    expect(await again.countRecords(T, 'idempotency')).toBe(2)
    expect(await again.countRecords(T, 'session.created')).toBe(1)
    await again.write({ ops: [{ op: 'idempotency.delete', tenant_id: T, id: 'a' }] })
    expect(await again.countRecords(T, 'idempotency')).toBe(1)
    await again.close()
  })
})

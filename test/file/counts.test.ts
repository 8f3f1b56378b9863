import { open as openLmdb } from 'lmdb'
import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { idem } from '../../testing/store/idempotency.js'
import { session, T } from '../../testing/store/records.js'
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
})

import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { link, NOW, put, T } from './fixtures.js'
import { tempDir } from './helpers.js'

describe('file store writes', () => {
  it('a write that LMDB refuses fails alone and whole: the writes sharing its commit land', async () => {
    const store = await fileStore({ path: await tempDir() })
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
    await store.close()
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
})

import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { app, T } from '../../testing/store/records.js'
import { tempDir } from './helpers.js'

/** The permissions of the owner of `hash` as `store` finds it, or null. */
async function permissions(store: Awaited<ReturnType<typeof fileStore>>, hash: string) {
  const owner = await store.findKey(hash)
  return owner?.kind === 'application' ? owner.application.permissions : null
}

describe('file store key owners', () => {
  it('hands out the same frozen owner while nothing was committed, and the new one as soon as a write of its own is answered', async () => {
    const store = await fileStore({ path: await tempDir(), durability: 'none' })
    await store.write({ ops: [{ op: 'application.put', application: app('a1') }] })
    const first = await store.findKey('hash-a1')
    expect(await store.findKey('hash-a1')).toBe(first)
    expect(Object.isFrozen(first)).toBe(true)

    // A write of something else moves the snapshot too: the owner read again is equal, and still current.
    await store.write({ ops: [{ op: 'application.put', application: app('a2') }] })
    expect(await store.findKey('hash-a1')).toEqual(first)

    const changed = { ...app('a1'), permissions: ['token:read', 'token:create'] as const }
    const answered = store
      .write({
        ops: [{ op: 'application.put', application: { ...changed, permissions: [...changed.permissions] } }],
      })
      // Read in the very reaction to the answer, before any other event runs.
      .then(() => permissions(store, 'hash-a1'))
    expect(await answered).toEqual(['token:read', 'token:create'])

    await store.write({ ops: [{ op: 'application.delete', tenant_id: T, id: 'a1' }] })
    expect(await store.findKey('hash-a1')).toBeNull()
    await store.close()
  })

  it('sees a revocation another store on the same directory committed at its next read', async () => {
    const path = await tempDir()
    const a = await fileStore({ path, durability: 'none' })
    const b = await fileStore({ path, durability: 'none' })
    await a.write({ ops: [{ op: 'application.put', application: app('a1') }] })
    expect(await permissions(b, 'hash-a1')).toEqual(['token:read'])
    expect(await permissions(b, 'hash-a1')).toEqual(['token:read'])
    await a.write({
      ops: [{ op: 'application.put', application: { ...app('a1'), permissions: ['token:use'] } }],
    })
    expect(await permissions(b, 'hash-a1')).toEqual(['token:use'])
    await a.write({ ops: [{ op: 'application.delete', tenant_id: T, id: 'a1' }] })
    expect(await b.findKey('hash-a1')).toBeNull()
    await a.close()
    await b.close()
  })
})

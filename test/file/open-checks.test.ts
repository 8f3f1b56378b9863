import { createHash } from 'node:crypto'
import { mkdir, readdir, readFile, stat, truncate, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { open as openLmdb } from 'lmdb'
import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { isStoreError } from '../../src/store/index.js'
import { put, T } from './fixtures.js'
import { tempDir } from './helpers.js'

const sha256 = async (path: string) =>
  createHash('sha256')
    .update(await readFile(path))
    .digest('hex')
const refusal = (path: string) =>
  fileStore({ path }).then(
    async (store) => {
      await store.close()
      return null
    },
    (e: unknown) => e,
  )

/** A store holding `n` tokens of `size` characters, closed. */
async function storeWith(n: number, size = 500): Promise<string> {
  const path = join(await tempDir(), 'store')
  const store = await fileStore({ path })
  await store.write({ ops: Array.from({ length: n }, (_, i) => put(`t${i}`, { data: 'd'.repeat(size) })) })
  await store.close()
  return path
}

/** The offset of the newer meta page's `last_pg` in an LMDB data file (4096-byte pages). */
function lastPageAt(file: Buffer): number {
  const txnid = (page: number) => file.readBigUInt64LE(page * 4096 + 24 + 128)
  return (txnid(0) >= txnid(1) ? 0 : 4096) + 24 + 120
}

describe('file store opening checks', () => {
  it("refuses another program's LMDB environment and leaves its data file byte for byte as it was", async () => {
    const path = join(await tempDir(), 'foreign')
    const env = openLmdb({ path, maxDbs: 4 })
    await env.put('hello', 'world')
    await env.openDB({ name: 'theirs' }).put('k', 'v')
    await env.close()
    const before = await sha256(join(path, 'data.mdb'))
    const error = await refusal(path)
    expect(isStoreError(error, 'corrupt')).toBe(true)
    expect((error as Error).message).toMatch(/not a tokenvault store/)
    expect(await sha256(join(path, 'data.mdb'))).toBe(before)
  })

  it('refuses an LMDB environment holding no database, unchanged', async () => {
    const path = join(await tempDir(), 'bare')
    await openLmdb({ path }).close()
    const before = await sha256(join(path, 'data.mdb'))
    expect(isStoreError(await refusal(path), 'corrupt')).toBe(true)
    expect(await sha256(join(path, 'data.mdb'))).toBe(before)
  })

  it('refuses a data file cut to 0 bytes instead of making a new empty store in it', async () => {
    const path = await storeWith(10)
    await truncate(join(path, 'data.mdb'), 0)
    const error = await refusal(path)
    expect(isStoreError(error, 'corrupt')).toBe(true)
    expect((error as Error).message).toMatch(/truncated: 0 bytes/)
    expect((await stat(join(path, 'data.mdb'))).size).toBe(0)
  })

  it('refuses a data file cut by one page that a tree still uses, unchanged', async () => {
    const path = await storeWith(300)
    const file = join(path, 'data.mdb')
    await truncate(file, (await stat(file)).size - 4096)
    const before = await sha256(file)
    const error = await refusal(path)
    expect(isStoreError(error, 'corrupt')).toBe(true)
    expect((error as Error).message).toMatch(/truncated: page \d+ is missing/)
    expect(await sha256(file)).toBe(before)
  })

  it('opens a data file shorter than its last_pg when no tree reaches the pages it lacks (allocated, freed, never written)', async () => {
    const path = await storeWith(300)
    const file = join(path, 'data.mdb')
    const bytes = await readFile(file)
    // LMDB counts pages it allocated and freed within one commit in last_pg, never writing them.
    const at = lastPageAt(bytes)
    bytes.writeBigUInt64LE(bytes.readBigUInt64LE(at) + 3n, at)
    await writeFile(file, bytes)
    const store = await fileStore({ path })
    expect((await store.dump()).tokens).toHaveLength(300)
    await store.write({ ops: [put('after')] })
    expect(await store.getToken(T, 'after')).not.toBeNull()
    await store.close()
  })

  it('refuses a directory holding lock.mdb without data.mdb (its data file removed), writing nothing', async () => {
    const path = await storeWith(1)
    const { rm } = await import('node:fs/promises')
    await rm(join(path, 'data.mdb'))
    expect(isStoreError(await refusal(path), 'corrupt')).toBe(true)
    expect(await readdir(path)).toEqual(['lock.mdb'])
  })

  it('makes a new store in a new directory and in an empty one, leaving no file but its two', async () => {
    const fresh = join(await tempDir(), 'fresh')
    const empty = join(await tempDir(), 'empty')
    await mkdir(empty)
    for (const path of [fresh, empty]) {
      const store = await fileStore({ path })
      await store.write({ ops: [put('a')] })
      await store.close()
      expect((await readdir(path)).sort()).toEqual(['data.mdb', 'lock.mdb'])
      const again = await fileStore({ path })
      expect(await again.getToken(T, 'a')).not.toBeNull()
      await again.close()
    }
  })
})

import { cp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { crc32 } from '../../adapters/file/crc32.js'
import { type FileStoreStep, fileStore, type RecoveryProgress } from '../../adapters/file/index.js'
import { encodeRecord } from '../../adapters/file/record.js'
import { MemoryState } from '../../src/store/memory-state.js'
import { link, NOW, put, stage, T, tx } from './fixtures.js'
import { tempDir } from './helpers.js'

/** Writes `n` tokens in batches of 100 (each token about 300 bytes of JSON). */
async function fill(store: Awaited<ReturnType<typeof fileStore>>, n: number, prefix = 't') {
  for (let i = 0; i < n; i += 100) {
    await store.write({
      ops: Array.from({ length: Math.min(100, n - i) }, (_, j) => put(`${prefix}${i + j}`)),
    })
  }
}

describe('file store snapshots as a stream of frames', () => {
  it('writes many checksummed frames and refuses a damaged, cut or extended snapshot, naming it', async () => {
    const dir = await tempDir()
    const store = await fileStore({ path: dir, durability: 'none', compactMinBytes: 1e12 })
    await fill(store, 5000)
    await store.write({ ops: [link('t1', 't2'), { op: 'transaction.put', transaction: tx('x1') }] })
    await store.compact()
    const before = await store.dump()
    await store.close()
    const file = join(dir, 'snapshot.1.json')
    const good = await readFile(file)
    // 40 frames of tokens (slices of 128), one of associations, one of transactions, the end.
    const header = good.subarray(0, good.indexOf(0x0a)).toString()
    expect(JSON.parse(header)).toEqual({
      format: 'tokenvault.snapshot',
      version: 3,
      generation: 1,
      journalBytes: 0,
    })
    expect(good.includes('["tokens",[')).toBe(true)
    expect(good.toString('latin1').split('["tokens",[').length - 1).toBe(40)
    expect(good.includes('["end",{"frames":42,"records":5002,"journalBytes":0}]')).toBe(true)

    const reopened = await fileStore({ path: dir, durability: 'none' })
    expect(await reopened.dump()).toEqual(before)
    await reopened.close()

    const flipped = Buffer.from(good)
    flipped[Math.floor(good.length / 2)]! ^= 0x04
    await writeFile(file, flipped)
    await expect(fileStore({ path: dir })).rejects.toThrow(
      new RegExp(`snapshot ${file} is damaged: checksum mismatch in the frame at byte offset \\d+`),
    )
    await writeFile(file, good.subarray(0, good.length - 20))
    await expect(fileStore({ path: dir })).rejects.toThrow(
      `snapshot ${file} is damaged: cut short: no end frame`,
    )
    await writeFile(file, Buffer.concat([good, encodeRecord('["tokens",[]]')]))
    await expect(fileStore({ path: dir })).rejects.toThrow(
      `snapshot ${file} is damaged: bytes after the end frame`,
    )
    await writeFile(file, good)
    const again = await fileStore({ path: dir, durability: 'none' })
    expect(await again.dump()).toEqual(before)
    await again.close()
  })

  it('still loads a version 2 snapshot (one JSON body) and its journal', async () => {
    const dir = await tempDir()
    const state = new MemoryState()
    for (const op of [
      put('a'),
      put('b'),
      link('a', 'b'),
      { op: 'transaction.put' as const, transaction: tx('x1') },
    ])
      state.apply(op)
    const body = Buffer.from(JSON.stringify(state.records()))
    const header = {
      format: 'tokenvault.snapshot',
      version: 2,
      generation: 1,
      bytes: body.length,
      crc32: crc32(body),
    }
    await writeFile(
      join(dir, 'snapshot.1.json'),
      Buffer.concat([Buffer.from(`${JSON.stringify(header)}\n`), body]),
    )
    await writeFile(join(dir, 'journal.1.log'), encodeRecord(JSON.stringify([put('c'), link('a', 'c')])))
    const store = await fileStore({ path: dir, durability: 'none' })
    expect((await store.dump()).tokens.map((t) => t.id)).toEqual(['a', 'b', 'c'])
    const children = await store.listChildren(T, 'a', { offset: 0, limit: 10, now: NOW })
    expect(children.items.map((t) => t.id)).toEqual(['b', 'c'])
    // The next compaction writes version 3.
    await store.compact()
    await store.close()
    const text = await readFile(join(dir, 'snapshot.2.json'), 'utf8')
    expect(JSON.parse(text.slice(0, text.indexOf('\n'))).version).toBe(3)
  })
})

describe('file store compaction beside the calls', () => {
  it('answers reads and acknowledges writes while the snapshot is written; a crash then loses none of them', async () => {
    const dir = await tempDir()
    let release!: () => void
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    let reached!: () => void
    const atRename = new Promise<void>((resolve) => {
      reached = resolve
    })
    const hook = async (s: FileStoreStep) => {
      if (s === 'snapshot.rename') {
        reached()
        await gate
      }
    }
    const store = await fileStore({ path: dir, compactMinBytes: 1e12, hooks: { step: hook } })
    await fill(store, 2000)
    await store.write({ ops: [{ op: 'transaction.put', transaction: tx('x1') }] })
    await store.write({ ops: [stage('x1', [put('s1')], ['t1'])] })
    const compaction = store.compact()
    await atRename
    // The snapshot is written, not yet in place: calls go on, writes into the new journal.
    expect(store.stats()).toMatchObject({ generation: 0, journalGeneration: 1 })
    await fill(store, 300, 'during')
    await store.write({ ops: [stage('x1', [put('s2')], ['t2'])] })
    expect(await store.getToken(T, 'during299')).not.toBeNull()
    const acknowledged = await store.dump()
    // A crash now leaves the old snapshot (none), journal 0 and journal 1: a copy opens whole.
    const crashed = await tempDir()
    await cp(dir, crashed, { recursive: true, filter: (src) => !src.endsWith('LOCK') })
    expect((await readdir(crashed)).sort()).toEqual(['journal.0.log', 'journal.1.log', 'snapshot.1.json.tmp'])
    const copy = await fileStore({ path: crashed, durability: 'none', compactMinBytes: 1e12 })
    expect(await copy.dump()).toEqual(acknowledged)
    expect(copy.stats()).toMatchObject({ generation: 0, journalGeneration: 1 })
    expect((await copy.getTransaction(T, 'x1'))!.writes).toHaveLength(2)
    await copy.close()
    await rm(crashed, { recursive: true })

    release()
    await compaction
    expect(store.stats()).toMatchObject({ generation: 1, journalGeneration: 1, healthy: true })
    expect((await readdir(dir)).sort()).toEqual(['LOCK', 'journal.1.log', 'snapshot.1.json'])
    await store.close()
    const again = await fileStore({ path: dir })
    expect(await again.dump()).toEqual(acknowledged)
    await again.close()
  })

  it('tells how far recovery has read, ending at the total', async () => {
    const dir = await tempDir()
    const store = await fileStore({ path: dir, durability: 'none', compactMinBytes: 1e12 })
    await fill(store, 3000)
    await store.compact()
    await fill(store, 500, 'later')
    await store.close()
    const seen: RecoveryProgress[] = []
    const again = await fileStore({ path: dir, durability: 'none', onRecoveryProgress: (p) => seen.push(p) })
    expect(seen.length).toBeGreaterThan(0)
    const last = seen[seen.length - 1]!
    expect(last.bytesRead).toBe(last.totalBytes)
    expect(last.totalBytes).toBeGreaterThan(3000 * 200)
    for (let i = 1; i < seen.length; i++)
      expect(seen[i]!.bytesRead).toBeGreaterThanOrEqual(seen[i - 1]!.bytesRead)
    expect((await again.dump()).tokens).toHaveLength(3500)
    await again.close()
  })
})

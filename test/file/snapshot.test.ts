import { cp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { crc32 } from '../../adapters/file/crc32.js'
import { type FileStoreStep, fileStore, type RecoveryProgress } from '../../adapters/file/index.js'
import { MemoryState } from '../../src/store/memory-state.js'
import { link, NOW, put, stage, T, tx } from './fixtures.js'
import { encodeRecord, tempDir } from './helpers.js'

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
    const idempotency = {
      tenant_id: T,
      id: 'key-1',
      state: 'done' as const,
      claim: 'c1',
      request: 'r',
      answer: 'a',
      created_at: NOW,
      lease_until: NOW,
      expires_at: NOW,
    }
    await store.write({ ops: [{ op: 'idempotency.put', record: idempotency }] })
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
    expect(good.includes('["end",{"frames":43,"records":5003,"journalBytes":0}]')).toBe(true)

    const reopened = await fileStore({ path: dir, durability: 'none' })
    expect(await reopened.dump()).toEqual(before)
    expect(await reopened.getIdempotency(T, 'key-1')).toEqual(idempotency)
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

  it('loads a hand-written version 3 snapshot, skipping the journal bytes it holds, and refuses frames out of order', async () => {
    const dir = await tempDir()
    const header = Buffer.from(
      `${JSON.stringify({ format: 'tokenvault.snapshot', version: 3, generation: 1, journalBytes: 0 })}\n`,
    )
    const tokens = [put('a'), put('b')].map((op) => (op as Extract<typeof op, { op: 'token.put' }>).token)
    const held = encodeRecord(JSON.stringify([put('c')]))
    const frames = [
      encodeRecord(JSON.stringify(['tokens', tokens])),
      encodeRecord(JSON.stringify(['end', { frames: 1, records: 2, journalBytes: held.length }])),
    ]
    const withSkip = Buffer.from(
      `${JSON.stringify({ format: 'tokenvault.snapshot', version: 3, generation: 1, journalBytes: held.length })}\n`,
    )
    await writeFile(join(dir, 'snapshot.1.json'), Buffer.concat([withSkip, ...frames]))
    // The journal's first record is held by the snapshot already; the second is replayed.
    await writeFile(
      join(dir, 'journal.1.log'),
      Buffer.concat([held, encodeRecord(JSON.stringify([put('d')]))]),
    )
    const store = await fileStore({ path: dir, durability: 'none' })
    expect((await store.dump()).tokens.map((t) => t.id)).toEqual(['a', 'b', 'd'])
    expect(store.stats().recoveredRecords).toBe(1)
    await store.close()

    const file = join(dir, 'snapshot.1.json')
    const unordered = [
      encodeRecord(JSON.stringify(['tokens', tokens])),
      encodeRecord(JSON.stringify(['tenants', []])),
      encodeRecord(JSON.stringify(['end', { frames: 2, records: 2, journalBytes: 0 }])),
    ]
    await writeFile(file, Buffer.concat([header, ...unordered]))
    await expect(fileStore({ path: dir })).rejects.toThrow(/"tenants" frame out of order/)
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

describe('file store snapshots hold no whole-state string', () => {
  it('compacts and reopens with no JSON text longer than a slice of records', async () => {
    const dir = await tempDir()
    const store = await fileStore({ path: dir, durability: 'none', compactMinBytes: 1e12 })
    await fill(store, 6000)
    const longest = { stringify: 0, parse: 0 }
    const stringify = JSON.stringify
    const parse = JSON.parse
    const spies = [
      vi.spyOn(JSON, 'stringify').mockImplementation((...args: Parameters<typeof stringify>) => {
        const text = stringify(...args)
        longest.stringify = Math.max(longest.stringify, text?.length ?? 0)
        return text
      }),
      vi.spyOn(JSON, 'parse').mockImplementation((...args: Parameters<typeof parse>) => {
        longest.parse = Math.max(longest.parse, args[0].length)
        return parse(...args)
      }),
    ]
    try {
      await store.compact()
      await store.close()
      const again = await fileStore({ path: dir, durability: 'none' })
      expect((await again.dump()).tokens).toHaveLength(6000)
      await again.close()
    } finally {
      for (const spy of spies) spy.mockRestore()
    }
    const snapshot = (await readFile(join(dir, 'snapshot.1.json'))).length
    expect(snapshot).toBeGreaterThan(1_000_000)
    // A frame of 128 tokens is about 24 kB of JSON: nothing near the state's 1.1 MB.
    expect(longest.stringify).toBeGreaterThan(10_000)
    expect(longest.stringify).toBeLessThan(80_000)
    expect(longest.parse).toBeLessThan(80_000)
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
    // Writes waited only while the records were copied, not while the snapshot was written.
    const { compactionHoldMs, compactionMs } = store.stats()
    expect(compactionHoldMs).toBeGreaterThan(0)
    expect(compactionMs).toBeGreaterThan(compactionHoldMs)
    expect((await readdir(dir)).sort()).toEqual(['LOCK', 'journal.1.log', 'snapshot.1.json'])
    await store.close()
    const again = await fileStore({ path: dir })
    expect(await again.dump()).toEqual(acknowledged)
    await again.close()
  })

  it('close stops a compaction under way and answers one asked for meanwhile', async () => {
    const dir = await tempDir()
    const store = await fileStore({ path: dir, durability: 'none', compactMinBytes: 1e12 })
    await fill(store, 3000)
    const first = store.compact().catch((e: Error) => e)
    const second = store.compact().catch((e: Error) => e)
    await store.close()
    // Each is either done or refused as closed: none is left hanging.
    for (const outcome of await Promise.all([first, second])) {
      if (outcome !== undefined) expect(outcome).toMatchObject({ code: 'closed' })
    }
    expect((await readdir(dir)).filter((n) => n.endsWith('.tmp'))).toEqual([])
    const again = await fileStore({ path: dir, durability: 'none' })
    expect((await again.dump()).tokens).toHaveLength(3000)
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

import { randomBytes } from 'node:crypto'
import { readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { crc32 as zlibCrc32 } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { crc32Portable } from '../../adapters/file/crc32.js'
import { fileStore } from '../../adapters/file/index.js'
import type { Op } from '../../src/types.js'
import { link, NOW, put, stage, T, tx } from './fixtures.js'
import { encodeRecord, tempDir } from './helpers.js'

const JOURNAL = 'journal.0.log'

/** A closed store holding five batches; returns where the last record starts, and dumps. */
async function storeWithRecords(dir: string) {
  const store = await fileStore({ path: dir, durability: 'none' })
  await store.write({ ops: [put('p'), put('c1'), link('p', 'c1')] })
  await store.write({ ops: [{ op: 'transaction.put', transaction: tx('t1') }] })
  await store.write({ ops: [stage('t1', [put('x')], ['x'])] })
  await store.write({ ops: [put('c2'), link('p', 'c2')] })
  const lastStart = store.stats().journalBytes
  const before = await store.dump()
  await store.write({ ops: [stage('t1', [put('y')], ['y']), put('c3', { data: { text: 'ü€ multi-byte' } })] })
  const after = await store.dump()
  await store.close()
  const bytes = await readFile(join(dir, JOURNAL))
  return { lastStart, before, after, bytes }
}

describe('file store journal', () => {
  it('computes the same CRC-32 as zlib in its portable fallback', () => {
    for (const size of [0, 1, 7, 100, 4096]) {
      const data = randomBytes(size)
      expect(crc32Portable(data)).toBe(zlibCrc32(data) >>> 0)
    }
  })

  it('drops a torn last record cut at every byte offset, and truncates the journal to the good length', async () => {
    const dir = await tempDir()
    const { lastStart, before, after, bytes } = await storeWithRecords(dir)
    expect(lastStart).toBeGreaterThan(0)
    expect(bytes.length).toBeGreaterThan(lastStart + 8)
    for (let cut = lastStart; cut < bytes.length; cut++) {
      await writeFile(join(dir, JOURNAL), bytes.subarray(0, cut))
      const logs: string[] = []
      const store = await fileStore({ path: dir, durability: 'none', log: (l) => logs.push(l) })
      expect(await store.dump()).toEqual(before)
      expect(logs).toHaveLength(cut > lastStart ? 1 : 0)
      if (cut > lastStart) expect(logs[0]).toMatch(`dropped 1 unreadable record from the end of`)
      if (cut > lastStart) expect(logs[0]).toMatch(`${cut - lastStart} bytes at byte offset ${lastStart}`)
      expect(store.stats()).toMatchObject({ recoveredRecords: 4, truncatedBytes: cut - lastStart })
      await store.close()
      expect((await stat(join(dir, JOURNAL))).size).toBe(lastStart)
    }
    await writeFile(join(dir, JOURNAL), bytes)
    const whole = await fileStore({ path: dir, durability: 'none' })
    expect(await whole.dump()).toEqual(after)
    expect(whole.stats().truncatedBytes).toBe(0)
    await whole.close()
  })

  it('drops a last record whose checksum fails, and zeros left after the last record', async () => {
    const dir = await tempDir()
    const { lastStart, before, after, bytes } = await storeWithRecords(dir)
    const flipped = Buffer.from(bytes)
    flipped[bytes.length - 5]! ^= 0x01
    await writeFile(join(dir, JOURNAL), flipped)
    const logs: string[] = []
    const log = (l: string) => logs.push(l)
    let store = await fileStore({ path: dir, durability: 'none', log })
    expect(await store.dump()).toEqual(before)
    expect(logs.pop()).toMatch(/at byte offset \d+ .*fails its checksum: damage/)
    await store.close()
    expect((await stat(join(dir, JOURNAL))).size).toBe(lastStart)

    await writeFile(join(dir, JOURNAL), Buffer.concat([bytes, Buffer.alloc(4096)]))
    store = await fileStore({ path: dir, durability: 'none', log })
    expect(logs.pop()).toMatch(/4096 bytes at byte offset \d+ .*cut short/)
    expect(await store.dump()).toEqual(after)
    expect(store.stats().truncatedBytes).toBe(4096)
    // Appending after a cut-off tail lands where the good records end.
    await store.write({ ops: [put('later')] })
    await store.close()
    store = await fileStore({ path: dir, durability: 'none' })
    expect(await store.getToken('tenant-a', 'later')).not.toBeNull()
    expect(store.stats().recoveredRecords).toBe(6)
    await store.close()
  })

  it('replays records of earlier versions deriving the locks their transactions implied, and its own as written', async () => {
    const dir = await tempDir()
    const lockOf = (id: string, txId: string): Op => ({
      op: 'lock.put',
      lock: { tenant_id: T, token_id: id, transaction_id: txId, expires_at: tx(txId).expires_at },
    })
    // Earlier versions: a transaction put took the locks it lists, and its end released them.
    const legacy = [
      [put('a'), put('b'), put('c'), { op: 'transaction.put', transaction: tx('t1', { locks: ['a', 'b'] }) }],
      [{ op: 'transaction.put', transaction: tx('t2', { locks: ['c'] }) }],
      [{ op: 'transaction.put', transaction: tx('t2', { state: 'committed', locks: [] }) }],
    ]
    await writeFile(join(dir, JOURNAL), Buffer.concat(legacy.map((ops) => encodeRecord(JSON.stringify(ops)))))
    const store = await fileStore({ path: dir, durability: 'none' })
    // This version's records: a put that lists a token takes no lock; only a lock record does.
    await store.write({ ops: [{ op: 'transaction.put', transaction: tx('t3', { locks: ['c'] }) }] })
    await store.write({ ops: [lockOf('b', 't3')] })
    const probe = async (s: typeof store) => {
      const out: string[] = []
      for (const id of ['a', 'b', 'c']) {
        for (const transaction_id of ['t1', 't2', 't3']) {
          const held = await s.write({
            checks: [{ check: 'lock.held', tenant_id: T, token_id: id, transaction_id }],
            ops: [],
          })
          if (held.ok) out.push(`${id}:${transaction_id}`)
        }
        const free = await s.write({
          checks: [{ check: 'token.unlocked', tenant_id: T, id, now: NOW }],
          ops: [],
        })
        if (free.ok) out.push(`${id}:free`)
      }
      return out
    }
    expect(await probe(store)).toEqual(['a:t1', 'b:t3', 'c:free'])
    await store.close()
    const again = await fileStore({ path: dir, durability: 'none' })
    expect(await probe(again)).toEqual(['a:t1', 'b:t3', 'c:free'])
    await again.compact()
    await again.close()
    const compacted = await fileStore({ path: dir, durability: 'none' })
    expect(await probe(compacted)).toEqual(['a:t1', 'b:t3', 'c:free'])
    await compacted.close()
  })

  it('replays reactors of earlier versions as using their formulas, and its own as written', async () => {
    const dir = await tempDir()
    const reactor = (id: string, formula_id: string): Op => ({
      op: 'reactor.put',
      reactor: {
        id,
        tenant_id: T,
        name: id,
        formula_id,
        configuration: {},
        created_at: NOW,
        created_by: 'app',
      },
    })
    // Earlier versions: a reactor counted as a use of its formula.
    await writeFile(
      join(dir, JOURNAL),
      encodeRecord(JSON.stringify([reactor('r1', 'f1'), reactor('r2', 'f3')])),
    )
    const store = await fileStore({ path: dir, durability: 'none' })
    await store.write({ ops: [reactor('r3', 'f2'), { op: 'reactor.delete', tenant_id: T, id: 'r2' }] })
    const unused = async (s: typeof store) => {
      const out: string[] = []
      for (const id of ['f1', 'f2', 'f3']) {
        if ((await s.write({ checks: [{ check: 'formula.unused', id }], ops: [] })).ok) out.push(id)
      }
      return out
    }
    // r2's use of f3 is a record of its own now: deleting the reactor alone leaves it.
    expect(await unused(store)).toEqual(['f2'])
    await store.close()
    const again = await fileStore({ path: dir, durability: 'none' })
    expect(await unused(again)).toEqual(['f2'])
    await again.compact()
    await again.close()
    const compacted = await fileStore({ path: dir, durability: 'none' })
    expect(await unused(compacted)).toEqual(['f2'])
    await compacted.close()
  })

  it('refuses to open a journal damaged in the middle, naming the file and byte offset', async () => {
    const dir = await tempDir()
    const { bytes } = await storeWithRecords(dir)
    const secondStart = 8 + bytes.readUInt32LE(0)
    const file = join(dir, JOURNAL)

    const payloadFlip = Buffer.from(bytes)
    payloadFlip[secondStart + 12]! ^= 0x20
    await writeFile(file, payloadFlip)
    await expect(fileStore({ path: dir })).rejects.toThrow(
      new RegExp(`${JOURNAL.replaceAll('.', '\\.')}: corrupt record at byte offset ${secondStart} `),
    )

    const lengthFlip = Buffer.from(bytes)
    lengthFlip.writeUInt32LE(0x7fffffff, 0)
    await writeFile(file, lengthFlip)
    const error = await fileStore({ path: dir }).catch((e: Error) => e)
    expect(error).toBeInstanceOf(Error)
    expect((error as Error).message).toContain(file)
    expect((error as Error).message).toContain('byte offset 0 ')

    // The failed opens left no lock and no changes behind: the intact journal opens.
    expect((await readFile(file)).length).toBe(bytes.length)
    await writeFile(file, bytes)
    const store = await fileStore({ path: dir })
    expect(store.stats().recoveredRecords).toBe(5)
    await store.close()
  })
})

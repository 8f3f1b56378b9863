import { readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { COMPACTION_STEPS, type FileStoreStep, fileStore } from '../../adapters/file/index.js'
import type { StoreDump } from '../../src/store/contract.js'
import { StoreError } from '../../src/store/error.js'
import type { LegacyOp, Op } from '../../src/types.js'
import { link, NOW, put, stage, T, tx } from './fixtures.js'
import { healed, tempDir } from './helpers.js'

const files = async (dir: string) => (await readdir(dir)).sort()

/** Writes a varied state: tokens, links out of id order, an open transaction with staged writes. */
async function seed(store: Awaited<ReturnType<typeof fileStore>>) {
  await store.write({ ops: [put('p'), put('c3'), put('c1'), put('c2'), link('p', 'c3'), link('p', 'c1')] })
  await store.write({ ops: [link('p', 'c2'), { op: 'transaction.put', transaction: tx('t1') }] })
  await store.write({ ops: [stage('t1', [put('x')], ['x'])] })
  await store.write({ ops: [stage('t1', [put('y')], ['y'])] })
}

describe('file store compaction', () => {
  for (const step of COMPACTION_STEPS) {
    it(`keeps every acknowledged write when compaction fails before "${step}", and after a reopen`, async () => {
      const dir = await tempDir()
      let armed = false
      let during: Promise<unknown> | undefined
      let acknowledged: Promise<StoreDump> | undefined
      const hook = (s: FileStoreStep) => {
        // Issued while a flush is in flight: queued behind it, so the compaction's snapshot holds it.
        if (armed && s === 'journal.sync' && !during) {
          during = store.write({ ops: [stage('t1', [put('w')], ['w'])] }).catch((e: Error) => e)
          acknowledged = store.dump()
        }
        if (armed && s === step) throw new Error(`crash before ${s}`)
      }
      const store = await fileStore({ path: dir, compactMinBytes: 1e12, hooks: { step: hook } })
      await seed(store)
      await store.compact() // generation 1, so the failure below leaves generation 1 files to clean up
      await store.write({ ops: [stage('t1', [put('z')], ['z']), put('c4'), link('p', 'c4')] })
      armed = true
      const trigger = store.write({ ops: [put('c5'), link('p', 'c5')] })
      const compaction = store.compact().catch((e: Error) => e)
      await expect(trigger).resolves.toEqual({ ok: true })
      const failed = (await compaction) as StoreError
      expect(failed).toBeInstanceOf(StoreError)
      expect([failed.code, failed.cause]).toEqual(['unavailable', new Error(`crash before ${step}`)])
      // The write queued meanwhile went to the journal: a failed compaction never touches writes.
      expect(await during).toEqual({ ok: true })
      expect(store.stats().healthy).toBe(true)
      const renamed = COMPACTION_STEPS.indexOf(step) > COMPACTION_STEPS.indexOf('snapshot.rename')
      const switched = step !== 'journal.create'
      expect(store.stats()).toMatchObject({
        generation: renamed ? 2 : 1,
        journalGeneration: switched ? 2 : 1,
      })
      expect((await readdir(dir)).filter((n) => n.endsWith('.tmp'))).toEqual([])
      // It goes on taking writes.
      await store.write({ ops: [put('c6'), link('p', 'c6')] })
      const before = await store.dump()
      await store.close()

      // A crash at that step leaves these files; a reopen reads them back whole.
      const again = await fileStore({ path: dir })
      expect(again.stats()).toMatchObject({
        generation: renamed ? 2 : 1,
        journalGeneration: switched ? 2 : 1,
      })
      const got = await again.dump()
      expect(got).toEqual(before)
      const writes = got.transactions[0]!.writes as Extract<Op, { op: 'token.put' }>[]
      // Each staged write exactly once: the snapshot was never combined with records it holds.
      expect(writes.map((w) => w.token.id)).toEqual(['x', 'y', 'z', 'w'])
      expect(got.tokens).toEqual(expect.arrayContaining((await acknowledged!).tokens))
      expect(
        (await again.listChildren(T, 'p', { offset: 0, limit: 10, now: NOW })).items.map((t) => t.id),
      ).toEqual(['c3', 'c1', 'c2', 'c4', 'c5', 'c6'])
      // It goes on working, and a compaction tidies the directory up.
      await again.write({ ops: [stage('t1', [put('v')], ['v'])] })
      await again.compact()
      const generation = again.stats().generation
      expect(await files(dir)).toEqual(['LOCK', `journal.${generation}.log`, `snapshot.${generation}.json`])
      await again.close()
      const third = await fileStore({ path: dir })
      expect((await third.getTransaction(T, 't1'))!.writes).toHaveLength(5)
      expect(await third.dump()).toEqual({ ...before, transactions: (await third.dump()).transactions })
      await third.close()
    })
  }

  it('compacts on its own past the thresholds, keeping every write', async () => {
    const dir = await tempDir()
    const store = await fileStore({ path: dir, durability: 'none', compactMinBytes: 4096, compactRatio: 1 })
    await store.write({ ops: [put('p'), { op: 'transaction.put', transaction: tx('t1') }] })
    for (let i = 0; i < 200; i++) {
      await Promise.all([
        store.write({ ops: [put(`c${i}`), link('p', `c${i}`)] }),
        store.write({ ops: [stage('t1', [put(`s${i}`)], [`s${i}`])] }),
      ])
    }
    await store.compact() // let a compaction under way finish
    const stats = store.stats()
    expect(stats.compactions).toBeGreaterThan(1)
    expect(stats.journalBytes).toBeLessThanOrEqual(Math.max(4096, stats.snapshotBytes) + 1024)
    const before = await store.dump()
    await store.close()
    const again = await fileStore({ path: dir, durability: 'none' })
    expect(await again.dump()).toEqual(before)
    expect((await again.getTransaction(T, 't1'))!.writes).toHaveLength(200)
    const children = await again.listChildren(T, 'p', { offset: 0, limit: 500, now: NOW })
    expect(children.items.map((t) => t.id)).toEqual(Array.from({ length: 200 }, (_, i) => `c${i}`))
    expect(await files(dir)).toEqual([
      'LOCK',
      `journal.${stats.generation}.log`,
      `snapshot.${stats.generation}.json`,
    ])
    await again.close()
  })

  it('restores from a snapshot which transaction holds each lock, and none where it was released', async () => {
    const dir = await tempDir()
    const store = await fileStore({ path: dir, durability: 'none' })
    const early = '2030-01-01T00:10:00.000Z'
    await store.write({
      ops: [
        put('x'),
        put('y'),
        { op: 'transaction.put', transaction: tx('a', { expires_at: early, locks: ['x', 'y'] }) },
      ],
    })
    // Once `a` has expired, `b` may lock its tokens; `b` then commits, releasing x but not y.
    await store.write({ ops: [{ op: 'transaction.put', transaction: tx('b') }, stage('b', [], ['x'])] })
    await store.write({ ops: [{ op: 'transaction.put', transaction: tx('c') }, stage('c', [], ['y'])] })
    // A legacy commit op, as earlier versions journaled it.
    const commit = { op: 'transaction.commit', tenant_id: T, id: 'b' } satisfies LegacyOp
    await store.write({ ops: [commit as unknown as Op] })
    const probe = async (s: typeof store) => {
      const out: boolean[] = []
      for (const id of ['x', 'y']) {
        for (const except of [undefined, 'a', 'c']) {
          const check = {
            check: 'token.unlocked' as const,
            tenant_id: T,
            id,
            now: NOW,
            ...(except ? { except } : {}),
          }
          out.push((await s.write({ checks: [check], ops: [] })).ok)
        }
      }
      return out
    }
    const expected = await probe(store)
    expect(expected).toEqual([true, true, true, false, false, true])
    await store.compact()
    await store.close()
    const again = await fileStore({ path: dir, durability: 'none' })
    expect(again.stats()).toMatchObject({ generation: 1, recoveredRecords: 0 })
    expect(await probe(again)).toEqual(expected)
    await again.close()
  })

  it('removes a crashed compaction’s temp file, and refuses a damaged snapshot naming it', async () => {
    const dir = await tempDir()
    const store = await fileStore({ path: dir, durability: 'none' })
    await seed(store)
    await store.compact()
    await store.write({ ops: [put('after')] })
    const before = await store.dump()
    await store.close()
    await writeFile(join(dir, 'snapshot.2.json.tmp'), '{"format":"tokenvault.sn')
    let again = await fileStore({ path: dir, durability: 'none' })
    expect(await again.dump()).toEqual(before)
    await again.close()
    expect(await files(dir)).toEqual(['journal.1.log', 'snapshot.1.json'])

    const snapshot = join(dir, 'snapshot.1.json')
    const good = await readFile(snapshot)
    const bad = Buffer.from(good)
    bad[bad.length - 3]! ^= 0x01
    await writeFile(snapshot, bad)
    await expect(fileStore({ path: dir })).rejects.toThrow(
      `snapshot ${snapshot} is damaged: checksum mismatch`,
    )
    await writeFile(snapshot, good.subarray(0, good.length - 10))
    await expect(fileStore({ path: dir })).rejects.toThrow(`snapshot ${snapshot} is damaged`)
    await writeFile(snapshot, good)

    await writeFile(join(dir, 'journal.3.log'), 'not empty')
    await expect(fileStore({ path: dir })).rejects.toThrow(/journal\.3\.log follows the newest snapshot/)
    await rm(join(dir, 'journal.3.log'))
    await writeFile(join(dir, 'journal.2.log'), '')
    again = await fileStore({ path: dir, durability: 'none' })
    expect(await again.dump()).toEqual(before)
    await again.close()
    expect(await files(dir)).toEqual(['journal.1.log', 'snapshot.1.json'])
  })
})

describe('file store compaction after deletes', () => {
  it('deleted data leaves the disk once deletes amount to the set share of the journal', async () => {
    const dir = await tempDir()
    // Size-based compaction never fires here (1e12 bytes); the delete share, past 1 MiB of journal, does.
    const store = await fileStore({ path: dir, compactMinBytes: 1e12 })
    const ids = Array.from({ length: 400 }, (_, i) => `doomed-${i}`)
    for (const id of ids) {
      await store.write({ ops: [put(id, { data: { secret: `planted-${id}-xyz`, pad: 'p'.repeat(3000) } })] })
    }
    expect(store.stats().compactions).toBe(0)
    const onDisk = async () => {
      const names = await readdir(dir)
      return (await Promise.all(names.map((n) => readFile(join(dir, n), 'latin1').catch(() => '')))).join(
        '\n',
      )
    }
    expect(await onDisk()).toContain('planted-doomed-0-xyz')
    // 100 deletes of 500 ops journaled: below the 25 % share, nothing is rewritten yet.
    for (const id of ids.slice(0, 100)) await store.write({ ops: [{ op: 'token.delete', tenant_id: T, id }] })
    expect(store.stats().compactions).toBe(0)
    // 134 deletes of 534: past 25 %, the journal is compacted and the deleted data is gone from disk.
    for (const id of ids.slice(100, 134))
      await store.write({ ops: [{ op: 'token.delete', tenant_id: T, id }] })
    // Compaction runs beside the journal; wait (bounded) for it to finish.
    for (let i = 0; i < 200 && store.stats().compactions === 0; i++)
      await new Promise((r) => setTimeout(r, 10))
    expect(store.stats().compactions).toBe(1)
    const text = await onDisk()
    for (const id of ids.slice(0, 134)) expect(text.includes(`planted-${id}-xyz`), id).toBe(false)
    expect(text).toContain('planted-doomed-399-xyz')
    await store.close()
  })

  it('a card rewritten without its cvc counts as a delete: the cvc leaves the disk with the same share', async () => {
    const dir = await tempDir()
    const store = await fileStore({ path: dir, compactMinBytes: 1e12 })
    const ids = Array.from({ length: 400 }, (_, i) => `card-${i}`)
    const card = (id: string, cvc: boolean) =>
      put(id, {
        type: 'card',
        data: { pad: 'p'.repeat(3000), ...(cvc ? { cvc: `planted-${id}-cvc` } : {}) },
        ...(cvc ? { cvc_expires_at: '2030-01-01T01:00:00.000Z' } : {}),
      })
    for (const id of ids) await store.write({ ops: [card(id, true)] })
    const onDisk = async () => {
      const names = await readdir(dir)
      return (await Promise.all(names.map((n) => readFile(join(dir, n), 'latin1').catch(() => '')))).join(
        '\n',
      )
    }
    // Rewrites of tokens that keep (or never had) a deadline are not deletes.
    for (const id of ids.slice(300, 400)) await store.write({ ops: [card(id, true)] })
    expect(store.stats().compactions).toBe(0)
    for (const id of ids.slice(0, 200)) await store.write({ ops: [card(id, false)] })
    for (let i = 0; i < 200 && store.stats().compactions === 0; i++)
      await new Promise((r) => setTimeout(r, 10))
    expect(store.stats().compactions).toBe(1)
    const text = await onDisk()
    for (const id of ids.slice(0, 150)) expect(text.includes(`planted-${id}-cvc`), id).toBe(false)
    expect(text).toContain('planted-card-399-cvc')
    await store.close()
  })
})

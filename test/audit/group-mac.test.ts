import { createHmac } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import type { EntryDraft } from '../../src/audit/index.js'
import { AuditLog, entryId, macText, removeOldestEntries, verifyLogs } from '../../src/audit/index.js'
import type { LogEntry } from '../../src/kernel/index.js'
import type { Store } from '../../src/store/index.js'

const dirs: string[] = []
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'tv-group-mac-'))
  dirs.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

/** An HMAC per tenant, as the service's audit key gives one. */
const mac = (tenantId: string, values: readonly string[]) =>
  values.map((v) => createHmac('sha256', `key-of-${tenantId}`).update(v).digest('base64url'))

/** `n` drafts of one call of tenant `t1`. */
const drafts = (call: string, n: number): EntryDraft[] =>
  Array.from({ length: n }, (_, i) => ({
    tenant_id: 't1',
    actor_type: 'application',
    entity_type: 'token',
    entity_id: `${call}-${i}`,
    operation: 'read',
    message: 'token.list: answered masked',
    outcome: 'success',
    created_at: `2030-01-01T00:00:0${call === 'b' ? 9 : i}.000Z`,
  }))

/** A memory store holding one call's 5 entries (one group) and then one call's 1 entry. */
async function logged(store: Store = memoryStore()) {
  const log = new AuditLog(store, mac)
  await log.commit('t1', drafts('a', 5))
  await log.commit('t1', drafts('b', 1))
  const chain = () => store.listLogs('t1', { order: 'chain', limit: 100 })
  const entries = await chain()
  expect(await verifyLogs(store, mac, 't1')).toEqual({ ok: true, entries: 6, lanes: 1 })
  const put = (entry: LogEntry) => store.write({ ops: [{ op: 'log.put', entry }] })
  return { store, entries, chain, put }
}

/** `logged`'s entries as the first format wrote them: ids of lane and seq, each group sealed again. */
function firstFormat(entries: LogEntry[]): LogEntry[] {
  const first = entries.map((e) => ({ ...e, id: entryId(e.lane, e.seq), mac: '' }))
  for (const group of [first.slice(0, 5), first.slice(5)]) {
    const texts = group.map(({ mac: _m, ...fields }) => macText(fields))
    group[group.length - 1]!.mac = mac('t1', [texts.join('\n')])[0]!
  }
  return first
}

describe('one MAC a group of entries', () => {
  it('seals a write of 5 entries with one MAC on its last entry, and a write of one entry with its own', async () => {
    const { entries } = await logged()
    expect(entries.map((e) => e.mac === '')).toEqual([true, true, true, true, false, false])
    const texts = entries.slice(0, 5).map(({ mac: _m, ...fields }) => macText(fields))
    expect(entries[4]!.mac).toBe(mac('t1', [texts.join('\n')])[0])
    expect(entries[5]!.mac).toBe(mac('t1', [macText({ ...entries[5]!, mac: undefined } as never)])[0])
  })

  it('detects a changed entry inside a group, reported at the group first entry', async () => {
    const { store, entries, put } = await logged()
    await put({ ...entries[2]!, message: 'nothing happened' })
    expect(await verifyLogs(store, mac, 't1')).toMatchObject({
      ok: false,
      entries: 0,
      broken: { id: entries[0]!.id, reason: 'mac' },
    })
  })

  it('detects a group whose sealing entry was removed with everything after it', async () => {
    const { store, entries } = await logged()
    await store.write({
      ops: entries.slice(4).map((e) => ({ op: 'log.delete' as const, tenant_id: 't1', id: e.id })),
    })
    expect(await verifyLogs(store, mac, 't1')).toMatchObject({
      ok: false,
      broken: { id: entries[0]!.id, reason: 'mac' },
    })
  })

  it('detects a MAC moved from a group sealing entry to an earlier one', async () => {
    const { store, entries, put } = await logged()
    await put({ ...entries[1]!, mac: entries[4]!.mac })
    await put({ ...entries[4]!, mac: '' })
    expect(await verifyLogs(store, mac, 't1')).toMatchObject({ ok: false, broken: { reason: 'mac' } })
  })

  it.each(['memory', 'file'] as const)(
    'removes a whole group by retention (2 asked, its 5 go), leaving the writer mark; verification and the count hold (%s)',
    async (kind) => {
      const { store, chain } = await logged(
        kind === 'file' ? await fileStore({ path: tempDir() }) : memoryStore(),
      )
      const now = '2031-01-01T00:00:00.000Z'
      expect(await removeOldestEntries(store, mac, 't1', 2, now)).toEqual({ removed: 5, fewer: 4 })
      const kept = await chain()
      expect(kept.map((e) => e.entity_id ?? e.operation)).toEqual(['log.retention', 'b-0'])
      expect(kept[0]!.created_at).toBe(now)
      expect(await verifyLogs(store, mac, 't1')).toEqual({ ok: true, entries: 2, lanes: 1 })
      expect(await store.countRecords('t1', 'log')).toBe(2)
      await store.close()
    },
  )

  it('cuts nothing of a first-format group that fails its MAC: sealing its rest again would hide the change', async () => {
    const store = memoryStore()
    const { entries } = await logged(memoryStore())
    const first = firstFormat(entries)
    first[3] = { ...first[3]!, message: 'nothing happened' }
    await store.write({ ops: first.map((entry) => ({ op: 'log.put' as const, entry })) })
    const now = '2031-01-01T00:00:00.000Z'
    expect(await removeOldestEntries(store, mac, 't1', 2, now)).toEqual({ removed: 0, fewer: 0 })
    expect(await verifyLogs(store, mac, 't1')).toMatchObject({ ok: false, broken: { reason: 'mac' } })
  })

  it.each(['memory', 'file'] as const)(
    'cuts a group of ids in the first format (lane, seq) by retention (2 of its 5), marking the next floor (%s)',
    async (kind) => {
      const store = kind === 'file' ? await fileStore({ path: tempDir() }) : memoryStore()
      const { entries } = await logged(memoryStore())
      const first = firstFormat(entries)
      await store.write({ ops: first.map((entry) => ({ op: 'log.put' as const, entry })) })
      expect(await verifyLogs(store, mac, 't1')).toEqual({ ok: true, entries: 6, lanes: 1 })
      const now = '2031-01-01T00:00:00.000Z'
      expect(await removeOldestEntries(store, mac, 't1', 2, now)).toEqual({ removed: 2, fewer: 2 })
      const kept = await store.listLogs('t1', { order: 'chain', limit: 100 })
      expect(kept.map((e) => e.entity_id)).toEqual(['a-2', 'a-3', 'a-4', 'b-0'])
      expect(kept[0]!.floor).toBe(true)
      expect(await verifyLogs(store, mac, 't1')).toEqual({ ok: true, entries: 4, lanes: 1 })
      expect(await store.countRecords('t1', 'log')).toBe(4)
      await store.close()
    },
  )
})

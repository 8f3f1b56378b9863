import { describe, expect, it } from 'vitest'
import type { EntryDraft } from '../../src/audit/index.js'
import { AuditLog } from '../../src/audit/index.js'
import type { LogEntry } from '../../src/kernel/index.js'
import type { WriteBatch, WriteResult } from '../../src/store/index.js'

/** A store whose writes wait until the test lets them return, each write's entries recorded. */
function heldStore() {
  const writes: LogEntry[][] = []
  const waiting: ((result: WriteResult) => void)[] = []
  return {
    writes,
    store: {
      write: (batch: WriteBatch) =>
        new Promise<WriteResult>((resolve) => {
          writes.push(batch.ops.map((op) => (op as { op: 'log.put'; entry: LogEntry }).entry))
          waiting.push(resolve)
        }),
    },
    /** Lets the oldest write still waiting return `ok`, and lets the calls it answers run. */
    async release() {
      waiting.shift()!({ ok: true })
      await tick()
    },
  }
}

/** A MAC that names its tenant and text (the group commit's tests do not check MACs). */
const mac = (tenantId: string, values: readonly string[]) => values.map((_, i) => `${tenantId}-${i}`)

/** `n` drafts of `tenantId`'s call `call`, each with a message of `messageLength` characters. */
function drafts(tenantId: string, call: string, n: number, messageLength = 10): EntryDraft[] {
  return Array.from({ length: n }, (_, i) => ({
    tenant_id: tenantId,
    actor_type: 'application',
    entity_type: 'token',
    entity_id: `${call}-${i}`,
    operation: 'read',
    message: 'm'.repeat(messageLength),
    outcome: 'success',
    created_at: '2030-01-01T00:00:00.000Z',
  }))
}

/** Lets the promise jobs queued so far (and those they queue) run. */
const tick = () => new Promise((resolve) => setImmediate(resolve))

/** Starts a commit and notes when it settles. */
function track(log: AuditLog, tenantId: string, list: EntryDraft[]) {
  const state = { done: false, error: undefined as unknown }
  log.commit(tenantId, list).then(
    () => {
      state.done = true
    },
    (error: unknown) => {
      state.error = error
    },
  )
  return state
}

describe('the audit log group commit', () => {
  it('joins the entries of calls of several tenants in one store write, and answers each call after it', async () => {
    const held = heldStore()
    const log = new AuditLog(held.store, mac)
    const first = track(log, 'ta', drafts('ta', 'first', 1))
    await tick()
    const calls = [
      track(log, 'ta', drafts('ta', 'a1', 1)),
      track(log, 'tb', drafts('tb', 'b1', 2)),
      track(log, 'ta', drafts('ta', 'a2', 1)),
      track(log, 'tc', drafts('tc', 'c1', 1)),
    ]
    expect(held.writes).toHaveLength(1)
    expect(calls.some((c) => c.done)).toBe(false)
    await held.release()
    expect(first.done).toBe(true)
    expect(calls.some((c) => c.done)).toBe(false)
    expect(held.writes).toHaveLength(2)
    const second = held.writes[1]!
    expect(second.map((e) => e.entity_id).sort()).toEqual(['a1-0', 'a2-0', 'b1-0', 'b1-1', 'c1-0'])
    // Each tenant's entries on one lane of its own, in the order its calls came.
    const ofA = second.filter((e) => e.tenant_id === 'ta')
    expect(ofA.map((e) => e.entity_id)).toEqual(['a1-0', 'a2-0'])
    expect(ofA[1]!.seq).toBe(ofA[0]!.seq + 1)
    expect(ofA[0]!.lane).toBe(ofA[1]!.lane)
    expect(new Set(second.map((e) => e.lane)).size).toBe(3)
    await held.release()
    expect(calls.every((c) => c.done)).toBe(true)
  })

  it('carries 1024 entries in one store write, and the 1025th in the next', async () => {
    const held = heldStore()
    const log = new AuditLog(held.store, mac)
    track(log, 'ta', drafts('ta', 'first', 1))
    await tick()
    // 10 calls of 100 entries and one of 24: 1024 entries waiting.
    const calls = Array.from({ length: 10 }, (_, i) => track(log, 'ta', drafts('ta', `c${i}`, 100)))
    calls.push(track(log, 'ta', drafts('ta', 'c10', 24)))
    const last = track(log, 'ta', drafts('ta', 'last', 1))
    await held.release()
    expect(held.writes[1]).toHaveLength(1024)
    await held.release()
    expect(calls.every((c) => c.done)).toBe(true)
    expect(last.done).toBe(false)
    expect(held.writes[2]!.map((e) => e.entity_id)).toEqual(['last-0'])
    await held.release()
    expect(last.done).toBe(true)
  })

  it('carries 1 MiB of entries in one store write, and one entry more in the next', async () => {
    const held = heldStore()
    const log = new AuditLog(held.store, mac)
    track(log, 'ta', drafts('ta', 'first', 1))
    await tick()
    // An entry's size: 256, then its strings' lengths. With a message of 3736 characters and an
    // entity id of 51 each of these takes 4096 (256 + 2 + 11 + 5 + 51 + 4 + 3736 + 7 + 24).
    const big = (call: string, n: number) =>
      drafts('ta', call, n, 3736).map((d, i) => ({
        ...d,
        entity_id: `${call}-${String(i).padStart(3, '0')}`.padEnd(51, 'x'),
      }))
    for (let i = 0; i < 4; i++) track(log, 'ta', big(`b${i}`, 64))
    const over = track(log, 'ta', big('bz', 1))
    await held.release()
    expect(held.writes[1]).toHaveLength(256)
    await held.release()
    expect(held.writes[2]).toHaveLength(1)
    await held.release()
    expect(over.done).toBe(true)
  })

  it('takes the waiting calls of every tenant in turn: a tenant with many waiting holds another back by one commit at most', async () => {
    const held = heldStore()
    const log = new AuditLog(held.store, mac)
    track(log, 'ta', drafts('ta', 'first', 1))
    await tick()
    const ofA = Array.from({ length: 20 }, (_, i) => track(log, 'ta', drafts('ta', `a${i}`, 100)))
    const ofB = track(log, 'tb', drafts('tb', 'b', 1))
    await held.release()
    expect(held.writes[1]!.some((e) => e.tenant_id === 'tb')).toBe(true)
    expect(held.writes[1]!.length).toBeLessThanOrEqual(1024)
    await held.release()
    expect(ofB.done).toBe(true)
    expect(ofA.filter((c) => c.done)).toHaveLength(10)
  })

  it('keeps 4096 entries of a tenant waiting, and refuses the call that would make 4097 with 429', async () => {
    const held = heldStore()
    const log = new AuditLog(held.store, mac)
    track(log, 'ta', drafts('ta', 'first', 1))
    await tick()
    const calls = Array.from({ length: 40 }, (_, i) => track(log, 'ta', drafts('ta', `c${i}`, 100)))
    calls.push(track(log, 'ta', drafts('ta', 'c40', 96)))
    const refused = track(log, 'ta', drafts('ta', 'over', 1))
    const other = track(log, 'tb', drafts('tb', 'b', 1))
    await tick()
    expect(refused.error).toMatchObject({ code: 'too_many_requests' })
    expect(calls.some((c) => c.error !== undefined)).toBe(false)
    for (let i = 0; i < 6; i++) await held.release()
    expect(calls.every((c) => c.done)).toBe(true)
    expect(other.done).toBe(true)
  })

  it('fails the calls of a tenant whose entries cannot be sealed alone, and those of a failed write all', async () => {
    const writes: number[] = []
    let fail = false
    const log = new AuditLog(
      {
        write: async (batch: WriteBatch) => {
          writes.push(batch.ops.length)
          if (fail) throw new Error('disk gone')
          return { ok: true }
        },
      },
      (tenantId, values) => {
        if (tenantId === 'gone') throw new Error('no key')
        return mac(tenantId, values)
      },
    )
    const a = log.commit('ta', drafts('ta', 'a', 1))
    const gone = log.commit('gone', drafts('gone', 'g', 1))
    const b = log.commit('tb', drafts('tb', 'b', 1))
    await expect(a).resolves.toBeUndefined()
    await expect(gone).rejects.toThrow('no key')
    await expect(b).resolves.toBeUndefined()
    fail = true
    await expect(log.commit('ta', drafts('ta', 'a2', 1))).rejects.toThrow('disk gone')
  })
})

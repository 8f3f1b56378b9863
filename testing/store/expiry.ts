import { expect, it } from 'vitest'
import type { StoredToken } from '../../src/kernel/index.js'
import type { ExpiringKind, Op, RecordKey, Store } from '../../src/store/index.js'
import { app, NOW, session, T, token, tx, U } from './records.js'

const at = (minutes: number) => new Date(Date.parse(NOW) + minutes * 60_000).toISOString()
const sorted = (keys: RecordKey[]) => keys.map((k) => `${k.tenant_id}/${k.id}`).sort()

/** `listExpired`: what it lists for each kind, bounded by `limit`. Registered inside the store suite. */
export function expiryTests(fresh: () => Promise<Store>): void {
  it('lists expired tokens, sessions, open and ended transactions of every tenant, by their time', async () => {
    const store = await fresh()
    const ops: Op[] = [
      { op: 'token.put', token: token('forever') },
      { op: 'token.put', token: token('soon', { expires_at: at(5) }) },
      { op: 'token.put', token: token('later', { expires_at: at(50) }) },
      { op: 'token.put', token: token('other', { tenant_id: U, expires_at: at(1) }) },
      { op: 'session.put', session: session('s1', { expires_at: at(3) }) },
      { op: 'session.put', session: session('s2', { expires_at: at(30) }) },
      { op: 'transaction.put', transaction: tx('open-old', { expires_at: at(10) }) },
      { op: 'transaction.put', transaction: tx('open-new', { expires_at: at(90) }) },
      { op: 'transaction.put', transaction: tx('done-old', { state: 'committed', expires_at: at(10) }) },
      { op: 'transaction.put', transaction: tx('gone-new', { state: 'rolled_back', expires_at: at(90) }) },
    ]
    await store.write({ ops })
    const list = async (kind: ExpiringKind, minutes: number, limit = 100) =>
      sorted(await store.listExpired({ kind, before: at(minutes), limit }))
    expect(await list('token', 0)).toEqual([])
    expect(await list('token', 5)).toEqual([`${T}/soon`, `${U}/other`])
    expect(await list('token', 60)).toEqual([`${T}/later`, `${T}/soon`, `${U}/other`])
    expect(await list('session', 5)).toEqual([`${T}/s1`])
    expect(await list('transaction.open', 60)).toEqual([`${T}/open-old`])
    expect(await list('transaction.ended', 60)).toEqual([`${T}/done-old`])
    expect(await list('transaction.ended', 100)).toEqual([`${T}/done-old`, `${T}/gone-new`])
    // A token whose expiry was taken away, or that was deleted, is not listed any more.
    await store.write({
      ops: [
        { op: 'token.put', token: token('soon') },
        { op: 'token.delete', tenant_id: U, id: 'other' },
      ],
    })
    expect(await list('token', 60)).toEqual([`${T}/later`])
    await store.close()
  })

  it('lists card tokens by cvc_expires_at (token.cvc), in every tenant; one rewritten without it, or deleted, is not', async () => {
    const store = await fresh()
    const card = (id: string, extra: Partial<StoredToken>) => token(id, { type: 'card', ...extra })
    await store.write({
      ops: [
        { op: 'token.put', token: card('no-cvc', {}) },
        { op: 'token.put', token: card('soon', { cvc_expires_at: at(5) }) },
        { op: 'token.put', token: card('later', { cvc_expires_at: at(50), expires_at: at(200) }) },
        { op: 'token.put', token: card('other', { tenant_id: U, cvc_expires_at: at(1) }) },
        { op: 'token.put', token: card('expiring', { expires_at: at(1) }) },
      ],
    })
    const list = async (minutes: number) =>
      sorted(await store.listExpired({ kind: 'token.cvc', before: at(minutes), limit: 100 }))
    expect(await list(0)).toEqual([])
    expect(await list(5)).toEqual([`${T}/soon`, `${U}/other`])
    expect(await list(60)).toEqual([`${T}/later`, `${T}/soon`, `${U}/other`])
    expect(await store.listExpired({ kind: 'token.cvc', before: at(60), limit: 2 })).toHaveLength(2)
    // `token` lists by `expires_at` alone.
    expect(sorted(await store.listExpired({ kind: 'token', before: at(5), limit: 100 }))).toEqual([
      `${T}/expiring`,
    ])
    await store.write({
      ops: [
        { op: 'token.put', token: card('soon', {}) },
        { op: 'token.put', token: card('later', { cvc_expires_at: at(90) }) },
        { op: 'token.delete', tenant_id: U, id: 'other' },
      ],
    })
    expect(await list(60)).toEqual([])
    expect(await list(90)).toEqual([`${T}/later`])
    await store.close()
  })

  it('lists applications by expires_at, in every tenant; one without, or deleted, is not listed', async () => {
    const store = await fresh()
    await store.write({
      ops: [
        { op: 'application.put', application: app('forever') },
        { op: 'application.put', application: { ...app('soon'), expires_at: at(5) } },
        { op: 'application.put', application: { ...app('later'), expires_at: at(50) } },
        { op: 'application.put', application: { ...app('other', U), expires_at: at(1) } },
      ],
    })
    const list = async (minutes: number) =>
      sorted(await store.listExpired({ kind: 'application', before: at(minutes), limit: 100 }))
    expect(await list(0)).toEqual([])
    expect(await list(5)).toEqual([`${T}/soon`, `${U}/other`])
    expect(await list(60)).toEqual([`${T}/later`, `${T}/soon`, `${U}/other`])
    expect(await store.listExpired({ kind: 'application', before: at(60), limit: 2 })).toHaveLength(2)
    await store.write({ ops: [{ op: 'application.delete', tenant_id: U, id: 'other' }] })
    expect(await list(60)).toEqual([`${T}/later`, `${T}/soon`])
    await store.close()
  })

  it('answers at most `limit` keys, and a batch acted on makes room for the next', async () => {
    const store = await fresh()
    const ops: Op[] = []
    for (let i = 0; i < 25; i++)
      ops.push({ op: 'token.put', token: token(`t${i}`, { expires_at: at(i % 7) }) })
    await store.write({ ops })
    const seen = new Set<string>()
    for (let round = 0; round < 10; round++) {
      const batch = await store.listExpired({ kind: 'token', before: at(10), limit: 10 })
      expect(batch.length).toBeLessThanOrEqual(10)
      if (batch.length === 0) break
      for (const key of batch) {
        expect(seen.has(key.id)).toBe(false)
        seen.add(key.id)
      }
      await store.write({ ops: batch.map((k) => ({ op: 'token.delete', tenant_id: k.tenant_id, id: k.id })) })
    }
    expect(seen.size).toBe(25)
    expect(await store.listExpired({ kind: 'token', before: at(10), limit: 0 })).toEqual([])
    await store.close()
  })
}

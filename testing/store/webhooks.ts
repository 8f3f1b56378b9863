import { expect, it } from 'vitest'
import type { OutboxEntry, StoredWebhook } from '../../src/kernel/index.js'
import type { Store } from '../../src/store/index.js'
import { NOW, T, U } from './records.js'

/** A webhook of tenant `T` (or as `extra` says). */
export const hook = (id: string, extra: Partial<StoredWebhook> = {}): StoredWebhook => ({
  id,
  tenant_id: T,
  status: 'enabled',
  name: `hook ${id}`,
  url: 'https://hooks.example.test/in',
  events: ['token.created'],
  created_by: 'app',
  created_at: NOW,
  ...extra,
})

/** A pending outbox entry of tenant `T`, due at `due_at` (or as `extra` says). */
export const entry = (id: string, due: string, extra: Partial<OutboxEntry> = {}): OutboxEntry => ({
  tenant_id: T,
  id,
  kind: 'webhook',
  url: 'https://hooks.example.test/in',
  body: '{"type":"token.created"}',
  created_at: NOW,
  state: 'pending',
  due_at: due,
  attempts: [],
  ...extra,
})

const at = (minute: number) => `2030-01-01T00:${String(minute).padStart(2, '0')}:00.000Z`

/** Webhooks and the outbox: records, orders, the due index, the claim guard, counts, expiry. */
export function webhooksTests(fresh: () => Promise<Store>): void {
  it('keeps webhooks by tenant, lists them in creation order, counts them, guards on their presence', async () => {
    const store = await fresh()
    await store.write({ ops: [{ op: 'webhook.put', webhook: hook('b', { created_at: at(2) }) }] })
    await store.write({ ops: [{ op: 'webhook.put', webhook: hook('a', { created_at: at(3) }) }] })
    await store.write({ ops: [{ op: 'webhook.put', webhook: hook('a', { tenant_id: U }) }] })
    expect((await store.listWebhooks(T, { offset: 0, limit: 10 })).items.map((w) => w.id)).toEqual(['b', 'a'])
    expect(await store.getWebhook(T, 'a')).toEqual(hook('a', { created_at: at(3) }))
    expect(await store.countRecords(T, 'webhook')).toBe(2)
    await store.write({ ops: [{ op: 'webhook.delete', tenant_id: T, id: 'b' }] })
    expect(await store.getWebhook(T, 'b')).toBeNull()
    expect(await store.countRecords(T, 'webhook')).toBe(1)
    const refused = await store.write({
      checks: [{ check: 'webhook.present', tenant_id: T, id: 'b' }],
      ops: [{ op: 'webhook.put', webhook: hook('b') }],
    })
    expect(refused.ok).toBe(false)
    expect(await store.getWebhook(T, 'b')).toBeNull()
  })

  it('lists a tenant’s outbox in id order and every tenant’s due entries by due time, page after page', async () => {
    const store = await fresh()
    await store.write({
      ops: [
        { op: 'outbox.put', entry: entry('o3', at(1)) },
        { op: 'outbox.put', entry: entry('o1', at(3)) },
        { op: 'outbox.put', entry: entry('o2', at(2), { tenant_id: U }) },
        { op: 'outbox.put', entry: entry('o4', at(9)) },
        {
          op: 'outbox.put',
          entry: entry('o0', at(0), { state: 'delivered', expires_at: at(5) }),
        },
      ],
    })
    expect((await store.listOutbox(T, { limit: 10 })).map((e) => e.id)).toEqual(['o0', 'o1', 'o3', 'o4'])
    expect((await store.listOutbox(T, { after: 'o1', limit: 1 })).map((e) => e.id)).toEqual(['o3'])
    const due = await store.listDueOutbox({ before: at(3), limit: 10 })
    expect(due.map((e) => e.id)).toEqual(['o3', 'o2', 'o1'])
    const next = await store.listDueOutbox({
      before: at(3),
      limit: 10,
      after: { due_at: at(1), tenant_id: T, id: 'o3' },
    })
    expect(next.map((e) => e.id)).toEqual(['o2', 'o1'])
    expect(await store.countRecords(T, 'outbox.pending')).toBe(3)
    expect(await store.countRecords(U, 'outbox.pending')).toBe(1)
    expect(await store.listExpired({ kind: 'outbox', before: at(5), limit: 10 })).toEqual([
      { tenant_id: T, id: 'o0' },
    ])
    expect(await store.listExpired({ kind: 'outbox', before: at(4), limit: 10 })).toEqual([])
  })

  it('of concurrent claims of one entry (outbox.unchanged) exactly one wins; a finished entry leaves the due index', async () => {
    const store = await fresh()
    const first = entry('o1', at(1))
    await store.write({ ops: [{ op: 'outbox.put', entry: first }] })
    const claim = (n: number) =>
      store.write({
        checks: [{ check: 'outbox.unchanged', tenant_id: T, id: 'o1', entry: first }],
        ops: [{ op: 'outbox.put', entry: { ...first, claim: `c${n}`, due_at: at(30) } }],
      })
    const results = await Promise.all(Array.from({ length: 10 }, (_, n) => claim(n)))
    expect(results.filter((r) => r.ok)).toHaveLength(1)
    expect(await store.listDueOutbox({ before: at(29), limit: 10 })).toEqual([])
    const claimed = (await store.getOutbox(T, 'o1'))!
    const { claim: _c, due_at: _d, ...rest } = claimed
    await store.write({
      checks: [{ check: 'outbox.unchanged', tenant_id: T, id: 'o1', entry: claimed }],
      ops: [{ op: 'outbox.put', entry: { ...rest, state: 'delivered', expires_at: at(40) } }],
    })
    expect(await store.listDueOutbox({ before: at(59), limit: 10 })).toEqual([])
    expect(await store.countRecords(T, 'outbox.pending')).toBe(0)
    await store.write({ ops: [{ op: 'outbox.delete', tenant_id: T, id: 'o1' }] })
    expect(await store.getOutbox(T, 'o1')).toBeNull()
    expect(await store.listExpired({ kind: 'outbox', before: at(59), limit: 10 })).toEqual([])
  })
}

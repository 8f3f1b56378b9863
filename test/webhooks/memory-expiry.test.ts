/**
 * The memory store finds finished outbox entries whose time has come from an index by `expires_at`
 * (`adapters/memory/outbox.ts`): a sweep step reads what it answers, never every entry the store
 * holds. The entries here count every read of their fields.
 */
import { describe, expect, it } from 'vitest'
import { emptyWebhookMaps, expired, putEntry } from '../../adapters/memory/outbox.js'
import type { OutboxEntry } from '../../src/kernel/index.js'

const at = (minute: number) => new Date(Date.UTC(2030, 0, 1, 0, minute)).toISOString()

/** An outbox entry whose field reads are counted in `reads`. */
function counted(reads: { n: number }, fields: Partial<OutboxEntry> & Pick<OutboxEntry, 'id'>): OutboxEntry {
  const entry: OutboxEntry = {
    tenant_id: 't1',
    kind: 'webhook',
    url: 'https://hooks.example.test/in',
    body: '{}',
    created_at: at(0),
    state: 'pending',
    attempts: [],
    ...fields,
  }
  return new Proxy(entry, {
    get(target, key, receiver) {
      reads.n++
      return Reflect.get(target, key, receiver)
    },
  })
}

describe('memory outbox expiry', () => {
  it('answers the finished entries whose time has come, soonest first, without reading the pending ones', () => {
    const m = emptyWebhookMaps()
    const pending = { n: 0 }
    const finished = { n: 0 }
    for (let i = 0; i < 2000; i++)
      putEntry(m, counted(pending, { id: `p${String(i).padStart(5, '0')}`, due_at: at(1) }))
    const done = (id: string, minute: number, tenant = 't1') =>
      putEntry(
        m,
        counted(finished, {
          id,
          tenant_id: tenant,
          state: 'delivered',
          expires_at: at(minute),
        }),
      )
    done('d3', 30)
    done('d1', 10, 't2')
    done('d2', 20)
    pending.n = 0
    expect(expired(m, at(20), 10)).toEqual([
      { tenant_id: 't2', id: 'd1' },
      { tenant_id: 't1', id: 'd2' },
    ])
    expect(expired(m, at(60), 2)).toEqual([
      { tenant_id: 't2', id: 'd1' },
      { tenant_id: 't1', id: 'd2' },
    ])
    expect(expired(m, at(60), 0)).toEqual([])
    expect(pending.n).toBe(0)
  })

  it('forgets an entry that is put pending again, and one put with a later expiry keeps only that one', () => {
    const m = emptyWebhookMaps()
    const reads = { n: 0 }
    putEntry(m, counted(reads, { id: 'a', state: 'failed', expires_at: at(5) }))
    putEntry(m, counted(reads, { id: 'b', state: 'delivered', expires_at: at(5) }))
    putEntry(m, counted(reads, { id: 'a', state: 'pending', due_at: at(6) }))
    putEntry(m, counted(reads, { id: 'b', state: 'delivered', expires_at: at(50) }))
    expect(expired(m, at(10), 10)).toEqual([])
    expect(expired(m, at(50), 10)).toEqual([{ tenant_id: 't1', id: 'b' }])
  })
})

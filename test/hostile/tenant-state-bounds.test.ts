/**
 * What the service keeps for tenants besides work in flight — the operation journal, parsed
 * templates, idempotency records, unauthorized sessions — is bounded per tenant and in all, and a
 * tenant that saturates one never pushes out or refuses another tenant's: the numbers are README's
 * ("Bounds per tenant"), written out here.
 */
import { describe, expect, it } from 'vitest'
import { testControlHandler } from '../../adapters/http/test-control.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../src/index.js'
import { Journal } from '../../src/journal.js'

const at = '2030-01-01T00:00:00.000Z'
const entry = (tenant: string | null, n = 0) => ({
  at,
  tenant_id: tenant,
  actor: { kind: 'admin' as const },
  operation: `op.${n}`,
  outcome: { ok: true as const },
  ids: [],
})

describe('the operation journal: 500 entries per tenant, 1000 in all', () => {
  it('A’s 500th entry is kept with all before it; its 501st evicts its own oldest, never B’s', () => {
    const journal = new Journal(1000)
    journal.record(entry('B'))
    for (let n = 1; n <= 500; n++) journal.record(entry('A', n))
    expect(journal.query({ tenant: 'A' })).toHaveLength(500)
    expect(journal.query({ tenant: 'A' })[0]?.operation).toBe('op.1')
    journal.record(entry('A', 501))
    const a = journal.query({ tenant: 'A' })
    expect({ count: a.length, first: a[0]?.operation, last: a.at(-1)?.operation }).toEqual({
      count: 500,
      first: 'op.2',
      last: 'op.501',
    })
    expect(journal.query({ tenant: 'B' })).toHaveLength(1)
  })

  it('1000 in all: with A and C at 500 each, B’s entry evicts the oldest of the tenant holding the most', () => {
    const journal = new Journal(1000)
    for (let n = 1; n <= 500; n++) journal.record(entry('A', n))
    for (let n = 1; n <= 499; n++) journal.record(entry('C', n))
    journal.record(entry('B', 1))
    expect(journal.query()).toHaveLength(1000)
    journal.record(entry('B', 2))
    expect(journal.query()).toHaveLength(1000)
    expect(journal.query({ tenant: 'A' })[0]?.operation).toBe('op.2')
    expect(journal.query({ tenant: 'C' })).toHaveLength(499)
    expect(journal.query({ tenant: 'B' }).map((e) => e.operation)).toEqual(['op.1', 'op.2'])
    // The whole journal still reads in order of seq.
    const seqs = journal.query().map((e) => e.seq)
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y))
  })

  it('calls whose key did not authenticate are one more tenant: their flood keeps a tenant’s entries', () => {
    const journal = new Journal(1000)
    journal.record(entry('B'))
    for (let n = 0; n < 5000; n++) journal.record(entry(null, n))
    expect(journal.query({ tenant: 'B' })).toHaveLength(1)
    expect(journal.query()).toHaveLength(501)
  })

  it('a tenant flooding the service keeps B’s entries, read back by the test control plane and in order', async () => {
    const clock = manualClock(at)
    const service = createService({ store: memoryStore(), clock, runner: null })
    try {
      const key = async (name: string) => {
        const tenant = await service.admin.createTenant({ name })
        const { key } = await service.admin.createApplication({
          tenantId: tenant.id,
          name,
          type: 'private',
          permissions: ['token:read'],
        })
        return { id: tenant.id, client: service.connect(key) }
      }
      const a = await key('a')
      const b = await key('b')
      await expect(b.client.tokens.get('b-missing')).rejects.toMatchObject({ code: 'not_found' })
      const started = performance.now()
      for (let n = 0; n < 1200; n++) await a.client.tokens.get(`a-${n}`).catch(() => {})
      expect(performance.now() - started).toBeLessThan(10_000)
      const control = testControlHandler(service, { clock, adminToken: 'admin-token-for-tests-0123456789' })
      const answer = await control(
        new Request(`http://vault.test/_test/journal?tenant=${b.id}`, {
          headers: { authorization: 'Bearer admin-token-for-tests-0123456789' },
        }),
      )
      const { data } = (await answer.json()) as { data: { operation: string; ids: string[] }[] }
      expect(data.map((e) => e.operation)).toEqual(['tenant.create', 'application.create', 'token.get'])
      expect(data.at(-1)?.ids).toEqual(['b-missing'])
      expect(service.journal.query({ tenant: a.id })).toHaveLength(500)
      expect(service.journal.query({ tenant: a.id }).at(-1)?.ids).toEqual(['a-1199'])
    } finally {
      await service.close()
    }
  })

  it('the bounds are createService options', async () => {
    const service = createService({
      store: memoryStore(),
      clock: manualClock(at),
      runner: null,
      journalSize: 3,
      journalSizePerTenant: 2,
    })
    try {
      for (const name of ['a', 'b', 'c', 'd']) await service.admin.createTenant({ name })
      expect(service.journal.query().map((e) => e.operation)).toHaveLength(3)
      expect(service.journal).toMatchObject({ capacity: 3, perTenant: 2 })
    } finally {
      await service.close()
    }
  })
})

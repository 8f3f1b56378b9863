import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import type { Op, WriteBatch, WriteEffectContext, WriteOutcome } from '../../src/store/index.js'
import { withWriteEffects } from '../../src/store/index.js'

const context: WriteEffectContext = {
  tenantId: 't1',
  actorId: 'app1',
  actorType: 'application',
  requestId: 'req-1',
  operation: 'tenant.create',
  now: '2030-01-01T00:00:00.000Z',
}

const tenantPut = (id: string): Op => ({
  op: 'tenant.put',
  tenant: { id, name: id, created_at: context.now },
})

describe('write effects', () => {
  it('appends the derived ops to the same write, and tells the effect how it ended', async () => {
    const store = memoryStore()
    const seen: { batch: WriteBatch; at: WriteEffectContext }[] = []
    const outcomes: WriteOutcome[] = []
    const write = withWriteEffects(
      (batch) => store.write(batch),
      [
        {
          derive: (at, batch) => {
            seen.push({ batch, at })
            return [tenantPut(`${(batch.ops[0] as { tenant: { id: string } }).tenant.id}-shadow`)]
          },
          settled: (_at, ops, outcome) => {
            expect(ops).toHaveLength(1)
            outcomes.push(outcome)
          },
        },
      ],
      () => context,
    )
    expect(await write({ ops: [tenantPut('a')] })).toEqual({ ok: true })
    expect(seen[0]!.at).toEqual(context)
    expect((await store.getTenant('a-shadow'))?.id).toBe('a-shadow')
    // Refused by its checks: neither the change nor the derived op lands.
    const refused = await write({
      checks: [{ check: 'application.present', tenant_id: 'a', id: 'nope' }],
      ops: [tenantPut('b')],
    })
    expect(refused.ok).toBe(false)
    expect(await store.getTenant('b-shadow')).toBeNull()
    expect(outcomes).toEqual(['ok', 'refused'])
  })

  it('reports an unknown outcome when the store throws, and passes a batch without ops through', async () => {
    const outcomes: WriteOutcome[] = []
    let calls = 0
    const write = withWriteEffects(
      async (batch: WriteBatch) => {
        calls++
        if (batch.ops.length) throw new Error('disk gone')
        return { ok: true }
      },
      [{ derive: () => [tenantPut('x')], settled: (_a, _o, outcome) => outcomes.push(outcome) }],
      () => context,
    )
    await expect(write({ ops: [tenantPut('a')] })).rejects.toThrow('disk gone')
    expect(outcomes).toEqual(['unknown'])
    expect(await write({ ops: [] })).toEqual({ ok: true })
    expect(outcomes).toEqual(['unknown'])
    expect(calls).toBe(2)
  })

  it("hands the store the batch's checks and ops, then each effect's, keeps deferSync, and leaves the batch as it was", async () => {
    const given: { checks?: unknown[]; ops: Op[]; deferSync?: boolean }[] = []
    const guard = (id: string) => ({ check: 'application.present' as const, tenant_id: 't1', id })
    const write = withWriteEffects(
      async (batch: WriteBatch) => {
        given.push(batch)
        return { ok: true }
      },
      [
        { derive: () => ({ ops: [tenantPut('e1')], checks: [guard('g1')] }) },
        { derive: () => [] },
        { derive: () => ({ ops: [tenantPut('e2')], checks: [guard('g2')] }) },
      ],
      () => context,
    )
    const batch: WriteBatch = { checks: [guard('own')], ops: [tenantPut('a')], deferSync: true }
    await write(batch)
    expect(given[0]).toEqual({
      checks: [guard('own'), guard('g1'), guard('g2')],
      ops: [tenantPut('a'), tenantPut('e1'), tenantPut('e2')],
      deferSync: true,
    })
    expect(batch).toEqual({ checks: [guard('own')], ops: [tenantPut('a')], deferSync: true })
    // Without deferSync, the store gets no such key; without checks anywhere, no checks.
    await write({ ops: [tenantPut('b')] })
    expect(Object.keys(given[1]!).sort()).toEqual(['checks', 'ops'])
    const plain = withWriteEffects(
      async (b: WriteBatch) => {
        given.push(b)
        return { ok: true }
      },
      [{ derive: () => [tenantPut('e3')] }],
      () => context,
    )
    await plain({ ops: [tenantPut('c')] })
    expect(given[2]).toEqual({ ops: [tenantPut('c'), tenantPut('e3')] })
    expect(Object.keys(given[2]!)).toEqual(['ops'])
  })
})

/**
 * A write effect's guards (`DerivedWrite.checks`): they ride in the same write after the batch's
 * own checks, and when one of them fails the write is refused with the effect's `refused` error
 * (the caller asked for no such guard), while a failed guard of the caller's own is answered as
 * `{ ok: false }` as before.
 */
import { describe, expect, it } from 'vitest'
import { type Check, type Op, type WriteBatch, withWriteEffects } from '../../src/store/index.js'

const bound: Check = { check: 'count.within', tenant_id: 't', kind: 'outbox.pending', max: 2 }
const own: Check = { check: 'token.present', tenant_id: 't', id: 'x' }
const change: Op = { op: 'token.delete', tenant_id: 't', id: 'x' }
const derived: Op = { op: 'outbox.delete', tenant_id: 't', id: 'e' }
const context = () => ({
  tenantId: 't',
  actorId: null,
  actorType: 'system' as const,
  requestId: null,
  operation: 'token.delete',
  now: '2030-01-01T00:00:00.000Z',
})

/** A store write that refuses on `failing` (answering a copy of it, as a store across a wire does). */
function refusingOn(failing: Check | null) {
  const seen: WriteBatch[] = []
  const write = async (batch: WriteBatch) => {
    seen.push(batch)
    return failing ? { ok: false as const, failed: structuredClone(failing) } : { ok: true as const }
  }
  const outcomes: string[] = []
  const wrapped = withWriteEffects(
    write,
    [
      {
        derive: () => ({ ops: [derived], checks: [bound] }),
        settled: (_c, _ops, outcome) => outcomes.push(outcome),
        refused: (check) => new Error(`refused by the bound at ${(check as { max: number }).max}`),
      },
    ],
    context,
  )
  return { wrapped, seen, outcomes }
}

describe("a write effect's guards", () => {
  it("ride in the write after the batch's own checks, the derived ops after its ops", async () => {
    const { wrapped, seen, outcomes } = refusingOn(null)
    expect(await wrapped({ checks: [own], ops: [change] })).toEqual({ ok: true })
    expect(seen).toEqual([{ checks: [own, bound], ops: [change, derived] }])
    expect(outcomes).toEqual(['ok'])
  })

  it("a failed guard of the effect's throws its refused error, not { ok: false }", async () => {
    const { wrapped, outcomes } = refusingOn(bound)
    await expect(wrapped({ checks: [own], ops: [change] })).rejects.toThrow('refused by the bound at 2')
    expect(outcomes).toEqual(['refused'])
  })

  it("a failed guard of the caller's own is answered as { ok: false }", async () => {
    const { wrapped } = refusingOn(own)
    expect(await wrapped({ checks: [own], ops: [change] })).toEqual({ ok: false, failed: own })
  })
})

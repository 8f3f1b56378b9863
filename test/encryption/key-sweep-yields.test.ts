import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { delegatingStore, type Store } from '../../src/store/index.js'
import { tenantWithClient } from '../support/tenants.js'
import { turnsWhile } from '../support/turns.js'

/**
 * A memory store that counts the sweep's steps in the swept tenant (each reads ids, reads tokens or
 * writes re-seals, a turn each) and can hold the other tenant's token reads until released.
 */
function watchedStore() {
  const inner = memoryStore()
  const seen = { swept: '', sweepOps: 0, hold: undefined as Promise<void> | undefined }
  const store: Store = delegatingStore(inner, {
    findTokenIds(tenantId, query) {
      if (tenantId === seen.swept) seen.sweepOps++
      return inner.findTokenIds(tenantId, query)
    },
    getTokens(tenantId, ids) {
      if (tenantId === seen.swept) seen.sweepOps++
      return inner.getTokens(tenantId, ids)
    },
    write(batch) {
      if (batch.deferSync && batch.ops.some((op) => op.op === 'token.put')) seen.sweepOps++
      return inner.write(batch)
    },
    async getToken(tenantId, id) {
      if (tenantId !== seen.swept && seen.hold) await seen.hold
      return inner.getToken(tenantId, id)
    },
  })
  return { store, seen }
}

/** A vault with a swept tenant of `tokens` tokens, rotated, and another tenant's client and token. */
async function twoTenants(tokens: number) {
  const { store, seen } = watchedStore()
  const clock = manualClock('2030-01-01T00:00:00Z')
  const service = createService({ store, clock, runner: null, masterKey: randomBytes(32) })
  const swept = await tenantWithClient(service, 'swept')
  for (let i = 0; i < tokens; i++) await swept.client.tokens.create({ type: 'token', data: i })
  const other = await tenantWithClient(service, 'other')
  const otherId = (await other.client.tokens.create({ type: 'token', data: 'b' })).id
  await service.admin.rotateDataKey({ tenantId: swept.tenant.id })
  seen.swept = swept.tenant.id
  return { service, seen, sweptId: swept.tenant.id, other: other.client, otherId }
}

const aTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

describe('the re-encryption sweep yields to the service calls in flight', () => {
  it('takes no step while another tenant’s get is in flight, and one between two gets', async () => {
    const { service, seen, sweptId, other, otherId } = await twoTenants(200)
    const sweep = service.admin.reencrypt({ tenantId: sweptId, batchSize: 500 })
    for (let i = 0; i < 3; i++) await aTurn()
    expect(seen.sweepOps).toBeGreaterThan(0)
    let during = 0
    let turns = 0
    for (let i = 0; i < 20; i++) {
      await aTurn()
      let before = 0
      // Its turns: its own, its audit entry's group commit (a turn after the call's writes).
      const got = await turnsWhile(() => {
        before = seen.sweepOps
        return other.tokens.get(otherId)
      })
      turns += got.turns
      during += seen.sweepOps - before
    }
    // Each get spans turns in which the sweep (a step a turn when nothing waits) would have run.
    expect(turns).toBeGreaterThanOrEqual(20)
    expect(during).toBe(0)
    const done = await sweep
    expect(done.done).toBe(200)
    await service.close()
  })

  it('still ends while a call stays in flight throughout: a step every 16 turns', async () => {
    const { service, seen, sweptId, other, otherId } = await twoTenants(40)
    let release = () => {}
    seen.hold = new Promise<void>((resolve) => {
      release = resolve
    })
    const held = other.tokens.get(otherId)
    const { turns, value } = await turnsWhile(() =>
      service.admin.reencrypt({ tenantId: sweptId, batchSize: 500 }),
    )
    expect(value.done).toBe(40)
    // 40 tokens: a read of ids, five reads of 8 tokens, their re-seals and five writes, each step
    // after 16 turns of waiting (`BACKGROUND_MAX_WAIT`; the call never ended), not one turn.
    expect(seen.sweepOps).toBeGreaterThanOrEqual(11)
    expect(turns).toBeGreaterThanOrEqual(seen.sweepOps * 15)
    release()
    expect((await held).id).toBe(otherId)
    await service.close()
  })

  it('runs a step a turn when no call is in flight', async () => {
    const { service, seen, sweptId } = await twoTenants(40)
    const { turns, value } = await turnsWhile(() =>
      service.admin.reencrypt({ tenantId: sweptId, batchSize: 500 }),
    )
    expect(value.done).toBe(40)
    // Not 16 turns a step: none waits when nothing is in flight.
    expect(turns).toBeLessThan(seen.sweepOps * 8)
    await service.close()
  })
})

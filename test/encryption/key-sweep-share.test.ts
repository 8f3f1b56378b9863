/**
 * The re-encryption sweep's share of the time (`reencrypt`'s `share`, default 0.1): while calls
 * come, each step is followed by a pause of its time × (1 − share) / share, on the service's pacer
 * (a fake here: its clock moves 1 ms a reading, its pauses are recorded, never waited); with no
 * call coming it does not pause. And `pacedTurn` itself, on literal numbers.
 */
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, ServiceError } from '../../entry/index.js'
import { pacedTurn } from '../../src/kernel/index.js'
import { tenantWithClient } from '../support/tenants.js'

/** A pacer whose time moves 1 ms each time it is read, and which records its pauses. */
function fakePacer() {
  let t = 0
  const pauses: number[] = []
  return { pauses, now: () => ++t, pause: async (ms: number) => void pauses.push(ms) }
}

async function sweptVault(tokens: number) {
  const pacer = fakePacer()
  const service = createService({
    store: memoryStore(),
    clock: manualClock('2030-01-01T00:00:00Z'),
    runner: null,
    masterKey: randomBytes(32),
    pacer,
  })
  const swept = await tenantWithClient(service, 'swept')
  for (let i = 0; i < tokens; i++) await swept.client.tokens.create({ type: 'token', data: i })
  const other = await tenantWithClient(service, 'other')
  const otherId = (await other.client.tokens.create({ type: 'token', data: 'b' })).id
  await service.admin.rotateDataKey({ tenantId: swept.tenant.id })
  return { service, pacer, sweptId: swept.tenant.id, other: other.client, otherId }
}

/** Runs `sweep` while another tenant's gets follow one another until it ends; the gets made. */
async function underGets(sweep: Promise<unknown>, get: () => Promise<unknown>) {
  let ended = false
  void sweep.finally(() => {
    ended = true
  })
  let gets = 0
  while (!ended) {
    await get()
    gets++
  }
  return gets
}

describe('the sweep keeps to its share of the time while calls come', () => {
  it('by default 0.1: each step during which a call began is followed by a pause of 9 × its time', async () => {
    const { service, pacer, sweptId, other, otherId } = await sweptVault(120)
    const sweep = service.admin.reencrypt({ tenantId: sweptId })
    const gets = await underGets(sweep, () => other.tokens.get(otherId))
    const done = await sweep
    expect(done.done).toBe(120)
    expect(gets).toBeGreaterThan(0)
    expect(pacer.pauses.length).toBeGreaterThan(0)
    // Each step's time on the fake pacer is 1 ms (one reading since the last turn ended).
    for (const ms of pacer.pauses) expect(ms).toBeCloseTo(9, 9)
    await service.close()
  })

  it('share 0.25: pauses of 3 × the step; share 1: none', async () => {
    const quarter = await sweptVault(40)
    const sweep = quarter.service.admin.reencrypt({ tenantId: quarter.sweptId, share: 0.25 })
    await underGets(sweep, () => quarter.other.tokens.get(quarter.otherId))
    expect((await sweep).done).toBe(40)
    expect(quarter.pacer.pauses.length).toBeGreaterThan(0)
    for (const ms of quarter.pacer.pauses) expect(ms).toBeCloseTo(3, 9)
    await quarter.service.close()

    const whole = await sweptVault(40)
    const all = whole.service.admin.reencrypt({ tenantId: whole.sweptId, share: 1 })
    const gets = await underGets(all, () => whole.other.tokens.get(whole.otherId))
    expect((await all).done).toBe(40)
    expect(gets).toBeGreaterThan(0)
    expect(whole.pacer.pauses).toEqual([])
    await whole.service.close()
  })

  it('does not pause when no call comes: an idle service sweeps at full speed', async () => {
    const { service, pacer, sweptId } = await sweptVault(120)
    expect((await service.admin.reencrypt({ tenantId: sweptId })).done).toBe(120)
    expect(pacer.pauses).toEqual([])
    await service.close()
  })

  it('refuses a share that is not a number above 0 and at most 1, re-sealing nothing', async () => {
    const { service, sweptId } = await sweptVault(10)
    for (const share of [0, -0.5, 1.000001, Number.NaN, Number.POSITIVE_INFINITY, '0.5']) {
      const input = { tenantId: sweptId, share } as unknown as { tenantId: string; share: number }
      await expect(service.admin.reencrypt(input)).rejects.toThrow(ServiceError)
      await expect(service.admin.reencryptStep(input)).rejects.toThrow(/share/)
    }
    expect((await service.admin.dataKeyStatus({ tenantId: sweptId })).sweep).toBeUndefined()
    // The boundaries that pass: 1, and the least number above 0.
    expect((await service.admin.reencrypt({ tenantId: sweptId, share: 1 })).done).toBe(10)
    await service.admin.rotateDataKey({ tenantId: sweptId })
    expect((await service.admin.reencrypt({ tenantId: sweptId, share: Number.MIN_VALUE })).done).toBe(10)
    await service.close()
  })
})

describe('pacedTurn', () => {
  /** A pacer whose time is set by the test. */
  const settable = () => {
    const p = { t: 0, pauses: [] as number[] }
    return { p, pacer: { now: () => p.t, pause: async (ms: number) => void p.pauses.push(ms) } }
  }
  const noTurn = async () => {}

  it('pauses busy × (1 − share) / share when a call began since the last turn, else not', async () => {
    const { p, pacer } = settable()
    let begun = 0
    const turn = pacedTurn(noTurn, pacer, 0.25, () => begun)
    p.t = 4
    await turn() // 4 ms of work, no call began: no pause
    p.t += 2
    begun++
    await turn() // 2 ms of work during which a call began: 6 ms
    p.t += 10
    await turn() // no call since: none
    begun += 3
    await turn() // a call began, but no time passed: none
    p.t += 1
    begun++
    await turn()
    expect(p.pauses).toEqual([6, 3])
  })

  it('a pause is at most 5 s: a step of 555 ms at share 0.1 pauses 4 995 ms, 556 ms and a stall of 10 s 5 000', async () => {
    const { p, pacer } = settable()
    let begun = 0
    const turn = pacedTurn(noTurn, pacer, 0.1, () => begun)
    for (const busy of [555, 556, 10_000]) {
      p.t += busy
      begun++
      await turn()
    }
    expect(p.pauses.map((ms) => Math.round(ms))).toEqual([4995, 5000, 5000])
  })

  it('share 1 is the turn itself: never a pause', async () => {
    const { p, pacer } = settable()
    let begun = 0
    const turn = pacedTurn(noTurn, pacer, 1, () => begun)
    for (let i = 0; i < 5; i++) {
      p.t += 5
      begun++
      await turn()
    }
    expect(p.pauses).toEqual([])
  })
})

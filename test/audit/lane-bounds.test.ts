/**
 * The lanes a process numbers a tenant's entries on are bounded, so that the retention mark, which
 * names each lane of its writer whose entries went, stays small: a tenant's writes hold at most 256
 * lanes at once (one more waits for one to be given back), and a tenant opens at most 1024 lanes
 * under one writer (lanes retired by store failures of unknown outcome); the next starts a new
 * writer, as a restart would.
 */
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { type HeldLane, Lanes, writerOf } from '../../src/audit/chain.js'
import { markedLanes } from '../../src/audit/retention-mark.js'
import type { Store } from '../../src/store/contract.js'

/** Whether `p` has settled after the microtasks queued so far ran. */
async function settledYet(p: Promise<unknown>): Promise<boolean> {
  let done = false
  void p.then(() => {
    done = true
  })
  for (let i = 0; i < 10; i++) await Promise.resolve()
  return done
}

describe('lanes of a tenant held at once', () => {
  it('gives 256 lanes at once; the 257th write waits for one to be given back, another tenant does not', async () => {
    const lanes = new Lanes()
    const held: HeldLane[] = []
    for (let i = 0; i < 256; i++) {
      const taken = lanes.acquire('t1', 1)
      expect(taken).not.toBeInstanceOf(Promise)
      held.push(taken as HeldLane)
    }
    expect(new Set(held.map((h) => h.lane.id)).size).toBe(256)
    const waiting = lanes.acquire('t1', 2)
    expect(waiting).toBeInstanceOf(Promise)
    expect(await settledYet(waiting as Promise<HeldLane>)).toBe(false)
    expect(lanes.acquire('t2', 1)).not.toBeInstanceOf(Promise)
    lanes.settle(held[7]!, 'ok')
    const next = await waiting
    // The lane given back goes on where its write ended.
    expect(next.lane.id).toBe(held[7]!.lane.id)
    expect(next.from).toBe(1)
  })

  it('serves the writes that wait in their order, and a lane retired by an unknown outcome is replaced', async () => {
    const lanes = new Lanes()
    const held = Array.from({ length: 256 }, () => lanes.acquire('t1', 1) as HeldLane)
    const order: number[] = []
    const waits = [0, 1, 2].map((i) =>
      (lanes.acquire('t1', 1) as Promise<HeldLane>).then((h) => {
        order.push(i)
        return h
      }),
    )
    lanes.settle(held[0]!, 'unknown')
    lanes.settle(held[1]!, 'refused')
    lanes.settle(held[2]!, 'ok')
    const [a, b, c] = await Promise.all(waits)
    expect(order).toEqual([0, 1, 2])
    const known = new Set(held.map((h) => h.lane.id))
    // The first waiter got a new lane (the retired one ends), the others the lanes given back.
    expect(known.has(a!.lane.id)).toBe(false)
    expect(a!.from).toBe(0)
    expect([b!.lane.id, c!.lane.id].sort()).toEqual([held[1]!.lane.id, held[2]!.lane.id].sort())
  })
})

describe('lanes a tenant opens under one writer', () => {
  it('opens 1024 under one writer; the 1025th starts a new writer, numbered from 0, and lanes of the old one end', async () => {
    const lanes = new Lanes()
    const first = lanes.writer
    const ids = new Set<string>()
    let last: HeldLane | undefined
    for (let i = 0; i < 1024; i++) {
      const h = lanes.take('t1', 1)
      ids.add(h.lane.id)
      expect(h.writer).toBe(first)
      if (i < 1023) lanes.settle(h, 'unknown')
      else last = h
    }
    expect(ids.size).toBe(1024)
    // Another tenant's lanes count apart: it opens its own under the same writer.
    const other = lanes.take('t2', 1)
    expect(other.writer).toBe(first)
    const next = lanes.take('t1', 3)
    expect(next.writer).not.toBe(first)
    expect(next.lane.id.startsWith(`${next.writer}.`)).toBe(true)
    expect(next.idFrom).toBe(0)
    // Lanes of the old writer given back now end: the next writes open lanes of the new one.
    lanes.settle(last!, 'ok')
    lanes.settle(other, 'ok')
    lanes.settle(next, 'ok')
    const again = lanes.take('t2', 1)
    expect(again.writer).toBe(next.writer)
    expect(again.lane.id).not.toBe(other.lane.id)
    expect(lanes.take('t1', 1).lane.id).toBe(next.lane.id)
  })
})

/** `raw` whose writes of tokens first run `before` (which may throw, or hold the write). */
function beforeTokenWrites(raw: Store, before: () => void | Promise<void>): Store {
  return Object.create(raw, {
    write: {
      value: async (batch: Parameters<Store['write']>[0]) => {
        if (batch.ops.some((op) => op.op === 'token.put')) await before()
        return raw.write(batch)
      },
    },
  })
}

/** A service on a memory store whose writes throw while `failing.on` (outcome unknown to the log). */
async function setup() {
  const raw = memoryStore()
  const failing = { on: false }
  const store = beforeTokenWrites(raw, () => {
    if (failing.on) throw new Error('store unreachable')
  })
  const clock = manualClock(new Date('2030-01-01T00:00:00.000Z'))
  const service = createService({
    store,
    clock,
    runner: null,
    masterKey: randomBytes(32),
    logRetentionDays: 1,
  })
  const tenant = await service.admin.createTenant({ name: 'acme' })
  const app = (type: 'private' | 'management', permissions: ('token:create' | 'log:read')[]) =>
    service.admin.createApplication({ tenantId: tenant.id, name: type, type, permissions })
  const writer = service.connect((await app('private', ['token:create'])).key)
  const reader = service.connect((await app('management', ['log:read'])).key)
  const creates = (n: number) =>
    Promise.allSettled(
      Array.from({ length: n }, (_, i) => writer.tokens.create({ type: 'token', data: `v${i}` })),
    )
  /** The lanes the tenant's retention marks name, each mark's count. */
  const marks = async () =>
    (await reader.logs.list({ entity_type: 'log', size: 100 })).data
      .filter((e) => e.operation === 'log.retention')
      .map((e) => markedLanes(e)?.size)
  /** How many writers the tenant's entries were numbered by. */
  const writers = async () =>
    new Set((await raw.listLogs(tenant.id, { order: 'chain', limit: 5000 })).map((e) => writerOf(e.id))).size
  return { service, tenant, clock, failing, creates, marks, writers }
}

describe('the lanes a retention mark names', () => {
  it('names at most 256 lanes after 1 500 creates in flight at once, three times over', async () => {
    const { service, tenant, clock, creates, marks } = await setup()
    for (let i = 0; i < 3; i++)
      expect((await creates(1500)).every((r) => r.status === 'fulfilled')).toBe(true)
    expect(await service.admin.verifyLogs({ tenantId: tenant.id })).toMatchObject({ ok: true, lanes: 256 })
    clock.advance(2 * 86_400_000)
    await service.admin.sweepLogs()
    expect(await marks()).toEqual([256])
    // The lanes go on after the cut where the mark says.
    await creates(300)
    expect(await service.admin.verifyLogs({ tenantId: tenant.id })).toMatchObject({ ok: true })
  })

  it('starts a new writer after 1 100 writes of unknown outcome, and the log verifies across both writers and their marks', async () => {
    const { service, tenant, clock, failing, creates, marks, writers } = await setup()
    await creates(10)
    failing.on = true
    for (let i = 0; i < 11; i++) expect((await creates(100)).every((r) => r.status === 'rejected')).toBe(true)
    failing.on = false
    await creates(10)
    expect(await writers()).toBe(2)
    expect(await service.admin.verifyLogs({ tenantId: tenant.id })).toMatchObject({ ok: true })
    clock.advance(2 * 86_400_000)
    await service.admin.sweepLogs()
    // One mark per writer, each naming only lanes of its writer.
    expect((await marks()).length).toBe(2)
    await creates(10)
    expect(await service.admin.verifyLogs({ tenantId: tenant.id })).toMatchObject({ ok: true })
  })
})

describe('retention and writes in flight', () => {
  it('never cuts past a write of this process still in flight: the log verifies once it lands', async () => {
    const raw = memoryStore()
    let release: () => void = () => {}
    const gate = { on: false }
    const store = beforeTokenWrites(raw, async () => {
      if (!gate.on) return
      gate.on = false
      await new Promise<void>((resolve) => {
        release = resolve
      })
    })
    const clock = manualClock(new Date('2030-01-01T00:00:00.000Z'))
    const service = createService({
      store,
      clock,
      runner: null,
      masterKey: randomBytes(32),
      maxLogEntriesPerTenant: 5,
    })
    const tenant = await service.admin.createTenant({ name: 'acme' })
    const { key } = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'writer',
      type: 'private',
      permissions: ['token:create'],
    })
    const writer = service.connect(key)
    for (let i = 0; i < 3; i++) await writer.tokens.create({ type: 'token', data: 'x' })
    // A create numbered now, held in the store's write; ten more land after it.
    gate.on = true
    const slow = writer.tokens.create({ type: 'token', data: 'slow' })
    for (let i = 0; i < 20 && gate.on; i++) await new Promise((r) => setImmediate(r))
    expect(gate.on).toBe(false)
    for (let i = 0; i < 10; i++) await writer.tokens.create({ type: 'token', data: 'x' })
    // Past the bound of 5, the oldest go: not the entries numbered after the create in flight.
    const swept = await service.admin.sweepLogs()
    expect(swept.removed).toBeGreaterThan(0)
    release()
    await slow
    expect(await service.admin.verifyLogs({ tenantId: tenant.id })).toMatchObject({ ok: true })
    // Once it landed, the next sweep goes on past it.
    await service.admin.sweepLogs()
    expect(await raw.countRecords(tenant.id, 'log')).toBeLessThanOrEqual(6)
    expect(await service.admin.verifyLogs({ tenantId: tenant.id })).toMatchObject({ ok: true })
  })
})

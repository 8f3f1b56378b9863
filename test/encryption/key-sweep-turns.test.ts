import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { sealedVersion } from '../../src/encryption/keyring.js'
import { delegatingStore, type Store } from '../../src/store/index.js'

/** A memory store that records how many token puts each write carried. */
function recordingStore() {
  const inner = memoryStore()
  const puts: number[] = []
  const store: Store = delegatingStore(inner, {
    write(batch) {
      const n = batch.ops.filter((op) => op.op === 'token.put').length
      if (n > 0) puts.push(n)
      return inner.write(batch)
    },
  })
  return { store, puts }
}

async function vaultWith(store: Store, tokens: number) {
  const clock = manualClock('2030-01-01T00:00:00Z')
  const service = createService({ store, clock, runner: null, masterKey: randomBytes(32) })
  const tenant = await service.admin.createTenant({ name: 't' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'app',
    type: 'private',
    permissions: ['token:create', 'token:read'],
  })
  const client = service.connect(key)
  const ids: string[] = []
  for (let i = 0; i < tokens; i++) ids.push((await client.tokens.create({ type: 'token', data: i })).id)
  await service.admin.rotateDataKey({ tenantId: tenant.id })
  return { service, tenant, ids }
}

describe('the re-encryption sweep works in bounded turns', () => {
  it('a step of 500 writes its tokens 8 to a write at most, and re-seals every one', async () => {
    const { store, puts } = recordingStore()
    const { service, tenant } = await vaultWith(store, 100)
    puts.length = 0
    const step = await service.admin.reencryptStep({ tenantId: tenant.id, batchSize: 500 })
    expect(step.resealed).toBe(100)
    // 100 tokens: twelve writes of 8 and one of 4 (the bound passes; one more would be a write of 9).
    expect(puts).toEqual([...Array.from({ length: 12 }, () => 8), 4])
    const stored = (await store.dump()).tokens.filter((t) => t.tenant_id === tenant.id)
    expect(stored.map((t) => sealedVersion((t.data as { $sealed: string }).$sealed))).toEqual(
      stored.map(() => 2),
    )
  })

  it('reads the ids of a step 64 at a time', async () => {
    const inner = memoryStore()
    const reads: number[] = []
    const store: Store = delegatingStore(inner, {
      findTokenIds(tenantId, query) {
        reads.push(query.limit)
        return inner.findTokenIds(tenantId, query)
      },
    })
    const { service, tenant } = await vaultWith(store, 150)
    reads.length = 0
    const step = await service.admin.reencryptStep({ tenantId: tenant.id, batchSize: 140 })
    expect(step.resealed).toBe(140)
    // 140 ids: 64, 64, then the 12 the step has left.
    expect(reads).toEqual([64, 64, 12])
    reads.length = 0
    const last = await service.admin.reencryptStep({ tenantId: tenant.id, batchSize: 140 })
    expect(last.resealed).toBe(10)
    // 10 ids left: the first read answers fewer than it asked for, and the walk ends.
    expect(reads).toEqual([64])
  })

  it('writes its re-seals and its place with deferSync, and retires the old version in a synced write after them', async () => {
    const inner = memoryStore()
    const writes: { deferSync: boolean; kinds: string[] }[] = []
    const store: Store = delegatingStore(inner, {
      write(batch) {
        writes.push({ deferSync: batch.deferSync === true, kinds: batch.ops.map((op) => op.op) })
        return inner.write(batch)
      },
    })
    const clock = manualClock('2030-01-01T00:00:00Z')
    const service = createService({ store, clock, runner: null, masterKey: randomBytes(32) })
    const tenant = await service.admin.createTenant({ name: 't' })
    const { key } = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'app',
      type: 'private',
      permissions: ['token:create', 'token:read'],
    })
    const client = service.connect(key)
    for (let i = 0; i < 70; i++) await client.tokens.create({ type: 'token', data: i })
    await service.admin.rotateDataKey({ tenantId: tenant.id })
    // Past twice refreshMs: the pass retires version 1 at its end.
    clock.advance(31_000)
    writes.length = 0
    let steps = 0
    const done = await service.admin.reencrypt({
      tenantId: tenant.id,
      batchSize: 50,
      onProgress: () => steps++,
    })
    expect(done.finished).toBe(true)
    expect(done.versions).toEqual([2])
    expect(steps).toBeGreaterThanOrEqual(2)
    const reseals = writes.filter((w) => w.kinds.includes('token.put'))
    // 70 tokens in steps of 50: 6 writes of 8 and one of 2, then 8, 8 and 4.
    expect(reseals.map((w) => w.deferSync)).toEqual(Array.from({ length: 10 }, () => true))
    const tenantPuts = writes.filter((w) => w.kinds.includes('tenant.put'))
    // The first seal's reservation under version 2, synced (the count never goes back); the place
    // after the first step of 50, deferred; the retirement last, synced.
    expect(tenantPuts.map((w) => w.deferSync)).toEqual([false, true, false])
    expect(writes.indexOf(tenantPuts[2]!)).toBeGreaterThan(writes.indexOf(reseals[9]!))
  })

  it('lets other work run between its chunks (a memory store never leaves the microtask queue)', async () => {
    const { store } = recordingStore()
    const { service, tenant } = await vaultWith(store, 100)
    let turns = 0
    let stepping = true
    const tick = () => {
      turns++
      if (stepping) setImmediate(tick)
    }
    setImmediate(tick)
    await service.admin.reencryptStep({ tenantId: tenant.id, batchSize: 500 })
    stepping = false
    // One turn at least between each two of the 13 chunks.
    expect(turns).toBeGreaterThanOrEqual(12)
  })

  it('re-seals at most 4096 bytes in a turn, each record counted as its sealed payload plus 1536', async () => {
    // Tokens whose sealed payload is 512 base64 characters cost 512 + 1536 = 2048: two fill a turn
    // exactly (the bound passes). Three more bytes of data make it 516 (2052): two would be one
    // past the bound, so each takes a turn of its own.
    const turnsFor = async (extra: number) => {
      const { store } = recordingStore()
      const clock = manualClock('2030-01-01T00:00:00Z')
      const service = createService({ store, clock, runner: null, masterKey: randomBytes(32) })
      const tenant = await service.admin.createTenant({ name: 't' })
      const { key } = await service.admin.createApplication({
        tenantId: tenant.id,
        name: 'app',
        type: 'private',
        permissions: ['token:create', 'token:read', 'token:delete'],
      })
      const client = service.connect(key)
      const payloadOf = async (id: string) => {
        const token = (await store.dump()).tokens.find((t) => t.id === id)!
        return (token.data as { $sealed: string }).$sealed.length
      }
      // The payload of 100 characters of data, then the data that makes it 512 (base64: 3 bytes, 4 characters).
      const probe = await client.tokens.create({ type: 'token', data: 'x'.repeat(100) })
      const length = 100 + ((512 - (await payloadOf(probe.id))) / 4) * 3 + extra
      await client.tokens.delete(probe.id)
      const ids: string[] = []
      for (let i = 0; i < 8; i++)
        ids.push((await client.tokens.create({ type: 'token', data: 'x'.repeat(length) })).id)
      expect(await payloadOf(ids[0]!)).toBe(512 + (extra / 3) * 4)
      await service.admin.rotateDataKey({ tenantId: tenant.id })
      let turns = 0
      let stepping = true
      const tick = () => {
        turns++
        if (stepping) setImmediate(tick)
      }
      setImmediate(tick)
      const step = await service.admin.reencryptStep({ tenantId: tenant.id, batchSize: 500 })
      stepping = false
      expect(step.resealed).toBe(8)
      return turns
    }
    // 8 tokens of 2048: 4 turns of two, the write's own turn and the first read's (a step begins
    // with a turn of its own; a tick may run before the step).
    const exact = await turnsFor(0)
    expect(exact).toBeGreaterThanOrEqual(6)
    expect(exact).toBeLessThanOrEqual(7)
    // 8 tokens of 2052: 8 turns of one, the write's and the read's.
    expect(await turnsFor(3)).toBeGreaterThanOrEqual(10)
  })
})

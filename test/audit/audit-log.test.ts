import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, ServiceError } from '../../entry/index.js'
import type { LogEntry } from '../../src/kernel/types.js'
import type { Store } from '../../src/store/contract.js'
import { delegatingStore } from '../../src/store/delegate.js'

/** A service on a memory store (`raw`: the store itself, below the service, for tampering). */
async function setup(raw: Store = memoryStore()) {
  const clock = manualClock(new Date('2030-01-01T00:00:00.000Z'))
  const service = createService({ store: raw, clock, runner: null })
  const tenant = await service.admin.createTenant({ name: 'acme' })
  const other = await service.admin.createTenant({ name: 'other' })
  const app = async (tenantId: string, type: 'private' | 'management', permissions: string[]) =>
    (await service.admin.createApplication({ tenantId, name: type, type, permissions: permissions as never }))
      .key
  const privateKey = await app(tenant.id, 'private', [
    'token:create',
    'token:read',
    'token:update',
    'token:delete',
  ])
  const managementKey = await app(tenant.id, 'management', ['log:read'])
  const otherKey = await app(other.id, 'private', ['token:create', 'token:read'])
  return {
    raw,
    clock,
    service,
    tenant,
    other,
    client: service.connect(privateKey, { requestId: 'req-1' }),
    logs: service.connect(managementKey).logs,
    otherClient: service.connect(otherKey),
  }
}

const entriesOf = (raw: Store, tenantId: string) => raw.listLogs(tenantId, { order: 'chain', limit: 10_000 })

describe('audit log entries', () => {
  it('logs every write in its own write, and each read before its answer, with actor and request id', async () => {
    const { raw, client, tenant, service } = await setup()
    const t = await client.tokens.create({ type: 'token', data: 'x' })
    await client.tokens.get(t.id)
    await client.tokens.update(t.id, { metadata: { a: 'b' } })
    await client.tokens.delete(t.id)
    const mine = (await entriesOf(raw, tenant.id)).filter((e) => e.entity_type === 'token')
    expect(mine.map((e) => [e.operation, e.entity_id, e.actor_type, e.request_id, e.outcome])).toEqual(
      expect.arrayContaining([
        ['create', t.id, 'application', 'req-1', 'success'],
        ['read', t.id, 'application', 'req-1', 'success'],
        ['update', t.id, 'application', 'req-1', 'success'],
        ['delete', t.id, 'application', 'req-1', 'success'],
      ]),
    )
    expect(mine).toHaveLength(4)
    expect(await service.admin.verifyLogs({ tenantId: tenant.id })).toMatchObject({ ok: true })
  })

  it('logs a refused call with its outcome, and no entry of a write that did not land', async () => {
    const { raw, client, tenant } = await setup()
    await expect(client.tokens.get('00000000-0000-0000-0000-000000000000')).rejects.toThrow(ServiceError)
    const [entry] = (await entriesOf(raw, tenant.id)).filter((e) => e.entity_type === 'token')
    expect(entry).toMatchObject({ operation: 'read', outcome: 'not_found' })
  })

  it('lands a write and its entry together or not at all', async () => {
    let fail = false
    const inner = memoryStore()
    const flaky = delegatingStore(inner, {
      write: async (batch) => {
        if (fail) throw new Error('disk gone')
        return inner.write(batch)
      },
    })
    const { client, tenant } = await setup(flaky)
    fail = true
    await expect(client.tokens.create({ type: 'token', data: 'x' })).rejects.toThrow()
    fail = false
    const dump = await inner.dump()
    expect(dump.tokens.filter((t) => t.tenant_id === tenant.id)).toHaveLength(0)
    expect((await entriesOf(inner, tenant.id)).filter((e) => e.entity_type === 'token')).toHaveLength(0)
  })

  it('answers no data when the read entry cannot be committed', async () => {
    let failLogs = false
    const inner = memoryStore()
    const store = delegatingStore(inner, {
      write: async (batch) => {
        if (failLogs && batch.ops.every((op) => op.op === 'log.put')) throw new Error('log disk gone')
        return inner.write(batch)
      },
    })
    const { client } = await setup(store)
    const t = await client.tokens.create({ type: 'token', data: 'x' })
    failLogs = true
    await expect(client.tokens.get(t.id)).rejects.toThrow('log disk gone')
  })

  it("fails only its own tenant's calls when the store refuses one tenant's entries in a group commit", async () => {
    let refuse: string | undefined
    const inner = memoryStore()
    const store = delegatingStore(inner, {
      write: async (batch) => {
        if (batch.ops.some((op) => op.op === 'log.put' && op.entry.tenant_id === refuse))
          throw new Error('key too large')
        return inner.write(batch)
      },
    })
    const { client, otherClient, other, tenant, service } = await setup(store)
    const mine = await client.tokens.create({ type: 'token', data: 'x' })
    const theirs = await otherClient.tokens.create({ type: 'token', data: 'y' })
    refuse = other.id
    // Both reads' entries wait for the same group commit.
    const [a, b] = await Promise.allSettled([client.tokens.get(mine.id), otherClient.tokens.get(theirs.id)])
    expect(a.status).toBe('fulfilled')
    expect(b.status).toBe('rejected')
    expect(String((b as PromiseRejectedResult).reason)).toContain('key too large')
    // Its entry landed, with no gap in its chain: the log still verifies.
    const read = (await entriesOf(store, tenant.id)).filter((e) => e.message.startsWith('token.get'))
    expect(read.map((e) => e.entity_id)).toEqual([mine.id])
    expect(await service.admin.verifyLogs({ tenantId: tenant.id })).toMatchObject({ ok: true })
    refuse = undefined
    await otherClient.tokens.get(theirs.id)
    expect(await service.admin.verifyLogs({ tenantId: other.id })).toMatchObject({ ok: true })
  })

  it('never holds token data, masks, keys, nonces or configuration values', async () => {
    const { raw, client, tenant, service } = await setup()
    const canary = 'CANARY-7f3a9'
    const t = await client.tokens.create({ type: 'token', data: { secret: canary }, mask: `${canary}-mask` })
    await client.tokens.get(t.id)
    await client.tokens.update(t.id, { data: `${canary}-2` })
    const { key } = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'x',
      type: 'private',
      permissions: ['token:read'],
    })
    await service.connect(key).tokens.get(t.id)
    const text = JSON.stringify(await entriesOf(raw, tenant.id))
    expect(text).not.toContain(canary)
    expect(text).not.toContain(key)
  })

  it('never takes a body for an id: a string body, refused or answered, is not an entity id', async () => {
    const { raw, client, tenant, service } = await setup()
    const canary = '4242424242424242-CANARY-b0d7'
    const { key } = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'reader',
      type: 'private',
      permissions: ['token:read'],
    })
    const reader = service.connect(key)
    // Refused (no token:create), then answered (a detokenize of a string is that string).
    await expect(reader.tokens.tokenize(canary as never)).rejects.toThrow(ServiceError)
    await expect(client.tokens.detokenize(`${canary}-d` as never)).resolves.toBe(`${canary}-d`)
    const t = await client.tokens.create({ type: 'token', data: 'x' })
    await expect(client.tokens.update(t.id, `${canary}-u` as never)).rejects.toThrow(ServiceError)
    const entries = await entriesOf(raw, tenant.id)
    expect(JSON.stringify(entries)).not.toContain('CANARY-b0d7')
    // The refused calls are logged, without an entity; the update names its token (its path id).
    expect(entries.filter((e) => e.message.startsWith('token.tokenize: refused'))).toHaveLength(1)
    const update = entries.find((e) => e.message.startsWith('token.update: refused'))
    expect(update?.entity_id).toBe(t.id)
  })

  it("never takes an id from an answer the caller shaped: a detokenize of {id: '{{ token }}'} logs the token read, not its data", async () => {
    const { raw, service, tenant } = await setup()
    const permissions = ['token:create', 'token:read'] as const
    const rules = [
      {
        description: 'all',
        priority: 1,
        container: '/',
        transform: 'reveal' as const,
        permissions: [...permissions],
      },
    ]
    const made = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'revealer',
      type: 'private',
      rules,
    })
    const client = service.connect(made.key)
    const card = await client.tokens.create({ type: 'token', data: '4929111122223333' })
    const long = await client.tokens.create({ type: 'token', data: 'z'.repeat(3000) })
    await expect(client.tokens.detokenize({ id: `{{ ${card.id} }}` } as never)).resolves.toEqual({
      id: '4929111122223333',
    })
    await expect(client.tokens.detokenize({ id: `{{ ${long.id} }}` } as never)).resolves.toEqual({
      id: 'z'.repeat(3000),
    })
    const entries = await entriesOf(raw, tenant.id)
    expect(JSON.stringify(entries)).not.toContain('4929111122223333')
    expect(JSON.stringify(entries)).not.toContain('zzzz')
    const detokenized = entries.filter((e) => e.message.startsWith('token.detokenize'))
    expect(detokenized.map((e) => [e.entity_id, e.message])).toEqual([
      [card.id, 'token.detokenize: answered revealed'],
      [long.id, 'token.detokenize: answered revealed'],
    ])
  })

  it("numbers a tenant's entry ids on their own: another tenant's calls in between move nothing", async () => {
    const { raw, client, otherClient, tenant } = await setup()
    await client.tokens.create({ type: 'token', data: 'a' })
    for (let i = 0; i < 5; i++) await otherClient.tokens.create({ type: 'token', data: i })
    await client.tokens.create({ type: 'token', data: 'b' })
    const numbers = (await entriesOf(raw, tenant.id))
      .filter((e) => e.entity_type === 'token')
      .map((e) => Number(e.id.slice(e.id.indexOf(':') + 1)))
    expect(numbers).toHaveLength(2)
    expect(numbers[1]! - numbers[0]!).toBe(1)
  })

  it('keeps a path id of up to 200 characters, the longest an id can be, and not one of 201', async () => {
    const { raw, client, tenant } = await setup()
    for (const length of [200, 201]) await expect(client.tokens.get('a'.repeat(length))).rejects.toThrow()
    const named = (await entriesOf(raw, tenant.id)).filter((e) => e.message.startsWith('token.get: refused'))
    expect(named.map((e) => e.entity_id?.length)).toEqual([200, undefined])
  })
})

/** `run`'s result, and how many turns the event loop made while it ran. */
async function turnsDuring<T>(run: () => Promise<T>): Promise<{ result: T; turns: number }> {
  let turns = 0
  let done = false
  const tick = () => {
    if (done) return
    turns++
    setImmediate(tick)
  }
  setImmediate(tick)
  const result = await run()
  done = true
  return { result, turns }
}

describe('long reads of the log take turns', () => {
  it('verification and a deep page let the event loop turn every 250 entries', async () => {
    const { client, logs, service, tenant } = await setup()
    for (let i = 0; i < 1200; i += 100)
      await Promise.all(
        Array.from({ length: 100 }, (_, j) => client.tokens.create({ type: 'token', data: i + j })),
      )
    const verified = await turnsDuring(() => service.admin.verifyLogs({ tenantId: tenant.id }))
    expect(verified.result).toMatchObject({ ok: true })
    expect(verified.turns).toBeGreaterThanOrEqual(4)
    // Page 11 of 100 walks the 1 000 entries before it: 4 reads of 250.
    const deep = await turnsDuring(() => logs.list({ entity_type: 'token', size: 100, page: 11 }))
    expect(deep.result.data).toHaveLength(100)
    expect(deep.turns).toBeGreaterThanOrEqual(3)
  })
})

describe('GET /logs (client.logs)', () => {
  it('pages newest first by keyset, filters by entity and date, and needs log:read', async () => {
    const { client, logs, clock } = await setup()
    const ids: string[] = []
    for (let i = 0; i < 5; i++) {
      clock.advance(1000)
      ids.push((await client.tokens.create({ type: 'token', data: i })).id)
    }
    const first = await logs.list({ entity_type: 'token', size: 2 })
    expect(first.data.map((e) => e.entity_id)).toEqual([ids[4], ids[3]])
    expect(first.data[0]).not.toHaveProperty('mac')
    const second = await logs.list({ entity_type: 'token', size: 2, start: first.pagination.next! })
    expect(second.data.map((e) => e.entity_id)).toEqual([ids[2], ids[1]])
    const page3 = await logs.list({ entity_type: 'token', size: 2, page: 3 })
    expect(page3.data.map((e) => e.entity_id)).toEqual([ids[0]])
    const one = await logs.list({ entity_type: 'token', entity_id: ids[2] })
    expect(one.data).toHaveLength(1)
    const dated = await logs.list({
      entity_type: 'token',
      start_date: '2030-01-01T00:00:02.000Z',
      end_date: '2030-01-01T00:00:03.000Z',
    })
    expect(dated.data.map((e) => e.entity_id)).toEqual([ids[2], ids[1]])
    await expect(client.logs.list()).rejects.toMatchObject({ code: 'forbidden' })
    expect((await logs.entityTypes()).map((t) => t.value)).toContain('token')
  })

  it('shows no entry an index filed under another entity or time (a store edited below the service)', async () => {
    const inner = memoryStore()
    // An index that files every token entry under any entity and any time asked for.
    const misfiled = delegatingStore(inner, {
      listLogs: (tenantId, q) =>
        inner.listLogs(
          tenantId,
          q.order === 'chain' ? q : { order: q.order, limit: q.limit, entity_type: 'token' },
        ),
    })
    const { client, logs } = await setup(misfiled)
    const t = await client.tokens.create({ type: 'token', data: 'x' })
    expect((await logs.list({ entity_type: 'token', entity_id: t.id })).data).toHaveLength(1)
    expect((await logs.list({ entity_type: 'token', entity_id: 'tok_elsewhere' })).data).toEqual([])
    expect((await logs.list({ entity_type: 'token', end_date: '2029-12-31T00:00:00.000Z' })).data).toEqual([])
    expect((await logs.list({ entity_type: 'token', start_date: '2030-01-02T00:00:00.000Z' })).data).toEqual(
      [],
    )
  })

  it('walks at most 10000 entries by page number: page × size = 10000 passes, one page more is refused', async () => {
    const { logs } = await setup()
    expect((await logs.list({ page: 101, size: 100 })).data).toEqual([])
    await expect(logs.list({ page: 102, size: 100 })).rejects.toMatchObject({ code: 'validation_failed' })
  })
})

describe('tamper evidence', () => {
  async function logged() {
    const s = await setup()
    for (let i = 0; i < 4; i++) await s.client.tokens.create({ type: 'token', data: i })
    await s.otherClient.tokens.create({ type: 'token', data: 'o' })
    const entries = (await entriesOf(s.raw, s.tenant.id)).filter((e) => e.entity_type === 'token')
    expect(await s.service.admin.verifyLogs({ tenantId: s.tenant.id })).toMatchObject({ ok: true })
    return { ...s, entries }
  }
  const put = (raw: Store, entry: LogEntry) => raw.write({ ops: [{ op: 'log.put', entry }] })

  it('detects a changed message', async () => {
    const { raw, entries, service, tenant } = await logged()
    await put(raw, { ...entries[1]!, message: 'nothing happened' })
    expect(await service.admin.verifyLogs({ tenantId: tenant.id })).toMatchObject({
      ok: false,
      broken: { id: entries[1]!.id, reason: 'mac' },
    })
  })

  it('detects a deleted entry', async () => {
    const { raw, service, tenant } = await logged()
    const all = await raw.listLogs(tenant.id, { order: 'chain', limit: 1000 })
    const victim = all.find((e, i) => all[i + 1]?.lane === e.lane)!
    await raw.write({ ops: [{ op: 'log.delete', tenant_id: tenant.id, id: victim.id }] })
    expect(await service.admin.verifyLogs({ tenantId: tenant.id })).toMatchObject({
      ok: false,
      broken: { reason: 'gap' },
    })
  })

  it('detects two swapped entries', async () => {
    const { raw, service, tenant, entries } = await logged()
    const [a, b] = [entries[0]!, entries[1]!]
    const place = (e: LogEntry) => ({ id: e.id, lane: e.lane, seq: e.seq })
    await put(raw, { ...b, ...place(a) })
    await put(raw, { ...a, ...place(b) })
    expect(await service.admin.verifyLogs({ tenantId: tenant.id })).toMatchObject({
      ok: false,
      broken: { reason: 'mac' },
    })
  })

  it('detects an entry copied from another tenant', async () => {
    const { raw, service, tenant, other } = await logged()
    const [theirs] = await entriesOf(raw, other.id)
    const mine = await raw.listLogs(tenant.id, { order: 'chain', limit: 1000 })
    const last = mine[mine.length - 1]!
    await put(raw, {
      ...theirs!,
      tenant_id: tenant.id,
      lane: last.lane,
      seq: last.seq + 1,
      // The id its writer would number next: in place, so only the MAC tells.
      id: `${last.id.slice(0, -12)}${String(Number(last.id.slice(-12)) + 1).padStart(12, '0')}`,
    })
    expect(await service.admin.verifyLogs({ tenantId: tenant.id })).toMatchObject({
      ok: false,
      broken: { reason: 'mac' },
    })
  })
})

describe('retention', () => {
  it('keeps an entry 365 days old, removes one a millisecond older, and verification still holds', async () => {
    const { raw, client, clock, service, tenant } = await setup()
    const early = await client.tokens.create({ type: 'token', data: 1 })
    clock.advance(1)
    const later = await client.tokens.create({ type: 'token', data: 2 })
    clock.set(new Date('2031-01-01T00:00:00.001Z')) // 365 days after the second create
    await service.admin.sweepLogs()
    const left = (await entriesOf(raw, tenant.id))
      .filter((e) => e.entity_type === 'token')
      .map((e) => e.entity_id)
    expect(left).not.toContain(early.id)
    expect(left).toContain(later.id)
    expect(await service.admin.verifyLogs({ tenantId: tenant.id })).toMatchObject({ ok: true })
  })
})

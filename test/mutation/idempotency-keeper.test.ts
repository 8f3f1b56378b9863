/**
 * The idempotency keeper as docs/http-api.md (Idempotency) and docs/limits.md promise it, each at
 * its boundary: a key is 1–255 characters (anything else is a 400 on `idempotency_key` before
 * anything acts); the first answer is replayed for 24 hours and not a millisecond longer, with no
 * sweep by the host; a tenant holds at most `maxIdempotencyRecordsPerTenant` records (a new key past
 * them answers 429, `Retry-After: 60`, before it acts; kept keys are still answered and requests
 * without a key go on; an expired record or a failed request frees a place); each refusal says why.
 * Manual clock only.
 */
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, type ServiceOptions } from '../../entry/index.js'
import type { FormulaRunner, RunOutcome } from '../../src/kernel/runner.js'
import { keepsAnswer } from '../../src/service/idempotency.js'
import type { Store } from '../../src/store/index.js'
import { failure } from '../core/setup.js'

const DAY = 24 * 60 * 60 * 1000

async function vault(options: Partial<ServiceOptions> = {}, store: Store = memoryStore()) {
  const clock = manualClock('2030-01-01T00:00:00.000Z')
  const service = createService({ store, clock, runner: null, ...options })
  const tenant = await service.admin.createTenant({ name: 't' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'p',
    type: 'private',
    permissions: ['token:create', 'token:read', 'token:update'],
  })
  const tokens = async () => (await store.dump()).tokens.length
  const as = (idempotencyKey?: string) =>
    service.connect(key, idempotencyKey === undefined ? {} : { idempotencyKey })
  return { clock, store, service, tenant, as, tokens }
}

const body = { type: 'token', data: 'idem-data' }

describe('idempotency keys', () => {
  it('a key of 255 characters is used; one of 256, or an empty one, is a 400 on idempotency_key and acts not', async () => {
    const { as, tokens, service } = await vault()
    const longest = 'k'.repeat(255)
    const first = await as(longest).tokens.create(body)
    expect((await as(longest).tokens.create(body)).id).toBe(first.id)
    for (const key of ['k'.repeat(256), '']) {
      const refused = await failure(as(key).tokens.create(body))
      expect([refused.code, refused.issues]).toEqual([
        'validation_failed',
        { idempotency_key: ['must be 1 to 255 characters'] },
      ])
    }
    expect(await tokens()).toBe(1)
    await service.close()
  })

  it('a repeat at 24 hours less 1 ms is answered the first answer; at 24 hours, with no sweep, it acts anew', async () => {
    const { as, clock, tokens, service } = await vault()
    const first = await as('day').tokens.create(body)
    clock.advance(DAY - 1)
    expect((await as('day').tokens.create(body)).id).toBe(first.id)
    // Within the 24 hours the key still refuses another request.
    expect((await failure(as('day').tokens.create({ ...body, data: 'other' }))).code).toBe(
      'validation_failed',
    )
    clock.advance(1)
    const again = await as('day').tokens.create(body)
    expect(again.id).not.toBe(first.id)
    expect(await tokens()).toBe(2)
    // And the new answer is the one kept from then on.
    expect((await as('day').tokens.create(body)).id).toBe(again.id)
    await service.close()
  })

  it('each refusal says why', async () => {
    const { as, service } = await vault()
    await as('k').tokens.create(body)
    const other = await failure(as('k').tokens.create({ ...body, data: 'other' }))
    expect(other.issues).toEqual({
      idempotency_key: ['was used with a different request within the last 24 hours'],
    })
    let deep: unknown = 'leaf'
    for (let i = 0; i < 200; i++) deep = [deep]
    const nested = await failure(as('deep').tokens.detokenize(deep as never))
    expect(nested.issues).toEqual({ body: ['is nested deeper than 128 levels'] })
    await service.close()
  })
})

describe('idempotency records at a bound of 2 per tenant', () => {
  it('a 3rd new key answers 429, Retry-After 60, naming the bound, before it acts; kept keys and keyless requests go on', async () => {
    const { as, tokens, service } = await vault({ maxIdempotencyRecordsPerTenant: 2 })
    const a = await as('a').tokens.create(body)
    await as('b').tokens.create(body)
    const refused = await failure(as('c').tokens.create(body))
    expect([refused.code, refused.retryAfterSec]).toEqual(['too_many_requests', 60])
    expect(refused.message).toContain('2 idempotency records')
    expect(await tokens()).toBe(2)
    expect((await as('a').tokens.create(body)).id).toBe(a.id)
    await as().tokens.create(body)
    expect(await tokens()).toBe(3)
    await service.close()
  })

  it('an expired record frees its place with no sweep by the host; a live one does not', async () => {
    const { as, clock, store, tenant, service } = await vault({ maxIdempotencyRecordsPerTenant: 2 })
    await as('a').tokens.create(body)
    clock.advance(1000)
    await as('b').tokens.create(body)
    clock.advance(DAY - 1000)
    // 'a' has expired, 'b' has a second left: one place frees, no more.
    await as('c').tokens.create(body)
    expect((await failure(as('d').tokens.create(body))).code).toBe('too_many_requests')
    expect(await store.countRecords(tenant.id, 'idempotency')).toBe(2)
    await service.close()
  })

  it('a key whose request failed holds no place; a record replaced after 24 hours adds none', async () => {
    const { as, clock, service } = await vault({ maxIdempotencyRecordsPerTenant: 1 })
    const failed = await failure(as('a').tokens.update('6f1a3c6e-0000-4000-8000-000000000001', { data: 'x' }))
    expect(failed.code).toBe('not_found')
    const b = await as('b').tokens.create(body)
    clock.advance(DAY)
    // 'b' expired: its repeat replaces its record, at the bound, and acts anew.
    expect((await as('b').tokens.create(body)).id).not.toBe(b.id)
    await service.close()
  })

  it('a repeat taking over a key whose lease ran out adds no record: at the bound it acts, not 429', async () => {
    let calls = 0
    let release = () => {}
    let entered = () => {}
    const running = new Promise<void>((resolve) => (entered = resolve))
    const runner: FormulaRunner = {
      check: async () => null,
      async run(): Promise<RunOutcome> {
        calls++
        if (calls === 1) {
          entered()
          await new Promise<void>((resolve) => (release = resolve))
        }
        return { ok: true, value: { raw: { call: calls } }, logs: [] }
      },
      close: async () => {},
    }
    const clock = manualClock('2030-01-01T00:00:00.000Z')
    const service = createService({ store: memoryStore(), clock, runner, maxIdempotencyRecordsPerTenant: 1 })
    const tenant = await service.admin.createTenant({ name: 't' })
    const app = (type: 'private' | 'management', permissions: ['reactor:create'] | ['token:use']) =>
      service.admin.createApplication({ tenantId: tenant.id, name: type, type, permissions })
    const admin = await app('management', ['reactor:create'])
    const user = await app('private', ['token:use'])
    const reactor = await service.connect(admin.key).reactors.create({ name: 'r', code: 'x' })
    const client = service.connect(user.key, { idempotencyKey: 'held' })
    const stuck = client.reactors.react(reactor.id, {})
    await running
    const busy = await failure(client.reactors.react(reactor.id, {}))
    expect([busy.code, busy.message]).toEqual([
      'conflict',
      'a request with this idempotency key is in progress',
    ])
    clock.advance(60_000)
    expect((await client.reactors.react(reactor.id, {})).raw).toEqual({ call: 2 })
    release()
    await stuck
    await service.close()
  })
})

describe('concurrent and stale requests on one key', () => {
  /** A memory store whose claim of a new key (the `idempotency.absent` write) first does `race`. */
  function racedStore(race: (base: Store, batch: Parameters<Store['write']>[0]) => Promise<'lose' | 'go'>) {
    const base = memoryStore()
    let claims = 0
    const store: Store = {
      ...base,
      async write(batch) {
        const check = batch.checks?.[0]
        if (check?.check !== 'idempotency.absent') return base.write(batch)
        claims++
        return (await race(base, batch)) === 'lose' ? { ok: false, failed: check } : base.write(batch)
      },
    }
    return { store, claims: () => claims }
  }

  it('another request claims the key just before this one: this one answers 409 and acts not', async () => {
    const { store } = racedStore(async (base, batch) => {
      const op = batch.ops[0]
      if (op?.op === 'idempotency.put')
        await base.write({ ops: [{ ...op, record: { ...op.record, claim: 'other' } }] })
      return 'go'
    })
    const { as, tokens, service } = await vault({}, store)
    const busy = await failure(as('raced').tokens.create(body))
    expect([busy.code, busy.message]).toEqual([
      'conflict',
      'a request with this idempotency key is in progress',
    ])
    expect(await tokens()).toBe(0)
    await service.close()
  })

  it('the request that beat this one to the key failed meanwhile (keeping nothing): this one reads again and acts once', async () => {
    let lost = false
    const { store, claims } = racedStore(async () => {
      if (lost) return 'go'
      lost = true
      return 'lose'
    })
    const { as, tokens, service } = await vault({}, store)
    const made = await as('again').tokens.create(body)
    expect(await tokens()).toBe(1)
    expect(claims()).toBe(2)
    expect((await as('again').tokens.create(body)).id).toBe(made.id)
    await service.close()
  })

  it('a key lost to other requests three times in a row answers 409 after the third try, acting not', async () => {
    const { store, claims } = racedStore(async () => (claims() <= 10 ? 'lose' : 'go'))
    const { as, tokens, service } = await vault({}, store)
    const busy = await failure(as('contended').tokens.create(body))
    expect([busy.code, busy.message]).toEqual([
      'conflict',
      'a request with this idempotency key is in progress',
    ])
    expect(claims()).toBe(3)
    expect(await tokens()).toBe(0)
    await service.close()
  })

  /** Reactor calls: the first waits until released and then answers `{ call: 1 }` or fails. */
  async function staleFirst(outcome: 'answers' | 'fails') {
    let calls = 0
    let release = () => {}
    let entered = () => {}
    const running = new Promise<void>((resolve) => (entered = resolve))
    const runner: FormulaRunner = {
      check: async () => null,
      async run(): Promise<RunOutcome> {
        const call = ++calls
        if (call === 1) {
          entered()
          await new Promise<void>((resolve) => (release = resolve))
          if (outcome === 'fails') return { ok: false, kind: 'thrown', message: 'the first failed late' }
        }
        return { ok: true, value: { raw: { call } }, logs: [] }
      },
      close: async () => {},
    }
    const clock = manualClock('2030-01-01T00:00:00.000Z')
    const service = createService({ store: memoryStore(), clock, runner })
    const tenant = await service.admin.createTenant({ name: 't' })
    const app = (type: 'private' | 'management', permissions: ['reactor:create'] | ['token:use']) =>
      service.admin.createApplication({ tenantId: tenant.id, name: type, type, permissions })
    const admin = await app('management', ['reactor:create'])
    const user = await app('private', ['token:use'])
    const reactor = await service.connect(admin.key).reactors.create({ name: 'r', code: 'x' })
    const client = service.connect(user.key, { idempotencyKey: 'stale' })
    const react = () => client.reactors.react(reactor.id, {})
    const stuck = react().then(
      (answer) => answer.raw,
      (error: unknown) => error,
    )
    await running
    clock.advance(60_000)
    // The lease ran out: a repeat takes the key over and its answer is kept.
    expect((await react()).raw).toEqual({ call: 2 })
    release()
    return { stuck, react, calls: () => calls, service }
  }

  it('the first request, its lease run out and its key taken over, answering late does not replace the kept answer', async () => {
    const { stuck, react, calls, service } = await staleFirst('answers')
    expect(await stuck).toEqual({ call: 1 })
    expect((await react()).raw).toEqual({ call: 2 })
    expect(calls()).toBe(2)
    await service.close()
  })

  it('the first request, its lease run out and its key taken over, failing late does not drop the kept answer', async () => {
    const { stuck, react, calls, service } = await staleFirst('fails')
    expect(await stuck).toBeInstanceOf(Error)
    expect((await react()).raw).toEqual({ call: 2 })
    expect(calls()).toBe(2)
    await service.close()
  })
})

describe('the idempotency record bound is per tenant', () => {
  it("another tenant's expired record swept at this tenant's bound frees no place of this one", async () => {
    const { as, clock, service, store } = await vault({ maxIdempotencyRecordsPerTenant: 1 })
    const other = await service.admin.createTenant({ name: 'other' })
    const { key } = await service.admin.createApplication({
      tenantId: other.id,
      name: 'o',
      type: 'private',
      permissions: ['token:create'],
    })
    await service.connect(key, { idempotencyKey: 'o' }).tokens.create(body)
    clock.advance(1000)
    await as('a').tokens.create(body)
    clock.advance(DAY - 1000)
    expect((await failure(as('b').tokens.create(body))).code).toBe('too_many_requests')
    // The other tenant's record was the one due: it is gone, this tenant's is kept.
    expect(await store.countRecords(other.id, 'idempotency')).toBe(0)
    await service.close()
  })
})

describe('keepsAnswer: which first answers are kept for replay', () => {
  it('no answer at all, and an answer of up to 65 536 characters, are kept; one of 65 537 is not', () => {
    expect(keepsAnswer(undefined)).toBe(true)
    expect(keepsAnswer('a'.repeat(65_536))).toBe(true)
    expect(keepsAnswer('a'.repeat(65_537))).toBe(false)
  })
})

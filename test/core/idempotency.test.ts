/**
 * Idempotency as the reference documents it (developers.basistheory.com docs/api/idempotency.mdx):
 * the first successful answer to a key is kept for 24 hours and every repeat of the same request
 * answers it without acting again; a failed request keeps nothing; a repeat while the first is
 * still processing answers 409; the same key with another request answers 400. Driven by the manual
 * clock; the kept answers are sealed at rest.
 */
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, type Permission } from '../../entry/index.js'
import type { FormulaRunner, RunOutcome } from '../../src/kernel/runner.js'
import { ALL_TOKEN, failure, setup } from './setup.js'

const body = { type: 'token', data: { secret: 'idem-4242-secret' } }

describe('idempotency (docs/api/idempotency.mdx)', () => {
  it('a repeat of the same request answers the first answer and acts once; another key acts again', async () => {
    const { service, full, store } = await setup()
    const once = service.connect(full.key, { idempotencyKey: 'aa5d3379-6385-4ef4-9fdb-ca1341572153' })
    const first = await once.tokens.create(body)
    const again = await once.tokens.create(body)
    expect(again).toEqual(first)
    expect((await store.dump()).tokens).toHaveLength(1)
    const other = await service.connect(full.key, { idempotencyKey: 'another' }).tokens.create(body)
    expect(other.id).not.toBe(first.id)
    expect((await store.dump()).tokens).toHaveLength(2)
  })

  it('the same key with a different request answers 400 and changes nothing', async () => {
    const { service, full, store } = await setup()
    const client = service.connect(full.key, { idempotencyKey: 'k1' })
    await client.tokens.create(body)
    const before = await store.dump()
    const error = await failure(client.tokens.create({ ...body, data: 'other' }))
    expect(error.code).toBe('validation_failed')
    expect(error.issues).toHaveProperty(['idempotency_key'])
    // Another operation with the key is another request too.
    expect((await failure(client.tokens.delete('x'))).code).toBe('validation_failed')
    expect(await store.dump()).toEqual(before)
  })

  it('keys are per application: another application with the same key acts on its own', async () => {
    const { service, full, keyFor, store } = await setup()
    const other = await keyFor('private', ALL_TOKEN)
    const a = await service.connect(full.key, { idempotencyKey: 'shared' }).tokens.create(body)
    const b = await service.connect(other.key, { idempotencyKey: 'shared' }).tokens.create(body)
    expect(b.id).not.toBe(a.id)
    expect((await store.dump()).tokens).toHaveLength(2)
  })

  it('a failed request keeps nothing: a repeat is processed as a new request', async () => {
    const { service, full } = await setup()
    const client = service.connect(full.key, { idempotencyKey: 'k2' })
    const id = '6f1a3c6e-0000-4000-8000-000000000001'
    const patch = { data: 'changed' }
    expect((await failure(client.tokens.update(id, patch))).code).toBe('not_found')
    await full.client.tokens.create({ ...body, id })
    await client.tokens.update(id, patch)
    expect((await full.client.tokens.get(id)).data).toBe('changed')
  })

  it('after 24 hours the key is forgotten (the sweep deletes the answer) and a repeat acts again', async () => {
    const { service, full, store, clock } = await setup()
    const client = service.connect(full.key, { idempotencyKey: 'k3' })
    const first = await client.tokens.create(body)
    clock.advance(24 * 60 * 60 * 1000 - 1)
    expect((await client.tokens.create(body)).id).toBe(first.id)
    expect((await service.admin.sweep()).idempotency).toBe(0)
    clock.advance(1)
    expect((await service.admin.sweep()).idempotency).toBe(1)
    expect((await store.dump()).idempotency).toEqual([])
    const later = await client.tokens.create(body)
    expect(later.id).not.toBe(first.id)
  })

  it('a repeat while the first is in flight answers 409; the first then completes and is replayed', async () => {
    let release: () => void = () => {}
    const gate = new Promise<void>((resolve) => (release = resolve))
    let entered: () => void = () => {}
    const running = new Promise<void>((resolve) => (entered = resolve))
    const runner: FormulaRunner = {
      check: async () => null,
      async run(_code, request): Promise<RunOutcome> {
        entered()
        await gate
        return { ok: true, value: { raw: request.args }, logs: [] }
      },
      close: async () => {},
    }
    const clock = manualClock('2030-01-01T00:00:00.000Z')
    const service = createService({ store: memoryStore(), clock, runner, idempotencyLeaseMs: 60_000 })
    const tenant = await service.admin.createTenant({ name: 't' })
    const mk = (type: 'private' | 'management', permissions: Permission[]) =>
      service.admin.createApplication({ tenantId: tenant.id, name: type, type, permissions })
    const admin = await mk('management', ['reactor:create'])
    const user = await mk('private', ['token:use'])
    const reactor = await service.connect(admin.key).reactors.create({ name: 'r', code: 'x' })
    const client = service.connect(user.key, { idempotencyKey: 'slow' })
    const first = client.reactors.react(reactor.id, { args: { n: 1 } })
    // The first holds the key (it claims it before it runs) and is running.
    await running
    expect((await failure(client.reactors.react(reactor.id, { args: { n: 1 } }))).code).toBe('conflict')
    release()
    expect((await first).raw).toEqual({ n: 1 })
    expect((await client.reactors.react(reactor.id, { args: { n: 1 } })).raw).toEqual({ n: 1 })
    await service.close()
  })

  it('a pending key whose lease ran out (its request presumed lost) is taken over by a repeat', async () => {
    let calls = 0
    const release: (() => void)[] = []
    let entered: () => void = () => {}
    const running = new Promise<void>((resolve) => (entered = resolve))
    const runner: FormulaRunner = {
      check: async () => null,
      async run(): Promise<RunOutcome> {
        calls++
        if (calls === 1) {
          entered()
          await new Promise<void>((resolve) => release.push(resolve))
        }
        return { ok: true, value: { raw: { call: calls } }, logs: [] }
      },
      close: async () => {},
    }
    const clock = manualClock('2030-01-01T00:00:00.000Z')
    const service = createService({ store: memoryStore(), clock, runner, idempotencyLeaseMs: 60_000 })
    const tenant = await service.admin.createTenant({ name: 't' })
    const admin = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'm',
      type: 'management',
      permissions: ['reactor:create'],
    })
    const user = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'p',
      type: 'private',
      permissions: ['token:use'],
    })
    const reactor = await service.connect(admin.key).reactors.create({ name: 'r', code: 'x' })
    const client = service.connect(user.key, { idempotencyKey: 'lost' })
    const stuck = client.reactors.react(reactor.id, {})
    // The first holds the key (claimed before it runs) and is stuck running.
    await running
    clock.advance(60_000)
    const taken = await client.reactors.react(reactor.id, {})
    expect(taken.raw).toEqual({ call: 2 })
    release[0]!()
    await stuck
    // The answer kept is the one of the request that held the key last.
    expect((await client.reactors.react(reactor.id, {})).raw).toEqual({ call: 2 })
    await service.close()
  })

  it('stores neither the key nor the answer in the clear; an over-long key is refused', async () => {
    const { service, full, store } = await setup()
    const key = 'visible-idempotency-key-123'
    const token = await full.client.tokens.create(body)
    // The kept answer holds the token's data in the clear (this key's reads reveal it).
    const client = service.connect(full.key, { idempotencyKey: key })
    expect((await client.tokens.get(token.id)).data).toEqual(body.data)
    const stored = JSON.stringify((await store.dump()).idempotency)
    expect(stored).toContain('"state":"done"')
    expect(stored).not.toContain(key)
    expect(stored).not.toContain('idem-4242-secret')
    const long = service.connect(full.key, { idempotencyKey: 'x'.repeat(256) })
    expect((await failure(long.tokens.create(body))).issues).toHaveProperty(['idempotency_key'])
  })

  it('keeps an answer of up to 65536 bytes; a longer one is not kept, and its repeat answers 409 without acting again', async () => {
    const { service, full, store } = await setup()
    const at = (key: string) => service.connect(full.key, { idempotencyKey: key })
    // With no expressions, detokenize answers its input: a string of n characters is n + 2 of JSON.
    const fits = 'f'.repeat(65_534)
    expect(await at('fits').tokens.detokenize(fits)).toBe(fits)
    expect(await at('fits').tokens.detokenize(fits)).toBe(fits)
    const over = 'o'.repeat(65_535)
    expect(await at('over').tokens.detokenize(over)).toBe(over)
    const refused = await failure(at('over').tokens.detokenize(over))
    expect(refused.code).toBe('conflict')
    expect(refused.message).toContain('longer than the 65536 bytes kept')
    // Bytes of UTF-8, not characters: 21 844 of 中 (3 bytes each) and `""` fit; one more 中 does not.
    const wide = '中'.repeat(21_844)
    expect(await at('wide').tokens.detokenize(wide)).toBe(wide)
    expect(await at('wide').tokens.detokenize(wide)).toBe(wide)
    const wider = `${wide}中`
    expect(await at('wider').tokens.detokenize(wider)).toBe(wider)
    expect((await failure(at('wider').tokens.detokenize(wider))).code).toBe('conflict')
    const records = (await store.dump()).idempotency
    expect(records.filter((r) => r.answer_not_kept === true)).toHaveLength(2)
    expect(records.filter((r) => r.answer !== undefined)).toHaveLength(2)
    // A write whose answer is too long still acts once: its repeat neither replays nor writes again.
    const big = { type: 'token', data: 'd'.repeat(70_000), mask: '{{ data }}' }
    const once = at('big-create')
    expect((await once.tokens.create(big)).data).toBe(big.data)
    expect((await failure(once.tokens.create(big))).code).toBe('conflict')
    expect((await store.dump()).tokens.filter((t) => t.type === 'token')).toHaveLength(1)
  })

  it('a request nested far too deep is a 400 before it is fingerprinted, not a stack overflow', async () => {
    const { service, full, store } = await setup()
    let deep: unknown = 'leaf'
    for (let i = 0; i < 100_000; i++) deep = [deep]
    const client = service.connect(full.key, { idempotencyKey: 'deep' })
    const error = await failure(client.tokens.detokenize(deep as never))
    expect(error.code).toBe('validation_failed')
    expect(error.issues).toEqual({ body: ['is nested deeper than 128 levels'] })
    expect((await store.dump()).idempotency).toEqual([])
  })
})

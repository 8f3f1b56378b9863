/**
 * The events of calls that write nothing of their own (docs/webhooks.md › Event types): a
 * synchronous react's `reactor.invoked` then `reactor.completed` or `reactor.failed`, an
 * asynchronous react's `reactor.invoked` when accepted and its end when run, a proxy call's
 * `proxy.invoked`, a read by id's `token.read`; and an application key's `application.key.created`
 * / `.deleted`. Each is in the outbox before the call answers; none holds a formula's message,
 * arguments, result, a proxied body, header or query, or a key. A tenant at its pending bound is
 * refused before a react or a proxy call acts, never after.
 */
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, type ServiceOptions } from '../../entry/index.js'
import type { FormulaRunner, Permission, RunOutcome } from '../../src/kernel/index.js'
import type { WriteBatch } from '../../src/store/index.js'
import { SENT_EVENT_TYPES } from '../../src/webhooks/index.js'
import { HooksForReads } from '../../src/webhooks/runtime.js'
import { createTestVault } from '../../testing/index.js'

const RECEIVER = 'https://hooks.example.test'
const PROCESSOR = 'https://api.processor.test'
const CANARY = 'canary-4242424242424242'

/** The types these tests are about (the others, `reactor.created` and such, come from their set-up). */
const CALL_MADE = /^(reactor\.(invoked|completed|failed)|proxy\.invoked|application\.key\.)/

type Got = { type: string; data: Record<string, Record<string, unknown>> }

/** A stand-in runner (these tests are about events, not formulas): `answer` decides each run. */
function runnerOf(answer: (args: Record<string, unknown>) => RunOutcome): FormulaRunner {
  return {
    check: async () => null,
    run: async (_code, request) => answer(request.args as Record<string, unknown>),
    close: async () => {},
  }
}

const echo = runnerOf((args) => ({ ok: true, value: { raw: { seen: args['card'] ?? null } }, logs: [] }))

async function subscribed(options: { runner?: FormulaRunner; events?: string[] } = {}) {
  const v = await createTestVault({
    runner: options.runner ?? echo,
    destinations: {
      [RECEIVER]: () => new Response(null, { status: 200 }),
      [PROCESSOR]: () => new Response('{"charged":true}', { status: 202 }),
    },
  })
  const management = v.client('management')
  await management.webhooks.create({
    name: 'all',
    url: `${RECEIVER}/in`,
    events: options.events ?? [...SENT_EVENT_TYPES],
  })
  const reactor = await management.reactors.create({ name: 'echo', code: 'module.exports = async (r) => r' })
  const app = await management.applications.create({
    name: 'user',
    type: 'private',
    permissions: ['token:use', 'token:create', 'token:read'],
  })
  const user = v.service.connect(app.key!)
  /** Types of the deliveries waiting in the outbox (written, not yet sent). */
  const pending = async () =>
    (await v.webhooks.deliveries())
      .filter((d) => d.kind === 'webhook' && d.state === 'pending')
      .map((d) => d.event_type)
  const events = async (): Promise<Got[]> => {
    await v.webhooks.deliverDue()
    return v.proxy.received(RECEIVER).map((r) => JSON.parse(r.body).event as Got)
  }
  const of = (got: Got[], prefix: string) =>
    got.filter((e) => e.type.startsWith(prefix) && CALL_MADE.test(e.type))
  return { v, reactor, user, app, pending, events, of }
}

/**
 * A service over a memory store this test also reaches directly (as another process would), on a
 * manual clock, with a management key and a user key of its one tenant.
 */
async function direct(options: Partial<Omit<ServiceOptions, 'store' | 'clock'>> = {}, store = memoryStore()) {
  const clock = manualClock('2030-01-01T00:00:00.000Z')
  const svc = createService({
    store,
    clock,
    runner: null,
    egress: [RECEIVER],
    webhookDelivery: 'manual',
    ...options,
  })
  const tenant = await svc.admin.createTenant({ name: 't' })
  const app = async (type: 'management' | 'private', permissions: Permission[]) =>
    svc.connect(
      (await svc.admin.createApplication({ tenantId: tenant.id, name: type, type, permissions })).key,
    )
  const management = await app('management', ['webhook:create', 'reactor:create'])
  const user = await app('private', ['token:create', 'token:read', 'token:search', 'token:use'])
  /** A webhook taking `events` written to the store directly: this service learns of it only by reading its webhooks again. */
  const hookedElsewhere = (events: string[]) =>
    store.write({
      ops: [
        {
          op: 'webhook.put',
          webhook: {
            id: 'w1',
            tenant_id: tenant.id,
            status: 'enabled',
            name: 'r',
            url: `${RECEIVER}/in`,
            events,
            created_by: 'x',
            created_at: clock.now().toISOString(),
          },
        },
      ],
    })
  return { svc, store, clock, tenant, management, user, hookedElsewhere }
}

describe('reactor events', () => {
  it('a react: reactor.invoked and reactor.completed, in the outbox before it answers', async () => {
    const { reactor, user, app, pending, events, of } = await subscribed()
    const card = await user.tokens.create({ type: 'token', data: CANARY })
    await user.reactors.react(reactor.id, { args: { card: `{{ ${card.id} }}` } })
    expect((await pending()).filter((t) => /^reactor\.(invoked|completed|failed)$/.test(t ?? ''))).toEqual([
      'reactor.invoked',
      'reactor.completed',
    ])
    const got = of(await events(), 'reactor.')
    const invoked = got.find((e) => e.type === 'reactor.invoked')!
    const completed = got.find((e) => e.type === 'reactor.completed')!
    expect(invoked.data).toEqual({
      actor: { id: app.id, type: 'application' },
      reactor: { id: reactor.id, name: 'echo' },
      request: { invocation_type: 'sync' },
    })
    expect(completed.data).toMatchObject({
      elapsed_ms: 0,
      reactor: { id: reactor.id, name: 'echo' },
      request: { invocation_type: 'sync' },
    })
    expect(completed.data).not.toHaveProperty('error')
    expect(JSON.stringify(got)).not.toContain(CANARY)
  })

  it('a formula that throws: reactor.failed in the vault words, never its message', async () => {
    const thrower = runnerOf(() => ({
      ok: false,
      kind: 'thrown',
      message: `bad ${CANARY}`,
      status: 402,
      logs: [],
    }))
    const { reactor, user, events, of } = await subscribed({ runner: thrower })
    await expect(user.reactors.react(reactor.id, { args: {} })).rejects.toMatchObject({ status: 402 })
    const got = of(await events(), 'reactor.')
    expect(got.map((e) => e.type).sort()).toEqual(['reactor.failed', 'reactor.invoked'])
    const failed = got.find((e) => e.type === 'reactor.failed')!
    expect(failed.data['error']).toBe('the reactor formula threw an error (status 402)')
    expect(JSON.stringify(got)).not.toContain(CANARY)
  })

  it('a react refused before it runs (no token:use, unknown reactor, bad args) makes no event', async () => {
    const { v, reactor, user, pending } = await subscribed()
    const reader = await v.client('management').applications.create({
      name: 'reader',
      type: 'private',
      permissions: ['token:read'],
    })
    const before = (await pending()).length
    await expect(v.service.connect(reader.key!).reactors.react(reactor.id, {})).rejects.toMatchObject({
      code: 'forbidden',
    })
    await expect(user.reactors.react('no-such-reactor', {})).rejects.toMatchObject({ code: 'not_found' })
    await expect(user.reactors.react(reactor.id, { args: { card: '{{ no-such-token }}' } })).rejects.toThrow()
    expect((await pending()).length).toBe(before)
  })

  it('an asynchronous react: reactor.invoked with its request id when accepted, reactor.completed when run', async () => {
    const { reactor, user, pending, events, of } = await subscribed()
    const { asyncReactorRequestId: id } = await user.reactors.reactAsync(reactor.id, { args: {} })
    expect((await pending()).filter((t) => /^reactor\.(invoked|completed|failed)$/.test(t ?? ''))).toEqual([
      'reactor.invoked',
    ])
    const got = of(await events(), 'reactor.')
    expect(got.map((e) => e.type).sort()).toEqual(['reactor.completed', 'reactor.invoked'])
    for (const e of got) expect(e.data['request']).toEqual({ id, invocation_type: 'async' })
  })

  it('an asynchronous react that fails: reactor.failed with its request id, never the formula message', async () => {
    const thrower = runnerOf(() => ({
      ok: false,
      kind: 'thrown',
      message: `bad ${CANARY}`,
      status: 400,
      logs: [],
    }))
    const { reactor, user, events, of } = await subscribed({ runner: thrower })
    const { asyncReactorRequestId: id } = await user.reactors.reactAsync(reactor.id, { args: {} })
    const got = of(await events(), 'reactor.')
    const failed = got.find((e) => e.type === 'reactor.failed')!
    expect(failed.data).toMatchObject({
      error: 'the reactor formula threw an error (status 400)',
      request: { id, invocation_type: 'async' },
    })
    expect(JSON.stringify(got)).not.toContain(CANARY)
  })

  it('a react or a proxy call of a tenant at its pending bound is refused (429) before it acts; one admitted writes its events', async () => {
    let runs = 0
    const counting = runnerOf(() => {
      runs++
      return { ok: true, value: { raw: {} }, logs: [] }
    })
    let sent = 0
    const {
      svc: service,
      tenant,
      management,
      user,
    } = await direct({
      runner: counting,
      egress: [RECEIVER, PROCESSOR],
      egressClient: async () => {
        sent++
        return { status: 200, statusText: 'OK', url: PROCESSOR, redirected: false, headers: {}, body: '' }
      },
      maxPendingDeliveriesPerTenant: 3,
    })
    const types = ['reactor.invoked', 'reactor.completed', 'proxy.invoked']
    await management.webhooks.create({ name: 'r', url: `${RECEIVER}/in`, events: types })
    const reactor = await management.reactors.create({
      name: 'echo',
      code: 'module.exports = async (r) => r',
    })
    const pending = async () =>
      (await service.admin.webhooks.deliveries(tenant.id)).filter((d) => d.state === 'pending').length
    // A bound of 3: the first react's two leave room; the second is admitted at 2 and writes its
    // two (4, past the bound by what was admitted); the third is refused before its formula runs.
    await user.reactors.react(reactor.id, { args: {} })
    await user.reactors.react(reactor.id, { args: {} })
    expect([await pending(), runs]).toEqual([4, 2])
    await expect(user.reactors.react(reactor.id, { args: {} })).rejects.toMatchObject({
      code: 'too_many_requests',
    })
    expect([await pending(), runs]).toEqual([4, 2])
    // A proxy call: refused before anything is sent.
    await expect(
      user.proxy.invoke({ method: 'GET', url: `${PROCESSOR}/x`, headers: {} }),
    ).rejects.toMatchObject({
      code: 'too_many_requests',
    })
    expect([await pending(), sent]).toEqual([4, 0])
    await service.close()
  })

  it("an asynchronous react's reactor.invoked lands in the write that accepts it; the bound counts both", async () => {
    const store = memoryStore()
    const batches: WriteBatch[] = []
    const write = store.write.bind(store)
    store.write = (batch) => {
      batches.push(batch)
      return write(batch)
    }
    const {
      svc: service,
      tenant,
      management,
      user,
    } = await direct({ runner: echo, maxPendingDeliveriesPerTenant: 3 }, store)
    await management.webhooks.create({ name: 'r', url: `${RECEIVER}/in`, events: ['reactor.invoked'] })
    const reactor = await management.reactors.create({
      name: 'echo',
      code: 'module.exports = async (r) => r',
    })
    const pending = async () =>
      (await service.admin.webhooks.deliveries(tenant.id))
        .filter((d) => d.state === 'pending')
        .map((d) => d.kind)
    const { asyncReactorRequestId: id } = await user.reactors.reactAsync(reactor.id, { args: {} })
    const accepting = batches.filter((b) => b.ops.some((op) => op.op === 'outbox.put' && op.entry.id === id))
    expect(accepting).toHaveLength(1)
    const carried = accepting[0]!.ops.flatMap((op) => (op.op === 'outbox.put' ? [op.entry] : []))
    expect(carried.map((e) => [e.kind, e.event_type ?? null])).toEqual([
      ['react', null],
      ['webhook', 'reactor.invoked'],
    ])
    expect(JSON.parse(carried[1]!.body).data).toMatchObject({
      reactor: { id: reactor.id, name: 'echo' },
      request: { id, invocation_type: 'async' },
    })
    // Two pending of 3: the next accept would add two more (its react and its event): refused whole.
    expect(await pending()).toEqual(['react', 'webhook'])
    await expect(user.reactors.reactAsync(reactor.id, { args: {} })).rejects.toMatchObject({
      code: 'too_many_requests',
    })
    expect(await pending()).toEqual(['react', 'webhook'])
    await service.close()
  })

  it("a tenant's webhooks are read for a react's events at most once per 500 ms; one made elsewhere takes them from 500 on, not 499", async () => {
    const store = memoryStore()
    let reads = 0
    const list = store.listWebhooks.bind(store)
    store.listWebhooks = (...args) => {
      reads++
      return list(...args)
    }
    const { svc, clock, tenant, management, user, hookedElsewhere } = await direct({ runner: echo }, store)
    await management.webhooks.create({ name: 't', url: `${RECEIVER}/in`, events: ['token.created'] })
    const reactor = await management.reactors.create({
      name: 'echo',
      code: 'module.exports = async (r) => r',
    })
    reads = 0
    const invoked = async () =>
      (await svc.admin.webhooks.deliveries(tenant.id)).filter((d) => d.event_type === 'reactor.invoked')
        .length
    await user.reactors.react(reactor.id, { args: {} })
    expect(reads).toBe(1)
    await user.reactors.react(reactor.id, { args: {} })
    await user.reactors.react(reactor.id, { args: {} })
    expect(reads).toBe(1)
    await hookedElsewhere(['reactor.invoked'])
    clock.advance(499)
    await user.reactors.react(reactor.id, { args: {} })
    expect([reads, await invoked()]).toEqual([1, 0])
    clock.advance(1)
    await user.reactors.react(reactor.id, { args: {} })
    expect([reads, await invoked()]).toEqual([2, 1])
    await svc.close()
  })

  it('a tenant with no webhook taking them gets none', async () => {
    const { reactor, user, pending } = await subscribed({ events: ['token.created'] })
    await user.reactors.react(reactor.id, { args: {} })
    expect(await pending()).toEqual([])
  })
})

describe('proxy.invoked', () => {
  it('an ephemeral call: the destination method, origin and path and the statuses; never its body, headers or query', async () => {
    const { user, events, of } = await subscribed()
    const card = await user.tokens.create({ type: 'token', data: CANARY })
    const answer = await user.proxy.invoke({
      method: 'POST',
      url: `${PROCESSOR}/charges`,
      query: `card=${CANARY}`,
      headers: { 'content-type': 'application/json', 'x-card': CANARY },
      body: JSON.stringify({ number: `{{ ${card.id} }}` }),
    })
    expect(answer.status).toBe(202)
    const [invoked, ...more] = of(await events(), 'proxy.')
    expect(more).toEqual([])
    expect(invoked!.data).toEqual({
      actor: { id: expect.any(String), type: 'application' },
      destination: {
        request: { method: 'POST', url: `${PROCESSOR}/charges` },
        response: { elapsed_ms: 0, status: 202 },
      },
      proxy: { response: { elapsed_ms: 0, status: 202 }, type: 'ephemeral' },
    })
    expect(JSON.stringify(invoked)).not.toContain(CANARY)
  })

  it('a pre-configured proxy: its id and name; a destination off the allow-list is the call failure', async () => {
    const { v, user, events, of } = await subscribed()
    const made = await v
      .client('management')
      .proxies.create({ name: 'charges', destination_url: `${PROCESSOR}/v1`, configuration: { K: CANARY } })
    await user.proxy.invoke({ method: 'GET', proxy_key: made.key!, path: '/charges' })
    await expect(
      user.proxy.invoke({ method: 'GET', url: 'https://elsewhere.test/x', headers: {} }),
    ).rejects.toMatchObject({ code: 'validation_failed' })
    const got = of(await events(), 'proxy.invoked')
    const named = got.find((e) => e.data['proxy']!['id'] === made.id)!
    expect(named.data['proxy']).toEqual({
      id: made.id,
      name: 'charges',
      response: { elapsed_ms: 0, status: 202 },
      type: 'pre_configured',
    })
    expect(named.data['destination']).toEqual({
      request: { method: 'GET', url: `${PROCESSOR}/v1/charges` },
      response: { elapsed_ms: 0, status: 202 },
    })
    const refused = got.find((e) => e !== named)!
    expect(refused.data['proxy']).toMatchObject({
      response: { error: { status: 400 }, status: 400 },
      type: 'ephemeral',
    })
    expect(refused.data['destination']).toEqual({
      request: { method: 'GET', url: 'https://elsewhere.test/x' },
    })
    expect(JSON.stringify(got)).not.toContain(CANARY)
  })

  it('a request transform that answers by itself: invoked, with its status and no destination answer', async () => {
    const teapot = runnerOf(() => ({ ok: true, value: { custom: { status: 418, body: 'no' } }, logs: [] }))
    const { v, user, events, of } = await subscribed({ runner: teapot })
    const made = await v.client('management').proxies.create({
      name: 'refuses',
      destination_url: PROCESSOR,
      request_transform: { code: 'module.exports = async () => { throw new Error() }' },
    })
    const answer = await user.proxy.invoke({ method: 'POST', proxy_key: made.key!, path: '/x', body: '{}' })
    expect(answer.status).toBe(418)
    expect(v.proxy.received(PROCESSOR)).toEqual([])
    const [invoked] = of(await events(), 'proxy.invoked')
    expect(invoked!.data['proxy']).toMatchObject({ id: made.id, response: { status: 418 } })
    expect(invoked!.data['destination']).toEqual({ request: { method: 'POST', url: `${PROCESSOR}/x` } })
  })

  it('a call without an API key (require_auth: false): actor proxy, its id', async () => {
    const { v, events, of } = await subscribed()
    const open = await v
      .client('management')
      .proxies.create({ name: 'inbound', destination_url: PROCESSOR, require_auth: false })
    const answer = await v.http(
      new Request(`http://v/proxy/hook?card=${CANARY}`, {
        method: 'POST',
        headers: { 'SVC-PROXY-KEY': open.key!, 'content-type': 'application/json' },
        body: JSON.stringify({ number: CANARY }),
      }),
    )
    expect(answer.status).toBe(202)
    const [invoked] = of(await events(), 'proxy.invoked')
    expect(invoked!.data).toMatchObject({
      actor: { id: open.id, type: 'proxy' },
      destination: { request: { method: 'POST', url: `${PROCESSOR}/hook` } },
      proxy: { id: open.id, name: 'inbound', type: 'pre_configured' },
    })
    expect(JSON.stringify(invoked)).not.toContain(CANARY)
  })
})

describe('application key events', () => {
  it('application.key.created and application.key.deleted: the key id and its application, never the key', async () => {
    const { v, app, events, of } = await subscribed()
    const keys = v.client('management').applicationKeys
    const key = await keys.create(app.id)
    await keys.delete(app.id, key.id)
    const got = of(await events(), 'application.key.')
    expect(got.find((e) => e.type === 'application.key.created')!.data['application_key']).toEqual({
      application_id: app.id,
      created_at: key.created_at,
      created_by: expect.any(String),
      id: key.id,
    })
    expect(got.find((e) => e.type === 'application.key.deleted')!.data['application_key']).toEqual({
      application_id: app.id,
      id: key.id,
    })
    expect(JSON.stringify(got)).not.toContain(key.key!)
    expect(JSON.stringify(got)).not.toContain('key_hash')
  })
})

describe('token.read', () => {
  /** `direct()`, with the bodies of its tenant's webhook deliveries. */
  async function service() {
    const made = await direct()
    const pending = async () =>
      (await made.svc.admin.webhooks.deliveries(made.tenant.id))
        .filter((d) => d.kind === 'webhook')
        .map((d) => d.body)
    return { ...made, pending }
  }

  it('a read by id: { token: { id, type } } in the outbox before it answers; pages and searches send none', async () => {
    const { svc, management, user, pending } = await service()
    await management.webhooks.create({ name: 'r', url: `${RECEIVER}/in`, events: ['token.read'] })
    const t = await user.tokens.create({ type: 'token', data: CANARY })
    await user.tokens.get(t.id)
    const bodies = await pending()
    expect(bodies).toHaveLength(1)
    const event = JSON.parse(bodies[0]!) as Got
    expect(event.type).toBe('token.read')
    expect(event.data['token']).toEqual({ id: t.id, type: 'token' })
    expect(bodies[0]).not.toContain(CANARY)
    await user.tokens.list()
    await user.tokens.search({ query: `id:${t.id}` })
    expect(await pending()).toHaveLength(1)
    await svc.close()
  })

  it('a read of a tenant with no webhook taking it writes nothing; one made here takes the next read at once', async () => {
    const { svc, management, user, pending } = await service()
    const t = await user.tokens.create({ type: 'token', data: 'x' })
    await user.tokens.get(t.id)
    expect(await pending()).toEqual([])
    await management.webhooks.create({ name: 'r', url: `${RECEIVER}/in`, events: ['token.read'] })
    await user.tokens.get(t.id)
    expect(await pending()).toHaveLength(1)
    await svc.close()
  })

  it('a webhook made by another process takes reads here once 500 ms passed, not at 499', async () => {
    const { svc, clock, user, pending, hookedElsewhere } = await service()
    const t = await user.tokens.create({ type: 'token', data: 'x' })
    await user.tokens.get(t.id)
    await hookedElsewhere(['token.read'])
    clock.advance(499)
    await user.tokens.get(t.id)
    expect(await pending()).toEqual([])
    clock.advance(1)
    await user.tokens.get(t.id)
    expect(await pending()).toHaveLength(1)
    await svc.close()
  })
})

describe("the reads' webhook cache", () => {
  it('keeps 10 000 tenants; the 10 001st evicts the oldest kept', async () => {
    let reads = 0
    const hooks = new HooksForReads({
      listWebhooks: async () => {
        reads++
        return { items: [], total: 0 }
      },
    })
    for (let i = 0; i < 10_000; i++) await hooks.of(`t${i}`, 0)
    await hooks.of('t0', 0)
    expect(reads).toBe(10_000)
    await hooks.of('t10000', 0)
    expect(reads).toBe(10_001)
    await hooks.of('t1', 0)
    expect(reads).toBe(10_001)
    await hooks.of('t0', 0)
    expect(reads).toBe(10_002)
  })
})

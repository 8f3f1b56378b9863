/**
 * Per-tenant bounds on pending deliveries (the write that would pass the bound is refused with 429
 * and changes nothing), and one tenant's failing, hanging receiver never delaying another tenant's
 * deliveries.
 */
import { describe, expect, it, vi } from 'vitest'
import { routedEgress } from '../../adapters/egress/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { webhookTicker } from '../../bin/webhook-ticker.js'
import { createService, manualClock, ServiceError } from '../../entry/index.js'

const SLOW = 'https://slow.example.test'
const FAST = 'https://fast.example.test'

async function tenantWithHook(service: ReturnType<typeof createService>, name: string, url: string) {
  const tenant = await service.admin.createTenant({ name })
  const management = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'm',
    type: 'management',
    permissions: ['webhook:create'],
  })
  const writer = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'w',
    type: 'private',
    permissions: ['token:create'],
  })
  await service.connect(management.key).webhooks.create({ name: 'h', url, events: ['token.created'] })
  return { tenant, client: service.connect(writer.key) }
}

/** The key of a new application of `tenantId`, named after its type. */
async function appKey(
  service: ReturnType<typeof createService>,
  tenantId: string,
  type: 'management' | 'private',
  permissions: string[],
) {
  return (
    await service.admin.createApplication({ tenantId, name: type, type, permissions: permissions as never })
  ).key
}

/**
 * A service with two tenants, each with a webhook: the slow one's receiver hangs until `release()`,
 * the fast one's answers at once (`fastStatus(n)` for its nth delivery, 200 by default) and records
 * the event types it got in `fastGot`.
 */
async function slowAndFast(fastStatus: (n: number) => number = () => 200) {
  const clock = manualClock('2030-01-01T00:00:00.000Z')
  const fastGot: string[] = []
  let release: () => void = () => {}
  const hanging = new Promise<Response>((resolve) => {
    release = () => resolve(new Response(null, { status: 500 }))
  })
  const service = createService({
    store: memoryStore(),
    clock,
    runner: null,
    egress: [SLOW, FAST],
    egressClient: routedEgress({
      [SLOW]: () => hanging,
      [FAST]: async (request) => {
        fastGot.push(JSON.parse(await request.text()).event.type)
        return new Response(null, { status: fastStatus(fastGot.length) })
      },
    }),
  })
  const slow = await tenantWithHook(service, 'slow', `${SLOW}/in`)
  const fast = await tenantWithHook(service, 'fast', `${FAST}/in`)
  return { clock, fastGot, release: () => release(), service, slow, fast }
}

describe('webhook bounds', () => {
  it('a tenant at its pending bound still has its expired tokens deleted by the sweep, their events queued past it', async () => {
    const clock = manualClock('2030-01-01T00:00:00.000Z')
    const store = memoryStore()
    const service = createService({
      store,
      clock,
      runner: null,
      egress: [SLOW],
      egressClient: routedEgress({ [SLOW]: () => new Response(null, { status: 500 }) }),
      maxPendingDeliveriesPerTenant: 3,
    })
    const tenant = await service.admin.createTenant({ name: 'a' })
    const app = (type: 'management' | 'private', permissions: string[]) =>
      appKey(service, tenant.id, type, permissions)
    const management = service.connect(await app('management', ['webhook:create']))
    await management.webhooks.create({
      name: 'h',
      url: `${SLOW}/in`,
      events: ['token.created', 'token.expired'],
    })
    const client = service.connect(await app('private', ['token:create', 'token:read']))
    const expiring = await client.tokens.create({
      type: 'token',
      data: 'x',
      expires_at: '2030-01-01T01:00:00.000Z',
    })
    await client.tokens.create({ type: 'token', data: 'y' })
    await client.tokens.create({ type: 'token', data: 'z' })
    await expect(client.tokens.create({ type: 'token', data: 'w' })).rejects.toThrow(ServiceError)
    clock.advance(2 * 3600_000)
    await service.admin.sweep()
    expect(await store.getToken(tenant.id, expiring.id)).toBeFalsy()
    const deliveries = await service.admin.webhooks.deliveries(tenant.id)
    expect(deliveries.map((d) => d.event_type).sort()).toEqual([
      'token.created',
      'token.created',
      'token.created',
      'token.expired',
    ])
  })

  it("the sweep's writes take a tenant to twice its bound of pending deliveries, not past: the rest wait for its deliveries to drain", async () => {
    const clock = manualClock('2030-01-01T00:00:00.000Z')
    let answer = 500
    const store = memoryStore()
    const service = createService({
      store,
      clock,
      runner: null,
      egress: [SLOW],
      egressClient: routedEgress({ [SLOW]: () => new Response(null, { status: answer }) }),
      webhookDelivery: 'manual',
      maxPendingDeliveriesPerTenant: 3,
    })
    const tenant = await service.admin.createTenant({ name: 'a' })
    const key = (type: 'management' | 'private', permissions: string[]) =>
      appKey(service, tenant.id, type, permissions)
    const management = service.connect(await key('management', ['webhook:create']))
    for (let i = 0; i < 3; i++)
      await management.webhooks.create({ name: `h${i}`, url: `${SLOW}/in${i}`, events: ['token.updated'] })
    const client = service.connect(await key('private', ['token:create', 'token:read']))
    const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2040, cvc: '123' }
    const cards: { id: string }[] = []
    for (let i = 0; i < 3; i++) cards.push(await client.tokens.create({ type: 'card', data: card }))
    clock.advance(2 * 3600_000)
    const pending = async () =>
      (await service.admin.webhooks.deliveries(tenant.id, { limit: 1000 })).filter(
        (d) => d.state === 'pending',
      ).length
    const withCvc = async () => {
      let n = 0
      // Reads hide a cvc past its time at once; the stored card keeps it until the sweep drops it.
      for (const c of cards) if ((await store.getToken(tenant.id, c.id))?.cvc_expires_at !== undefined) n++
      return n
    }
    // Each cvc dropped adds 3 deliveries: 3, then 6 (twice the bound) land; 9 would pass it.
    await service.admin.sweep()
    expect(await pending()).toBe(6)
    expect(await withCvc()).toBe(1)
    answer = 200
    await service.admin.webhooks.deliverDue()
    expect(await pending()).toBe(0)
    await service.admin.sweep()
    expect(await pending()).toBe(3)
    expect(await withCvc()).toBe(0)
    await service.close()
  })

  it('a tenant at 3 pending deliveries (maxPendingDeliveriesPerTenant: 3) has its next create refused, nothing written', async () => {
    const clock = manualClock('2030-01-01T00:00:00.000Z')
    const service = createService({
      store: memoryStore(),
      clock,
      runner: null,
      egress: [SLOW],
      egressClient: routedEgress({ [SLOW]: () => new Response(null, { status: 500 }) }),
      maxPendingDeliveriesPerTenant: 3,
    })
    const { tenant, client } = await tenantWithHook(service, 'a', `${SLOW}/in`)
    for (let i = 0; i < 3; i++) await client.tokens.create({ type: 'token', data: `t${i}` })
    await service.admin.webhooks.deliverDue()
    let refused: unknown
    try {
      await client.tokens.create({ id: 'fourth', type: 'token', data: 't3' })
    } catch (error) {
      refused = error
    }
    expect(refused).toBeInstanceOf(ServiceError)
    expect((refused as ServiceError).code).toBe('too_many_requests')
    expect((await service.admin.webhooks.deliveries(tenant.id)).length).toBe(3)
    const reader = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'r',
      type: 'private',
      permissions: ['token:read'],
    })
    await expect(service.connect(reader.key).tokens.get('fourth')).rejects.toMatchObject({
      code: 'not_found',
    })
    await service.close()
  })

  it("one tenant's hanging receiver does not hold up another tenant's delivery", async () => {
    const { fastGot, release, service, slow, fast } = await slowAndFast()
    // More than a process attempts at once in all: the slow tenant alone could fill every place.
    for (let i = 0; i < 100; i++) await slow.client.tokens.create({ type: 'token', data: `s${i}` })
    await fast.client.tokens.create({ type: 'token', data: 'f' })
    // The slow tenant's attempts hang; the fast tenant's delivery arrives meanwhile.
    // The slow tenant's receivers answer only at release(): if they held the fast tenant's delivery
    // up, it would never come. The timeout bounds only that hang (signing runs on the thread pool,
    // which a busy machine may hold back for many turns of the loop).
    await vi.waitFor(() => expect(fastGot).toEqual(['token.created']), { timeout: 30_000, interval: 5 })
    release()
    await service.close()
  })

  it("the server's ticker starts another tenant's retry while one tenant's receiver hangs (it waits for no attempt)", async () => {
    // The fast receiver's first attempt fails: its delivery is due again 10 s later.
    const { clock, fastGot, release, service, slow, fast } = await slowAndFast((n) => (n === 1 ? 500 : 200))
    for (let i = 0; i < 40; i++) await slow.client.tokens.create({ type: 'token', data: `s${i}` })
    await fast.client.tokens.create({ type: 'token', data: 'f' })
    await vi.waitFor(() => expect(fastGot).toHaveLength(1), { timeout: 30_000, interval: 5 })
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] })
    try {
      const ticker = webhookTicker(service, () => {})
      clock.advance(10_000)
      vi.advanceTimersByTime(1_000)
      // The retry goes out on the next tick, the slow tenant's attempts still hanging.
      await vi.waitFor(() => expect(fastGot).toHaveLength(2), { timeout: 30_000, interval: 5 })
      ticker.stop()
    } finally {
      vi.useRealTimers()
    }
    release()
    await service.close()
  })

  it("one tenant's backlog past what a pass reads (5 300 due, its receiver hanging) does not hide another tenant's delivery", async () => {
    const { clock, fastGot, release, service, slow, fast } = await slowAndFast()
    // More than a pass reads (4 096) and the slow tenant's kept entries (1 024) together: every
    // pass from the oldest due entry would read the slow tenant's alone.
    for (let i = 0; i < 5300; i += 100)
      await Promise.all(
        Array.from({ length: 100 }, (_, j) =>
          slow.client.tokens.create({ type: 'token', data: `s${i + j}` }),
        ),
      )
    clock.advance(1000)
    await fast.client.tokens.create({ type: 'token', data: 'f' })
    // Passes run as the service asks (here: after each write, and on deliverDue's ticker in serve).
    for (let pass = 0; pass < 3 && fastGot.length === 0; pass++) {
      void service.admin.webhooks.deliverDue()
      await vi
        .waitFor(() => expect(fastGot).toEqual(['token.created']), { timeout: 10_000, interval: 5 })
        .catch(() => {})
    }
    expect(fastGot).toEqual(['token.created'])
    release()
    await service.close()
  }, 60_000)
})

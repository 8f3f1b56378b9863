/**
 * A backlog of one tenant's deliveries, past its 8 attempts at once, is read from the due index once
 * per batch, not once per delivery: the entries a pass could not start wait in the dispatcher and
 * start as that tenant's attempts end. (Each finished attempt used to start a pass that read the
 * whole backlog again.)
 */
import { describe, expect, it } from 'vitest'
import { routedEgress } from '../../adapters/egress/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'

const RECEIVER = 'https://hooks.example.test'

async function setUp(webhookDelivery: 'manual' | 'auto') {
  const store = memoryStore()
  const reads = { count: 0 }
  const listDue = store.listDueOutbox.bind(store)
  store.listDueOutbox = (query) => {
    reads.count++
    return listDue(query)
  }
  const got: string[] = []
  const service = createService({
    store,
    clock: manualClock('2030-01-01T00:00:00.000Z'),
    runner: null,
    webhookDelivery,
    maxPendingDeliveriesPerTenant: 1000,
    egress: [RECEIVER],
    egressClient: routedEgress({
      [RECEIVER]: async (request) => {
        got.push(await request.text())
        return new Response(null, { status: 204 })
      },
    }),
  })
  const tenant = await service.admin.createTenant({ name: 't' })
  const app = (type: 'private' | 'management', permissions: ('token:create' | 'webhook:create')[]) =>
    service.admin.createApplication({ tenantId: tenant.id, name: type, type, permissions })
  const management = await app('management', ['webhook:create'])
  await service
    .connect(management.key)
    .webhooks.create({ name: 'h', url: `${RECEIVER}/in`, events: ['token.created'] })
  const writer = service.connect((await app('private', ['token:create'])).key)
  return { service, tenant, writer, reads, got }
}

describe('a backlog of one tenant', () => {
  it('deliverDue delivers 100 pending deliveries each once with 1 read of the due index', async () => {
    const { service, tenant, writer, reads, got } = await setUp('manual')
    for (let i = 0; i < 100; i++) await writer.tokens.create({ type: 'token', data: `v${i}` })
    reads.count = 0
    expect(await service.admin.webhooks.deliverDue()).toBe(8)
    expect(got.length).toBe(100)
    expect(new Set(got).size).toBe(100)
    expect(reads.count).toBe(1)
    const deliveries = await service.admin.webhooks.deliveries(tenant.id)
    expect(deliveries.filter((d) => d.state === 'delivered').length).toBe(100)
    await service.close()
  })

  it('64 creates at once, delivered after each write: each delivered once, the due index read at most 17 times', async () => {
    const { service, writer, reads, got } = await setUp('auto')
    reads.count = 0
    await Promise.all(
      Array.from({ length: 64 }, (_, i) => writer.tokens.create({ type: 'token', data: `v${i}` })),
    )
    await service.admin.webhooks.deliverDue()
    expect(got.length).toBe(64)
    expect(new Set(got).size).toBe(64)
    expect(reads.count).toBeLessThanOrEqual(17)
    await service.close()
  })
})

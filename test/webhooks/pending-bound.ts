/**
 * The race of the pending-deliveries bound, on any store: 5 token creates started at once on a
 * tenant with one webhook (each create makes one delivery), at maxPendingDeliveriesPerTenant 3,
 * deliveries left pending (manual delivery). Used by the memory, file and PostgreSQL tests.
 */
import { expect } from 'vitest'
import { createService, manualClock, type Permission } from '../../entry/index.js'
import type { Store } from '../../src/store/index.js'

const RECEIVER = 'https://hooks.example.test'

/** 5 concurrent token creates on a tenant with one webhook, at a bound of 3 pending deliveries. */
export async function raceCreates(store: Store) {
  const service = createService({
    store,
    clock: manualClock('2030-01-01T00:00:00.000Z'),
    masterKey: Buffer.alloc(32, 7),
    runner: null,
    egress: [RECEIVER],
    webhookDelivery: 'manual',
    maxPendingDeliveriesPerTenant: 3,
  })
  const tenant = await service.admin.createTenant({ name: 't' })
  const app = (type: 'management' | 'private', permissions: Permission[]) =>
    service.admin.createApplication({ tenantId: tenant.id, name: type, type, permissions })
  const management = service.connect((await app('management', ['webhook:create'])).key)
  await management.webhooks.create({ name: 'h', url: `${RECEIVER}/in`, events: ['token.created'] })
  const writer = service.connect((await app('private', ['token:create', 'token:read'])).key)
  const outcomes = await Promise.allSettled(
    Array.from({ length: 5 }, (_, i) => writer.tokens.create({ id: `t${i}`, type: 'token', data: `d${i}` })),
  )
  const made = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [`t${i}`] : []))
  const refused = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason.code] : []))
  const deliveries = await service.admin.webhooks.deliveries(tenant.id)
  const stored = await Promise.allSettled(outcomes.map((_, i) => writer.tokens.get(`t${i}`)))
  await service.close()
  return { made, refused, deliveries, stored: stored.filter((s) => s.status === 'fulfilled').length }
}

export function expectBoundKept(result: Awaited<ReturnType<typeof raceCreates>>) {
  expect(result.made).toHaveLength(3)
  expect(result.refused).toEqual(['too_many_requests', 'too_many_requests'])
  expect(result.deliveries).toHaveLength(3)
  // A refused create left no token behind: no change without its event.
  expect(result.stored).toBe(3)
}

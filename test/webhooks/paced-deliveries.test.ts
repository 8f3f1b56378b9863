/**
 * Deliveries are background work: each step of an attempt (its claim, its request, its result)
 * takes a turn that yields to the service's calls in flight, one step at a time, kept to a quarter
 * of the time while calls come (`pacedTurn` at share 0.25: after a step of `b` ms during which a
 * call began, the next waits 3 × `b`). Before, one tenant's backlog of deliveries (five webhooks on
 * its creates) ran at full speed on the event loop beside every other tenant's calls
 * (`npm run bench:attacks -- --only g`: B's p99 under it 11-15 ms, 1.8x-2.2x less with the steps
 * paced). The pacer is a fake here: its time moves 10 ms at each reading, and its pauses are noted,
 * not waited.
 */
import { expect, it } from 'vitest'
import { routedEgress } from '../../adapters/egress/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'

const RECEIVER = 'https://hooks.example.test'

function vault(tick = 10) {
  const time = { ms: 0 }
  const pauses: number[] = []
  const received: string[] = []
  const service = createService({
    store: memoryStore(),
    clock: manualClock('2030-01-01T00:00:00.000Z'),
    runner: null,
    webhookDelivery: 'manual',
    pacer: {
      now: () => {
        time.ms += tick
        return time.ms
      },
      pause: async (ms) => {
        pauses.push(ms)
      },
    },
    egress: [RECEIVER],
    egressClient: routedEgress({
      [RECEIVER]: async (request) => {
        received.push(await request.text())
        return new Response(null, { status: 204 })
      },
    }),
  })
  return { service, pauses, received, time }
}

async function hookedWriter(service: ReturnType<typeof vault>['service']) {
  const tenant = await service.admin.createTenant({ name: 'hooked' })
  const app = (
    type: 'private' | 'management',
    permissions: ('token:create' | 'token:read' | 'webhook:create')[],
  ) => service.admin.createApplication({ tenantId: tenant.id, name: type, type, permissions })
  const management = await app('management', ['webhook:create'])
  await service
    .connect(management.key)
    .webhooks.create({ name: 'h', url: `${RECEIVER}/in`, events: ['token.created'] })
  return service.connect((await app('private', ['token:create', 'token:read'])).key)
}

it('while calls come, each step of a delivery after one during which a call began waits 3 times that step', async () => {
  const { service, pauses, received } = vault()
  const writer = await hookedWriter(service)
  const token = await writer.tokens.create({ type: 'token', data: 'first' })
  for (let i = 0; i < 3; i++) await writer.tokens.create({ type: 'token', data: `more ${i}` })
  pauses.length = 0
  let reading = true
  const reads = (async () => {
    while (reading) await writer.tokens.get(token.id).catch(() => undefined)
  })()
  await service.admin.webhooks.deliverDue()
  reading = false
  await reads
  expect(received).toHaveLength(4)
  expect(pauses.length).toBeGreaterThan(0)
  // The fake's time moves 10 ms a reading: a step of 10 ms, then a pause of 30 (share 0.25).
  expect(new Set(pauses)).toEqual(new Set([30]))
  await service.close()
})

it('with no call meanwhile, deliveries run at full speed: no pause after the first step', async () => {
  const { service, pauses, received } = vault()
  const writer = await hookedWriter(service)
  for (let i = 0; i < 4; i++) await writer.tokens.create({ type: 'token', data: `quiet ${i}` })
  pauses.length = 0
  await service.admin.webhooks.deliverDue()
  expect(received).toHaveLength(4)
  // Four deliveries of three steps each; only the first step can follow the creates' calls.
  expect(pauses.length).toBeLessThanOrEqual(1)
  await service.close()
})

it("never counts the time no step waited as the deliveries' own: after a minute idle, a call and its delivery do not pause", async () => {
  const { service, pauses, received, time } = vault(0)
  const writer = await hookedWriter(service)
  await writer.tokens.create({ type: 'token', data: 'before' })
  await service.admin.webhooks.deliverDue()
  // A minute passes on the pacer's clock with no step waiting; then a call, and its delivery.
  time.ms += 60_000
  pauses.length = 0
  await writer.tokens.create({ type: 'token', data: 'after' })
  await service.admin.webhooks.deliverDue()
  expect(received).toHaveLength(2)
  // One run of turns for the whole service would take the minute for a step: a pause of 5 s.
  expect(pauses).toEqual([])
  await service.close()
})

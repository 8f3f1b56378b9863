/**
 * The proxy's per-tenant bound of calls in flight (`maxProxyCallsPerTenant`, default 64): with 64 of
 * a tenant's calls held at their destination, its 65th is refused at once with 429 (nothing sent),
 * another tenant's call still goes through, and once the 64 are answered the tenant may call again.
 * Driven by events (the destination tells when the 64th arrived), never by sleeps.
 */
import { afterEach, expect, it } from 'vitest'
import { routedEgress } from '../../adapters/egress/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, type Service, ServiceError } from '../../entry/index.js'

const HELD = 'https://held.test'
const FREE = 'https://free.test'
let service: Service
afterEach(() => service?.close())

async function clientOf(name: string) {
  const tenant = await service.admin.createTenant({ name })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'p',
    type: 'private',
    permissions: ['token:use'],
  })
  return service.connect(key)
}

it('64 calls of a tenant in flight pass, its 65th is a 429 and is not sent, another tenant is not refused', async () => {
  let arrived = 0
  let release!: () => void
  const released = new Promise<void>((resolve) => {
    release = resolve
  })
  let allArrived!: () => void
  const sixtyFour = new Promise<void>((resolve) => {
    allArrived = resolve
  })
  service = createService({
    store: memoryStore(),
    clock: manualClock('2030-01-01T00:00:00.000Z'),
    runner: null,
    egress: [HELD, FREE],
    egressClient: routedEgress({
      [HELD]: async () => {
        arrived += 1
        if (arrived === 64) allArrived()
        await released
        return new Response('held')
      },
      [FREE]: () => new Response('free'),
    }),
  })
  const a = await clientOf('a')
  const b = await clientOf('b')
  const call = { method: 'GET', url: HELD }
  const held = Array.from({ length: 64 }, () => a.proxy.invoke(call))
  await sixtyFour
  const refused = await a.proxy.invoke(call).then(
    () => null,
    (error: unknown) => error,
  )
  expect(refused).toBeInstanceOf(ServiceError)
  expect((refused as ServiceError).code).toBe('too_many_requests')
  expect(arrived).toBe(64)
  expect((await b.proxy.invoke({ method: 'GET', url: FREE })).body).toBe('free')
  release()
  const answers = await Promise.all(held)
  expect(answers.every((x) => x.status === 200 && x.body === 'held')).toBe(true)
  expect((await a.proxy.invoke(call)).body).toBe('held')
})

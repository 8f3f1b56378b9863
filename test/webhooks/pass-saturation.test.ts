/**
 * A delivery pass that finds every one of the 64 slots taken reads nothing; the delivery it could
 * not start must start when a slot frees, not wait for the next write. Here 8 tenants fill the 64
 * slots exactly (8 held deliveries each, none left over), a ninth tenant writes, and then the held
 * deliveries end: the ninth's delivery follows, with no other write and no deliverDue.
 */
import { expect, it } from 'vitest'
import { routedEgress } from '../../adapters/egress/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'

const RECEIVER = 'https://hooks.example.test'

/** Lets the event loop run `turns` times (no timers: the clock of the test is manual). */
async function turns(n: number, until: () => boolean): Promise<void> {
  for (let i = 0; i < n && !until(); i++) await new Promise((go) => setImmediate(go))
}

it('a pass that found every slot taken leaves the next free slot to start what it could not read', async () => {
  const held: (() => void)[] = []
  const got: string[] = []
  const lateTenant = { id: '' }
  const service = createService({
    store: memoryStore(),
    clock: manualClock('2030-01-01T00:00:00.000Z'),
    runner: null,
    webhookDelivery: 'auto',
    egress: [RECEIVER],
    egressClient: routedEgress({
      [RECEIVER]: async (request) => {
        const body = await request.text()
        if (!lateTenant.id || !body.includes(lateTenant.id)) await new Promise<void>((go) => held.push(go))
        got.push(body)
        return new Response(null, { status: 204 })
      },
    }),
  })
  const writerOf = async (name: string) => {
    const tenant = await service.admin.createTenant({ name })
    const app = (type: 'private' | 'management', permissions: ('token:create' | 'webhook:create')[]) =>
      service.admin.createApplication({ tenantId: tenant.id, name: type, type, permissions })
    const management = await app('management', ['webhook:create'])
    await service
      .connect(management.key)
      .webhooks.create({ name: 'h', url: `${RECEIVER}/in`, events: ['token.created'] })
    return { id: tenant.id, client: service.connect((await app('private', ['token:create'])).key) }
  }
  for (let t = 0; t < 8; t++) {
    const { client } = await writerOf(`t${t}`)
    for (let i = 0; i < 8; i++) await client.tokens.create({ type: 'token', data: `t${t}-${i}` })
  }
  await turns(200_000, () => held.length === 64)
  expect(held.length).toBe(64)
  const late = await writerOf('late')
  lateTenant.id = late.id
  await late.client.tokens.create({ type: 'token', data: 'late' })
  await turns(2000, () => false)
  for (const go of held.splice(0)) go()
  await turns(200_000, () => got.some((body) => body.includes(late.id)))
  expect(got.filter((body) => body.includes(late.id))).toHaveLength(1)
  expect(got).toHaveLength(65)
  await service.close()
})

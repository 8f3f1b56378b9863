/**
 * The proxy's bounds, with literal numbers: a body of 1048576 bytes is sent and one of 1048577 is
 * refused (400, nothing sent); a destination answer of 1048576 bytes comes back and one byte more is
 * 502; a destination off the egress list is 400; a destination that does not answer in time is
 * 408 (the reference's timeout status); one that refuses the connection is 502.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { routedEgress } from '../../adapters/egress/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, type Service, ServiceError } from '../../entry/index.js'

const ORIGIN = 'https://dest.test'
let service: Service
afterEach(() => service?.close())

async function start(handler: (request: Request) => Response | Promise<Response>, proxyTimeoutMs = 25_000) {
  service = createService({
    store: memoryStore(),
    clock: manualClock('2030-01-01T00:00:00.000Z'),
    runner: null,
    egress: [ORIGIN, 'https://listed-unrouted.test'],
    egressClient: routedEgress({ [ORIGIN]: handler }),
    proxyTimeoutMs,
  })
  const tenant = await service.admin.createTenant({ name: 't' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'p',
    type: 'private',
    permissions: ['token:use'],
  })
  return service.connect(key)
}

const failure = async (p: Promise<unknown>): Promise<ServiceError> => {
  try {
    await p
  } catch (error) {
    if (error instanceof ServiceError) return error
    throw error
  }
  throw new Error('expected a ServiceError')
}

describe('proxy bounds', () => {
  it('a request body of 1048576 bytes is sent; 1048577 is a 400 and nothing is sent', async () => {
    const sizes: number[] = []
    const client = await start(async (r) => {
      sizes.push((await r.arrayBuffer()).byteLength)
      return new Response('ok')
    })
    const call = { method: 'POST', url: ORIGIN, headers: { 'content-type': 'application/octet-stream' } }
    await client.proxy.invoke({ ...call, body: new Uint8Array(1048576) })
    const error = await failure(client.proxy.invoke({ ...call, body: new Uint8Array(1048577) }))
    expect(error.code).toBe('validation_failed')
    expect(error.message).toContain('1048576 bytes')
    expect(sizes).toEqual([1048576])
  })

  it('a destination answer of 1048576 bytes comes back; 1048577 is a 502', async () => {
    const client = await start((r) => new Response('x'.repeat(Number(new URL(r.url).pathname.slice(1)))))
    const ok = await client.proxy.invoke({ method: 'GET', url: ORIGIN, path: '/1048576' })
    expect(ok.body.length).toBe(1048576)
    const error = await failure(client.proxy.invoke({ method: 'GET', url: ORIGIN, path: '/1048577' }))
    expect(error.code).toBe('destination_failed')
    expect(error.status).toBe(502)
  })

  it('off the egress list: 400; refused connection: 502; no answer in time: 408', async () => {
    const client = await start(() => new Promise<Response>(() => {}), 50)
    const off = await failure(client.proxy.invoke({ method: 'GET', url: 'https://elsewhere.test' }))
    expect(off.code).toBe('validation_failed')
    expect(off.message).toContain('not on the egress allow-list')
    const refused = await failure(client.proxy.invoke({ method: 'GET', url: 'https://listed-unrouted.test' }))
    expect([refused.code, refused.status]).toEqual(['destination_failed', 502])
    const slow = await failure(client.proxy.invoke({ method: 'GET', url: ORIGIN }))
    expect([slow.code, slow.status]).toEqual(['destination_failed', 408])
  })
})

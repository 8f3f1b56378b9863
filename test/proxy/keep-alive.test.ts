/**
 * The node egress client keeps connections alive: proxy calls to one destination reuse a connection,
 * and a kept connection never lets a call skip its address check (a host name that now resolves to
 * a private address is refused though a connection to its old address is open).
 */
import { once } from 'node:events'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, systemClock } from '../../entry/index.js'
import { loopbackDestination } from './loopback.js'

const answers = new Map<string, { address: string; family: number }[]>()
vi.mock('node:dns/promises', async (original) => {
  const real = await original<typeof import('node:dns/promises')>()
  return {
    ...real,
    lookup: async (host: string, options: unknown) =>
      answers.get(host) ?? real.lookup(host, options as never),
  }
})

let destination: Awaited<ReturnType<typeof loopbackDestination>>
let connections = 0
beforeAll(async () => {
  destination = await loopbackDestination()
  destination.server.on('connection', () => connections++)
})
afterAll(() => destination.close())

async function proxyClient(origins: string[], maxProxyCallsPerTenant?: number) {
  const service = createService({
    store: memoryStore(),
    clock: systemClock,
    runner: null,
    egress: origins,
    ...(maxProxyCallsPerTenant ? { maxProxyCallsPerTenant } : {}),
  })
  const tenant = await service.admin.createTenant({ name: 't' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'a',
    type: 'private',
    permissions: ['token:create', 'token:use'],
  })
  return { service, client: service.connect(key) }
}

const call = (url: string) => ({ method: 'POST', url, path: '/v1/charges', headers: {}, body: '{"a":1}' })

describe('egress keep-alive', () => {
  it('sequential proxy calls to one destination use one connection', async () => {
    const { service, client } = await proxyClient([destination.origin])
    connections = 0
    for (let i = 0; i < 3; i++) expect((await client.proxy.invoke(call(destination.origin))).status).toBe(201)
    expect(connections).toBe(1)
    await service.close()
  }, 60_000)

  it('a kept connection the destination closed is replaced, and the call answers', async () => {
    const { service, client } = await proxyClient([destination.origin])
    expect((await client.proxy.invoke(call(destination.origin))).status).toBe(201)
    destination.server.closeIdleConnections()
    expect((await client.proxy.invoke(call(destination.origin))).status).toBe(201)
    await service.close()
  }, 60_000)

  it('a kept connection to localhost does not let a rebinding answer through', async () => {
    const port = new URL(destination.origin).port
    const origin = `http://localhost:${port}`
    const { service, client } = await proxyClient([origin])
    answers.set('localhost', [{ address: '127.0.0.1', family: 4 }])
    expect((await client.proxy.invoke(call(origin))).status).toBe(201)
    answers.set('localhost', [{ address: '10.0.0.7', family: 4 }])
    const refused = await client.proxy.invoke(call(origin)).catch((e: Error) => e)
    expect((refused as Error).message).toMatch(/resolves to a loopback, private or reserved address/)
    answers.delete('localhost')
    await service.close()
  }, 60_000)

  it('at most 64 idle connections are kept per address: 68 calls at once after 68 at once open 4', async () => {
    // The destination holds its answers until all 68 requests of a round are in.
    let held: ServerResponse[] = []
    let opened = 0
    const barrier = createServer((req, res) => {
      req.resume()
      held.push(res)
      if (held.length < 68) return
      for (const r of held) r.end('{}')
      held = []
    })
    barrier.on('connection', () => opened++)
    barrier.listen(0, '127.0.0.1')
    await once(barrier, 'listening')
    const origin = `http://127.0.0.1:${(barrier.address() as AddressInfo).port}`
    const { service, client } = await proxyClient([origin], 68)
    const round = async () => {
      const before = opened
      const answers = await Promise.all(Array.from({ length: 68 }, () => client.proxy.invoke(call(origin))))
      expect(answers.map((a) => a.status)).toEqual(Array(68).fill(200))
      return opened - before
    }
    expect([await round(), await round(), await round()]).toEqual([68, 4, 4])
    barrier.closeAllConnections()
    barrier.close()
    await service.close()
  }, 60_000)
})

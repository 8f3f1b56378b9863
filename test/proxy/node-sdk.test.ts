/**
 * `@basis-theory/node-sdk` 5.x, unmodified, drives the pre-configured proxies over a real socket
 * with `headerPrefix: 'BT'` (docs/api/proxies/pre-configured-proxies): `client.proxies.create`,
 * `list`, `get`, `update`, `patch` and `delete`, and a call of the proxy it made with
 * `BT-PROXY-KEY` to a loopback destination (the SDK has no method for the call itself: it is plain
 * HTTP, as the reference's page shows it with curl).
 */
import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { BasisTheoryClient } from '@basis-theory/node-sdk'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createHttpHandler, toNodeListener } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, type Service } from '../../entry/index.js'
import { failedStatus } from '../http/current-sdk-vault.js'
import { loopbackDestination } from './loopback.js'

let destination: Awaited<ReturnType<typeof loopbackDestination>>
let service: Service
let server: Server
let url = ''
let management = ''
let privateKey = ''

beforeAll(async () => {
  destination = await loopbackDestination()
  service = createService({
    store: memoryStore(),
    clock: manualClock('2030-01-01T00:00:00.000Z'),
    runner: null,
    egress: [destination.origin],
  })
  const tenant = await service.admin.createTenant({ name: 'sdk' })
  const app = (type: 'management' | 'private', permissions: string[]) =>
    service.admin.createApplication({
      tenantId: tenant.id,
      name: type,
      type,
      permissions: permissions as never,
    })
  management = (await app('management', ['proxy:create', 'proxy:read', 'proxy:update', 'proxy:delete'])).key
  privateKey = (await app('private', ['token:create', 'token:use'])).key
  server = createServer(toNodeListener(createHttpHandler(service, { headerPrefix: 'BT', log: () => {} })))
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  url = `http://localhost:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  server.closeAllConnections()
  server.close()
  await service.close()
  await destination.close()
})

it('node-sdk 5 client.proxies: create, list, get, update, patch, delete; the proxy it made is called with BT-PROXY-KEY', async () => {
  const bt = new BasisTheoryClient({ apiKey: management, baseUrl: url, maxRetries: 0 })
  const created = await bt.proxies.create({
    name: 'Processor',
    destinationUrl: `${destination.origin}/v1`,
    configuration: { SECRET: 'node-sdk-canary' },
    requireAuth: true,
  })
  expect(created.key).toBeTypeOf('string')
  expect(created.destinationUrl).toBe(`${destination.origin}/v1`)
  expect(created.requireAuth).toBe(true)
  const page = await bt.proxies.list()
  expect(page.data.map((p) => p.id)).toEqual([created.id])
  expect((await bt.proxies.get(created.id!)).configuration).toEqual({ SECRET: 'node-sdk-canary' })
  const updated = await bt.proxies.update(created.id!, {
    name: 'Processor 2',
    destinationUrl: `${destination.origin}/v2`,
  })
  expect(updated.name).toBe('Processor 2')
  await bt.proxies.patch(created.id!, { name: 'Processor 3' })
  const patched = await bt.proxies.get(created.id!)
  expect(patched.name).toBe('Processor 3')
  expect(patched.destinationUrl).toBe(`${destination.origin}/v2`)

  const token = await new BasisTheoryClient({
    apiKey: privateKey,
    baseUrl: url,
    maxRetries: 0,
  }).tokens.create({
    type: 'token',
    data: 'plain-secret',
  })
  const answer = await fetch(`${url}/proxy/charges`, {
    method: 'POST',
    headers: { 'BT-API-KEY': privateKey, 'BT-PROXY-KEY': patched.key!, 'content-type': 'text/plain' },
    body: `pay {{ ${token.id} }}`,
  })
  expect(answer.status).toBe(201)
  expect(answer.headers.get('bt-proxy-destination-status')).toBe('201')
  expect(destination.seen.at(-1)).toMatchObject({ url: '/v2/charges', body: 'pay plain-secret' })

  await bt.proxies.delete(created.id!)
  expect(await failedStatus(bt.proxies.get(created.id!))).toBe(404)
  expect((await bt.proxies.list()).data).toEqual([])
})

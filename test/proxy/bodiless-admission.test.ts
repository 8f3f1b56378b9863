/**
 * A proxy call that sends no body (GET, DELETE, or any with no body) counts no body bytes in its
 * tenant's admission: counted as 1 MiB each, three calls held by a slow destination took the
 * tenant's 2 MiB, and every other request of the tenant waited behind them until they timed out
 * (25 s). Driven by events (the destination tells when the calls arrived), never by sleeps.
 */
import { once } from 'node:events'
import { createServer, type IncomingMessage, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, expect, it } from 'vitest'
import { routedEgress } from '../../adapters/egress/index.js'
import { createHttpHandler, toNodeListener } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, type Service } from '../../entry/index.js'

const HELD = 'https://held.test'
let service: Service
afterEach(() => service?.close())

it('eight calls with no body held at the destination leave the tenant its other requests', async () => {
  let arrived = 0
  let eight!: () => void
  const allArrived = new Promise<void>((resolve) => {
    eight = resolve
  })
  let release!: () => void
  const released = new Promise<void>((resolve) => {
    release = resolve
  })
  service = createService({
    store: memoryStore(),
    clock: manualClock('2030-01-01T00:00:00.000Z'),
    runner: null,
    egress: [HELD],
    egressClient: routedEgress({
      [HELD]: async () => {
        if (++arrived === 8) eight()
        await released
        return new Response('late')
      },
    }),
  })
  const tenant = await service.admin.createTenant({ name: 'a' })
  const app = async (type: 'private' | 'management', permissions: string[]) =>
    (
      await service.admin.createApplication({
        tenantId: tenant.id,
        name: type,
        type,
        permissions: permissions as never,
      })
    ).key
  const key = await app('private', ['token:use', 'token:read'])
  const open = await service
    .connect(await app('management', ['proxy:create']))
    .proxies.create({ name: 'inbound', destination_url: HELD, require_auth: false })
  const handler = createHttpHandler(service, { headerPrefix: 'BT', log: () => {} })
  const held: Promise<Response>[] = []
  for (const method of ['GET', 'DELETE', 'GET', 'DELETE', 'GET', 'DELETE']) {
    const headers = { 'BT-API-KEY': key, 'BT-PROXY-URL': HELD }
    held.push(handler(new Request('http://localhost/proxy/slow', { method, headers })))
  }
  // Two inbound calls, no API key: admitted under the proxy's tenant.
  for (let i = 0; i < 2; i++)
    held.push(handler(new Request(`http://localhost/proxy/slow?bt-proxy-key=${open.key}`)))
  await allArrived
  const other = await handler(
    new Request('http://localhost/tokens/01900000-0000-7000-8000-000000000000', {
      headers: { 'BT-API-KEY': key },
    }),
  )
  expect(other.status).toBe(404)
  release()
  for (const response of await Promise.all(held)) expect(response.status).toBe(200)
}, 20_000)

it('sends nothing for a call whose client went away while it waited for its turn (node listener)', async () => {
  let arrived = 0
  let first!: () => void
  const firstArrived = new Promise<void>((resolve) => {
    first = resolve
  })
  let release!: () => void
  const released = new Promise<void>((resolve) => {
    release = resolve
  })
  service = createService({
    store: memoryStore(),
    clock: manualClock('2030-01-01T00:00:00.000Z'),
    runner: null,
    egress: [HELD],
    egressClient: routedEgress({
      [HELD]: async () => {
        if (++arrived === 1) first()
        await released
        return new Response('late')
      },
    }),
  })
  const tenant = await service.admin.createTenant({ name: 'a' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'p',
    type: 'private',
    permissions: ['token:use', 'token:read'],
  })
  // One request of the tenant at a time: the second waits for the first's turn to end.
  const listener = toNodeListener(
    createHttpHandler(service, { headerPrefix: 'BT', log: () => {}, maxInFlightPerTenant: 1 }),
  )
  let received = 0
  let second!: (req: IncomingMessage) => void
  const secondReceived = new Promise<IncomingMessage>((resolve) => {
    second = resolve
  })
  const server = createServer((req, res) => {
    if (++received === 2) second(req)
    listener(req, res)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const headers = { 'BT-API-KEY': key, 'BT-PROXY-URL': HELD }
  const call = (path: string, extra: Record<string, string> = {}) =>
    request(`${base}${path}`, { headers: { ...headers, ...extra }, agent: false })
  const held = call('/proxy/one')
  const heldAnswer = once(held, 'response')
  held.end()
  await firstArrived
  const abandoned = call('/proxy/two')
  abandoned.on('error', () => {})
  abandoned.end()
  const waiting = await secondReceived
  const closed = once(waiting.socket, 'close')
  abandoned.destroy()
  await closed
  release()
  const [answer] = (await heldAnswer) as [IncomingMessage]
  expect(answer.statusCode).toBe(200)
  answer.resume()
  // A third request of the tenant waits behind the abandoned one: once it is answered, that one had its turn.
  const third = call('/tokens/01900000-0000-7000-8000-000000000000')
  const thirdAnswer = once(third, 'response')
  third.end()
  const [late] = (await thirdAnswer) as [IncomingMessage]
  late.resume()
  expect(late.statusCode).toBe(404)
  expect(arrived).toBe(1)
  server.closeAllConnections()
  server.close()
}, 20_000)

it('aborts a call already sent when its client goes away, and gives its place back (node listener)', async () => {
  let arrived!: (signal: AbortSignal) => void
  const sent = new Promise<AbortSignal>((resolve) => {
    arrived = resolve
  })
  service = createService({
    store: memoryStore(),
    clock: manualClock('2030-01-01T00:00:00.000Z'),
    runner: null,
    egress: [HELD],
    maxProxyCallsPerTenant: 1,
    egressClient: routedEgress({
      [HELD]: async (request) => {
        if (new URL(request.url).pathname.endsWith('/hang')) {
          arrived(request.signal)
          await new Promise(() => {})
        }
        return new Response('ok')
      },
    }),
  })
  const tenant = await service.admin.createTenant({ name: 'a' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'p',
    type: 'private',
    permissions: ['token:use'],
  })
  const server = createServer(
    toNodeListener(createHttpHandler(service, { headerPrefix: 'BT', log: () => {} })),
  )
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const headers = { 'BT-API-KEY': key, 'BT-PROXY-URL': HELD }
  const hanging = request(`${base}/proxy/hang`, { headers, agent: false })
  hanging.on('error', () => {})
  hanging.end()
  const signal = await sent
  expect(signal.aborted).toBe(false)
  hanging.destroy()
  if (!signal.aborted) await once(signal, 'abort')
  // The tenant's one place is free again: the next call goes through.
  const next = request(`${base}/proxy/next`, { headers, agent: false })
  const answered = once(next, 'response')
  next.end()
  const [answer] = (await answered) as [IncomingMessage]
  answer.resume()
  expect(answer.statusCode).toBe(200)
  server.closeAllConnections()
  server.close()
}, 20_000)

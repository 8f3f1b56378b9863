/**
 * A proxy call that sends no body (GET, DELETE, or any with no body) counts no body bytes in its
 * tenant's admission: counted as 1 MiB each, three calls held by a slow destination took the
 * tenant's 2 MiB, and every other request of the tenant waited behind them until they timed out
 * (25 s). Driven by events (the destination tells when the calls arrived), never by sleeps.
 */
import { once } from 'node:events'
import { createServer, type IncomingMessage, request, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, expect, it } from 'vitest'
import { routedEgress } from '../../adapters/egress/index.js'
import { createHttpHandler, toNodeListener } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, type Service } from '../../entry/index.js'
import { keyMaker } from '../support/tenants.js'

const HELD = 'https://held.test'
let service: Service
afterEach(() => service?.close())

/** A promise and the function that settles it (an event a test waits for). */
function signalled<T = void>() {
  let settle!: (value: T) => void
  const done = new Promise<T>((resolve) => {
    settle = resolve
  })
  return { done, settle }
}

/**
 * A service whose destination `HELD` holds each request until `release` (answering "late"), telling
 * `arrived(n, request)` of the n-th; its tenant's `app(type, permissions)` makes a key.
 */
async function heldDestination(
  options: { maxProxyCallsPerTenant?: number },
  arrived: (n: number, request: Request) => void,
) {
  const release = signalled()
  let n = 0
  service = createService({
    store: memoryStore(),
    clock: manualClock('2030-01-01T00:00:00.000Z'),
    runner: null,
    egress: [HELD],
    ...options,
    egressClient: routedEgress({
      [HELD]: async (request) => {
        arrived(++n, request)
        await release.done
        return new Response('late')
      },
    }),
  })
  const tenant = await service.admin.createTenant({ name: 'a' })
  const app = keyMaker(service, tenant.id)
  return { release: () => release.settle(), app }
}

/** A node server of `service`'s HTTP handler on a loopback port, and its base URL. */
async function nodeServer(listener: (req: IncomingMessage, res: ServerResponse) => void) {
  const server = createServer(listener)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
}

it('eight calls with no body held at the destination leave the tenant its other requests', async () => {
  const eight = signalled()
  const { release, app } = await heldDestination({}, (n) => n === 8 && eight.settle())
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
  await eight.done
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
  const first = signalled()
  let arrived = 0
  const { release, app } = await heldDestination({}, (n) => {
    arrived = n
    if (n === 1) first.settle()
  })
  const key = await app('private', ['token:use', 'token:read'])
  // One request of the tenant at a time: the second waits for the first's turn to end.
  const listener = toNodeListener(
    createHttpHandler(service, { headerPrefix: 'BT', log: () => {}, maxInFlightPerTenant: 1 }),
  )
  const second = signalled<IncomingMessage>()
  let received = 0
  const { server, base } = await nodeServer((req, res) => {
    if (++received === 2) second.settle(req)
    listener(req, res)
  })
  const headers = { 'BT-API-KEY': key, 'BT-PROXY-URL': HELD }
  const call = (path: string) => request(`${base}${path}`, { headers, agent: false })
  const held = call('/proxy/one')
  const heldAnswer = once(held, 'response')
  held.end()
  await first.done
  const abandoned = call('/proxy/two')
  abandoned.on('error', () => {})
  abandoned.end()
  const waiting = await second.done
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
  const sent = signalled<AbortSignal>()
  const { release, app } = await heldDestination({ maxProxyCallsPerTenant: 1 }, (n, request) => {
    if (n === 1) sent.settle(request.signal)
  })
  const key = await app('private', ['token:use'])
  const { server, base } = await nodeServer(
    toNodeListener(createHttpHandler(service, { headerPrefix: 'BT', log: () => {} })),
  )
  const headers = { 'BT-API-KEY': key, 'BT-PROXY-URL': HELD }
  const hanging = request(`${base}/proxy/hang`, { headers, agent: false })
  hanging.on('error', () => {})
  hanging.end()
  const signal = await sent.done
  expect(signal.aborted).toBe(false)
  hanging.destroy()
  if (!signal.aborted) await once(signal, 'abort')
  // The tenant's one place is free again: the next call is sent (and answered once released).
  const next = request(`${base}/proxy/next`, { headers, agent: false })
  const answered = once(next, 'response')
  next.end()
  release()
  const [answer] = (await answered) as [IncomingMessage]
  answer.resume()
  expect(answer.statusCode).toBe(200)
  server.closeAllConnections()
  server.close()
}, 20_000)

/**
 * What the vault itself sends out while `tokenvault/intercept` is installed: the proxy's requests go
 * through the egress client (`node:http` to the checked address) to other hosts, so they pass
 * through the interception untouched — a listed origin is reached as before, an unlisted one is
 * still refused and never reached.
 */
import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, type Service } from '../../entry/index.js'
import { type Interception, intercept } from '../../entry/intercept.js'

/** A server on 127.0.0.1 that answers 200 with what it received, and counts requests. */
async function echoServer(): Promise<{ server: Server; origin: string; received: string[] }> {
  const received: string[] = []
  const server = createServer(async (req, res) => {
    let body = ''
    for await (const chunk of req) body += chunk
    received.push(`${req.method} ${req.url} ${body}`)
    res.writeHead(200, { 'content-type': 'text/plain' }).end(`echo ${body}`)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { server, origin: `http://127.0.0.1:${(server.address() as { port: number }).port}`, received }
}

let listed: Awaited<ReturnType<typeof echoServer>>
let unlisted: Awaited<ReturnType<typeof echoServer>>
let service: Service
let key: string
let interception: Interception
beforeEach(async () => {
  listed = await echoServer()
  unlisted = await echoServer()
  service = createService({
    store: memoryStore(),
    clock: manualClock(),
    runner: null,
    egress: [listed.origin],
  })
  const tenant = await service.admin.createTenant({ name: 'egress' })
  key = (
    await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'p',
      type: 'private',
      permissions: ['token:use'],
    })
  ).key
  interception = intercept(service)
})
afterEach(async () => {
  interception.close()
  await service.close()
  for (const { server } of [listed, unlisted]) {
    server.closeAllConnections()
    server.close()
  }
})

it('the proxy reaches a listed origin through the interception, as sent', async () => {
  const answer = await service.connect(key).proxy.invoke({
    method: 'POST',
    url: `${listed.origin}/charges`,
    headers: { 'content-type': 'text/plain' },
    body: 'amount=1',
  })
  expect(answer.status).toBe(200)
  expect(answer.body).toBe('echo amount=1')
  expect(listed.received).toEqual(['POST /charges amount=1'])
})

it('an unlisted origin is still refused by the egress policy, and never reached', async () => {
  await expect(
    service.connect(key).proxy.invoke({ method: 'GET', url: `${unlisted.origin}/x`, headers: {} }),
  ).rejects.toMatchObject({ code: 'validation_failed', message: expect.stringContaining('BT-PROXY-URL') })
  expect(unlisted.received).toEqual([])
})

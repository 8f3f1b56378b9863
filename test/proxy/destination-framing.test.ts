/**
 * A destination's framing headers never reach the vault's answer: `trailer`, `te`, `upgrade`, the
 * proxy-* ones and those its `connection` header names are dropped, on a real socket, so Node never
 * refuses the answer (a `trailer` beside a length threw inside `writeHead`: the process died when
 * the heavy lane answered it, and the main thread answered a misframed 500).
 */
import { once } from 'node:events'
import { Agent, createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHttpHandler, toNodeListener } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, type Service } from '../../entry/index.js'

let destination: Server
let vault: Server
let service: Service
let origin = ''
let base = ''
let key = ''

beforeAll(async () => {
  destination = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      res.writeHead(200, {
        'content-type': 'text/plain',
        trailer: 'x-sum',
        te: 'trailers',
        upgrade: 'h2c',
        'proxy-authenticate': 'Basic',
        connection: 'x-hop',
        'x-hop': '1',
        'x-kept': 'k',
      })
      res.write('chunked ')
      res.addTrailers({ 'x-sum': '42' })
      res.end('answer')
    })
  })
  destination.listen(0, '127.0.0.1')
  await once(destination, 'listening')
  origin = `http://127.0.0.1:${(destination.address() as AddressInfo).port}`
  service = createService({
    store: memoryStore(),
    clock: manualClock('2030-01-01T00:00:00.000Z'),
    runner: null,
    egress: [origin],
  })
  const tenant = await service.admin.createTenant({ name: 'framing' })
  key = (
    await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'p',
      type: 'private',
      permissions: ['token:use'],
    })
  ).key
  vault = createServer(toNodeListener(createHttpHandler(service, { headerPrefix: 'BT', log: () => {} })))
  vault.listen(0, '127.0.0.1')
  await once(vault, 'listening')
  base = `http://127.0.0.1:${(vault.address() as AddressInfo).port}`
})
afterAll(async () => {
  vault.closeAllConnections()
  vault.close()
  destination.close()
  await service.close()
})

/** One GET through the proxy on `agent`: its status, headers and body. */
function proxied(agent: Agent) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: string }>(
    (resolve, reject) => {
      const req = request(`${base}/proxy/x`, {
        agent,
        headers: { 'BT-API-KEY': key, 'BT-PROXY-URL': origin },
      })
      req.on('response', (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (c: string) => {
          body += c
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
        res.on('error', reject)
      })
      req.on('error', reject)
      req.end()
    },
  )
}

describe("proxy: the destination's framing headers", () => {
  it('are dropped, the others kept, and the connection serves the next answer whole', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    try {
      for (let i = 0; i < 2; i++) {
        const answer = await proxied(agent)
        expect(answer.status).toBe(200)
        expect(answer.body).toBe('chunked answer')
        expect(answer.headers['x-kept']).toBe('k')
        for (const name of ['trailer', 'te', 'upgrade', 'proxy-authenticate', 'x-hop', 'x-sum'])
          expect(answer.headers[name], name).toBeUndefined()
      }
    } finally {
      agent.destroy()
    }
  })

  it('a handler answering a header Node refuses beside a length still answers, without it', async () => {
    const server = createServer(
      toNodeListener(() => new Response('body', { headers: { trailer: 'x-sum', 'x-kept': 'k' } })),
    )
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    try {
      const answer = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)
      expect(answer.status).toBe(200)
      expect(answer.headers.get('trailer')).toBeNull()
      expect(answer.headers.get('x-kept')).toBe('k')
      expect(await answer.text()).toBe('body')
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })
})

/**
 * A destination's `Set-Cookie` headers reach the caller one by one, as it set them: joined into one
 * header with `, ` (as other repeated headers are) they were unreadable, since an `Expires` date
 * holds a comma. Through the node listener, the fetch handler, a response transform and in process.
 * Over HTTP the answer's content security policy also says `sandbox`, beside the destination's: a
 * page a destination answers never runs as the vault's origin; its `Access-Control-*` headers are
 * dropped (CORS is the vault's), and it is `Cache-Control: no-store`.
 */
import { once } from 'node:events'
import { createServer, get, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { routedEgress } from '../../adapters/egress/index.js'
import { createHttpHandler, toNodeListener } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, type Service } from '../../entry/index.js'
import { keyMaker } from '../support/tenants.js'

const COOKIES = ['a=1; Path=/; Expires=Wed, 21 Oct 2037 07:28:00 GMT', 'b=2; HttpOnly']

let destination: Server
let vault: Server
let service: Service
let handler: (request: Request) => Promise<Response>
let origin = ''
let base = ''
let key = ''
let managementKey = ''

beforeAll(async () => {
  destination = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      res.writeHead(200, {
        'content-type': 'application/json',
        'set-cookie': COOKIES,
        'x-many': ['1', '2'],
        'content-security-policy': "default-src 'none'",
        'access-control-allow-origin': 'https://evil.example',
        'access-control-allow-credentials': 'true',
        'cache-control': 'public, max-age=3600',
      })
      res.end('{"ok":true}')
    })
  })
  destination.listen(0, '127.0.0.1')
  await once(destination, 'listening')
  origin = `http://127.0.0.1:${(destination.address() as AddressInfo).port}`
  service = createService({
    store: memoryStore(),
    clock: manualClock('2030-01-01T00:00:00.000Z'),
    egress: [origin],
  })
  const tenant = await service.admin.createTenant({ name: 'cookies' })
  const app = keyMaker(service, tenant.id)
  key = await app('private', ['token:use'])
  managementKey = await app('management', ['proxy:create'])
  handler = createHttpHandler(service, { headerPrefix: 'BT', log: () => {} })
  vault = createServer(toNodeListener(handler))
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

/** A GET of `path` on the vault's node server: its status and headers as node reads them. */
function viaNode(path: string, headers: Record<string, string>) {
  return new Promise<{ status: number; cookies: string[] | undefined; many: unknown; policy: unknown }>(
    (resolve, reject) => {
      get(`${base}${path}`, { headers }, (res) => {
        res.resume()
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            cookies: res.headers['set-cookie'],
            many: res.headers['x-many'],
            policy: res.headers['content-security-policy'],
          }),
        )
      }).on('error', reject)
    },
  )
}

describe('proxy: Set-Cookie', () => {
  it('answers each of the destination’s cookies as a header of its own (node listener and fetch handler)', async () => {
    const headers = { 'BT-API-KEY': key, 'BT-PROXY-URL': origin }
    const node = await viaNode('/proxy/x', headers)
    expect(node).toEqual({
      status: 200,
      cookies: COOKIES,
      many: '1, 2',
      policy: "default-src 'none', sandbox",
    })
    const response = await handler(new Request(`${base}/proxy/x`, { headers }))
    expect(response.status).toBe(200)
    expect(response.headers.getSetCookie()).toEqual(COOKIES)
    // Which origins may read it is the vault's to say, not the destination's; and no cache keeps it.
    expect(response.headers.get('access-control-allow-origin')).toBeNull()
    expect(response.headers.get('access-control-allow-credentials')).toBeNull()
    expect(response.headers.get('cache-control')).toBe('no-store')
  })

  it('keeps them through a response transform, and in process as set_cookie', async () => {
    const client = service.connect(key)
    const answer = await client.proxy.invoke({ method: 'GET', url: origin, path: '/x', headers: {} })
    expect(answer.set_cookie).toEqual(COOKIES)
    expect(answer.headers).not.toHaveProperty('set-cookie')
    const proxy = await service.connect(managementKey).proxies.create({
      name: 'cookies',
      destination_url: origin,
      require_auth: true,
      response_transform: {
        code: 'module.exports = async function (req) { return { body: { seen: true }, headers: req.args.headers } }',
      },
    })
    const node = await viaNode('/proxy/x', { 'BT-API-KEY': key, 'BT-PROXY-KEY': proxy.key! })
    expect(node).toMatchObject({ status: 200, cookies: COOKIES })
  })
})

describe('proxy: Set-Cookie from a destination routed in process', () => {
  it('keeps each cookie', async () => {
    const routed = createService({
      store: memoryStore(),
      clock: manualClock('2030-01-01T00:00:00.000Z'),
      runner: null,
      egress: ['https://psp.test'],
      egressClient: routedEgress({
        'https://psp.test': () => {
          const headers = new Headers({ 'content-type': 'text/plain' })
          for (const cookie of COOKIES) headers.append('set-cookie', cookie)
          return new Response('ok', { headers })
        },
      }),
    })
    const tenant = await routed.admin.createTenant({ name: 'routed' })
    const { key: routedKey } = await routed.admin.createApplication({
      tenantId: tenant.id,
      name: 'p',
      type: 'private',
      permissions: ['token:use'],
    })
    const answer = await routed
      .connect(routedKey)
      .proxy.invoke({ method: 'GET', url: 'https://psp.test', path: '/x', headers: {} })
    expect(answer.set_cookie).toEqual(COOKIES)
    await routed.close()
  })
})

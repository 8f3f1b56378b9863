import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { createHttpHandler, toNodeListener } from '../../adapters/http/index.js'
import { setup } from './setup.js'

describe('mounted in Hono', () => {
  it('round-trips requests under app.mount("/vault", handler)', async () => {
    const { handler, keys } = await setup()
    const app = new Hono()
    app.get('/health', (c) => c.text('ok'))
    app.mount('/vault', handler)

    expect(await (await app.request('/health')).text()).toBe('ok')
    const created = await app.request('/vault/tokens', {
      method: 'POST',
      headers: { 'SVC-API-KEY': keys.full, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'hono-1', type: 'x', data: { via: 'hono' } }),
    })
    expect(created.status).toBe(201)
    const read = await app.request('/vault/tokens/hono-1/', { headers: { 'svc-api-key': keys.full } })
    expect(read.status).toBe(200)
    expect(await read.json()).toMatchObject({ id: 'hono-1', data: { via: 'hono' } })
    const children = await app.request('/vault/tokens/hono-1/children?type=a&type=b', {
      headers: { 'svc-api-key': keys.full },
    })
    expect(await children.json()).toMatchObject({ pagination: { total_items: 0 }, data: [] })

    const wrong = await app.request('/vault/tokens/hono-1', {
      method: 'PUT',
      headers: { 'svc-api-key': keys.full },
    })
    expect(wrong.status).toBe(405)
    expect(wrong.headers.get('allow')).toBe('DELETE, GET, PATCH')
    expect(wrong.headers.get('content-type')).toBe('application/problem+json')
    expect((await app.request('/vault/nope')).status).toBe(404)
  })
})

describe('a Hono app served by toNodeListener, the vault mounted in it', () => {
  it('routes, runs middleware that reads and sets headers, and reaches the vault through the stand-ins', async () => {
    const { service, keys } = await setup()
    const app = new Hono()
    const seen: (string | undefined)[] = []
    app.use('*', async (c, next) => {
      seen.push(c.req.header('x-trace'))
      await next()
      c.res.headers.set('x-served-by', 'hono')
    })
    app.get('/health', (c) => c.text('ok'))
    app.mount('/vault', createHttpHandler(service, { basePath: '/vault' }), { replaceRequest: false })
    const server = createServer(toNodeListener(app.fetch))
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    try {
      expect(await (await fetch(`${base}/health`)).text()).toBe('ok')
      const created = await fetch(`${base}/vault/tokens`, {
        method: 'POST',
        headers: { 'svc-api-key': keys.full, 'content-type': 'application/json', 'x-trace': 't1' },
        body: JSON.stringify({ id: 'hono-node', type: 'token', data: 'through hono' }),
      })
      expect(created.status).toBe(201)
      expect(created.headers.get('x-served-by')).toBe('hono')
      const read = await fetch(`${base}/vault/tokens/hono-node`, { headers: { 'svc-api-key': keys.full } })
      expect(read.status).toBe(200)
      expect(read.headers.get('x-request-id')).toMatch(/^[A-Za-z0-9_-]{21}$/)
      expect(((await read.json()) as { data: unknown }).data).toBe('through hono')
      const denied = await fetch(`${base}/vault/tokens/hono-node`)
      expect(denied.status).toBe(401)
      expect(denied.headers.get('content-type')).toBe('application/problem+json')
      expect(seen).toEqual([undefined, 't1', undefined, undefined])
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })
})

import { describe, expect, it } from 'vitest'
import { createHttpHandler } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import type { Store } from '../../src/store/contract.js'
import { setup } from './setup.js'

const APP = 'https://app.example'

describe('browsers, HEAD and OPTIONS', () => {
  it('answers a CORS preflight from an allowed origin with 204 and the allowed methods and headers', async () => {
    const { call } = await setup({ cors: { origins: [APP] }, headerPrefix: 'BT' })
    const response = await call('OPTIONS', '/tokens', {
      headers: {
        origin: APP,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'bt-api-key',
      },
    })
    expect(response.status).toBe(204)
    expect(response.headers.get('access-control-allow-origin')).toBe(APP)
    expect(response.headers.get('access-control-allow-methods')).toContain('POST')
    expect(response.headers.get('access-control-allow-headers')).toContain('BT-API-KEY')
    expect(response.headers.get('access-control-allow-headers')).toContain('BT-TRANSACTION-ID')
  })

  it('a session created from the browser carries Access-Control-Allow-Origin for an allowed origin only', async () => {
    const { call, keys } = await setup({ cors: { origins: [APP] } })
    const ok = await call('POST', '/sessions', { key: keys.public, headers: { origin: APP } })
    expect(ok.status).toBe(201)
    expect(ok.headers.get('access-control-allow-origin')).toBe(APP)
    expect(ok.headers.get('vary')).toContain('Origin')
    const other = await call('POST', '/sessions', {
      key: keys.public,
      headers: { origin: 'https://evil.example' },
    })
    expect(other.status).toBe(201)
    expect(other.headers.get('access-control-allow-origin')).toBeNull()
    const preflight = await call('OPTIONS', '/sessions', {
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    })
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull()
  })

  it('`*` allows any origin; without cors no CORS header is ever sent', async () => {
    const any = await setup({ cors: { origins: ['*'] } })
    const r1 = await any.call('GET', '/healthz', { headers: { origin: 'https://x.example' } })
    expect(r1.headers.get('access-control-allow-origin')).toBe('*')
    const none = await setup()
    const r2 = await none.call('GET', '/healthz', { headers: { origin: APP } })
    expect(r2.headers.get('access-control-allow-origin')).toBeNull()
  })

  it('OPTIONS without CORS answers 204 with Allow; HEAD answers a GET route without a body', async () => {
    const { call, keys } = await setup()
    const options = await call('OPTIONS', '/tokens/abc')
    expect(options.status).toBe(204)
    expect(options.headers.get('allow')).toBe('DELETE, GET, PATCH, HEAD, OPTIONS')
    expect((await call('OPTIONS', '/nowhere')).status).toBe(404)
    const made = await call('POST', '/tokens', { key: keys.full, body: { type: 'token', data: 'x' } })
    const { id } = (await made.json()) as { id: string }
    const head = await call('HEAD', `/tokens/${id}`, { key: keys.full })
    expect(head.status).toBe(200)
    expect(head.headers.get('content-type')).toBe('application/json')
    expect(await head.text()).toBe('')
    expect((await call('HEAD', `/tokens/${id}`)).status).toBe(401)
    expect((await call('HEAD', '/tokens/missing-id', { key: keys.full })).status).toBe(404)
  })
})

describe('mounting under a base path, health and readiness', () => {
  it('serves every route under basePath and nothing outside it', async () => {
    const { call, keys } = await setup({ basePath: '/vault/' })
    const made = await call('POST', '/vault/tokens', { key: keys.full, body: { type: 'token', data: 'x' } })
    expect(made.status).toBe(201)
    const { id } = (await made.json()) as { id: string }
    expect((await call('GET', `/vault/tokens/${id}`, { key: keys.full })).status).toBe(200)
    expect((await call('GET', `/tokens/${id}`, { key: keys.full })).status).toBe(404)
    expect((await call('GET', `/vaultx/tokens/${id}`, { key: keys.full })).status).toBe(404)
    expect((await call('GET', '/vault/healthz')).status).toBe(200)
  })

  it('healthz answers without a key; readyz says whether the store answers', async () => {
    const { call } = await setup()
    const health = await call('GET', '/healthz')
    expect(health.status).toBe(200)
    expect(await health.json()).toEqual({ status: 'ok' })
    expect(await (await call('GET', '/readyz')).json()).toEqual({ status: 'ready' })

    const inner = memoryStore()
    let down = false
    const flaky: Store = {
      ...inner,
      hasTenants: () => (down ? Promise.reject(new Error('the disk is gone')) : inner.hasTenants()),
    }
    const handler = createHttpHandler(createService({ store: flaky, clock: manualClock(), runner: null }))
    expect((await handler(new Request('http://vault/readyz'))).status).toBe(200)
    down = true
    const unready = await handler(new Request('http://vault/readyz'))
    expect(unready.status).toBe(503)
    expect(unready.headers.get('retry-after')).toBe('1')
    down = false
    expect((await handler(new Request('http://vault/readyz'))).status).toBe(200)
  })
})

describe('the CLI server', () => {
  it('--cors-origin (corsOrigins) lets that origin preflight the API', async () => {
    const { serve } = await import('../../bin/serve.js')
    const server = await serve({
      port: 0,
      host: '127.0.0.1',
      store: 'memory',
      headerPrefix: 'SVC',
      corsOrigins: [APP],
      print: () => {},
      log: () => {},
    })
    try {
      const response = await fetch(`${server.url}/sessions`, {
        method: 'OPTIONS',
        headers: { origin: APP, 'access-control-request-method': 'POST' },
      })
      expect(response.status).toBe(204)
      expect(response.headers.get('access-control-allow-origin')).toBe(APP)
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200)
    } finally {
      await server.close()
    }
  })
})

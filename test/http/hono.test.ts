import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
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

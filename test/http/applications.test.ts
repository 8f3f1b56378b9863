import { describe, expect, it } from 'vitest'
import { empty, json, problem, setup } from './setup.js'

describe('applications over HTTP', () => {
  it('creates 201 (with the key once), lists 200, gets 200, replaces 200, deletes 204', async () => {
    const { call, keys } = await setup()
    const created = await json<{ id: string; key: string; type: string }>(
      await call('POST', '/applications', {
        key: keys.management,
        body: { name: 'backend', type: 'private', permissions: ['token:read'] },
      }),
      201,
    )
    expect(created.key).toMatch(/^key_/)
    expect(created.type).toBe('private')

    const page = await json<{ pagination: Record<string, number>; data: { id: string }[] }>(
      await call('GET', '/applications?size=2&page=2', { key: keys.management }),
      200,
    )
    // setup made three applications; this is the fourth.
    expect(page.pagination).toEqual({ total_items: 4, page_number: 2, page_size: 2, total_pages: 2 })
    expect(page.data).toHaveLength(2)
    const all = await json<{ data: { id: string }[] }>(
      await call('GET', '/applications/?size=10', { key: keys.management }),
      200,
    )
    expect(all.data.map((a) => a.id)).toContain(created.id)

    const read = await json(await call('GET', `/applications/${created.id}`, { key: keys.management }), 200)
    expect(read).not.toHaveProperty('key')
    expect(read.permissions).toEqual(['token:read'])

    const replaced = await json(
      await call('PUT', `/applications/${created.id}`, {
        key: keys.management,
        body: { name: 'renamed', permissions: ['token:create'] },
      }),
      200,
    )
    expect(replaced).toMatchObject({ name: 'renamed', permissions: ['token:create'] })

    // The new key works until the application is deleted.
    await json(await call('POST', '/tokens', { key: created.key, body: { type: 'x', data: 1 } }), 201)
    await empty(await call('DELETE', `/applications/${created.id}`, { key: keys.management }), 204)
    await problem(await call('GET', `/applications/${created.id}`, { key: keys.management }), 404)
    await problem(await call('POST', '/tokens', { key: created.key, body: { type: 'x', data: 1 } }), 401)
  })

  it('answers 400 naming the field, 403 without permission, 404 for an unknown id', async () => {
    const { call, keys } = await setup()
    const bad = await problem(
      await call('POST', '/applications', {
        key: keys.management,
        body: { name: 'x', type: 'public', permissions: ['token:read'] },
      }),
      400,
    )
    expect(bad.errors).toHaveProperty(['permissions.0'])
    const missing = await problem(
      await call('POST', '/applications', { key: keys.management, body: { type: 'private' } }),
      400,
    )
    expect(missing.errors).toHaveProperty('name')
    await problem(await call('GET', '/applications', { key: keys.full }), 403)
    await problem(await call('GET', '/applications/unknown-id', { key: keys.management }), 404)
    await problem(await call('GET', '/applications?page=x', { key: keys.management }), 400)
  })
})

describe('sessions over HTTP', () => {
  it('creates 201 with a public key, authorizes 200 with an empty body, then the session key works', async () => {
    const { call, keys } = await setup()
    await json(
      await call('POST', '/tokens', { key: keys.full, body: { id: 's1', type: 'x', data: 'secret' } }),
      201,
    )
    const session = await json<{ session_key: string; nonce: string; expires_at: string }>(
      await call('POST', '/sessions', { key: keys.public }),
      201,
    )
    expect(session.expires_at).toBe('2030-01-01T00:03:00.000Z')
    // Not authorized yet: no access.
    await problem(await call('GET', '/tokens/s1', { key: session.session_key }), 403)

    await empty(
      await call('POST', '/sessions/authorize', {
        key: keys.full,
        body: {
          nonce: session.nonce,
          rules: [
            {
              description: 'x',
              priority: 1,
              container: '/',
              transform: 'reveal',
              permissions: ['token:read'],
            },
          ],
        },
      }),
      200,
    )
    expect((await json(await call('GET', '/tokens/s1', { key: session.session_key }), 200)).data).toBe(
      'secret',
    )
    // The nonce is single use.
    await problem(
      await call('POST', '/sessions/authorize', {
        key: keys.full,
        body: { nonce: session.nonce, permissions: ['token:read'] },
      }),
      409,
    )
  })

  it('answers 400 naming the field, 403 for the wrong key type, 404 for an unknown nonce, 401 once expired', async () => {
    const { call, keys, clock } = await setup()
    await problem(await call('POST', '/sessions', { key: keys.full }), 403)
    const session = await json<{ session_key: string; nonce: string }>(
      await call('POST', '/sessions/', { key: keys.public, body: {} }),
      201,
    )
    const none = await problem(
      await call('POST', '/sessions/authorize', { key: keys.full, body: { nonce: session.nonce } }),
      400,
    )
    expect(none.errors).toHaveProperty('permissions')
    await problem(
      await call('POST', '/sessions/authorize', {
        key: keys.public,
        body: { nonce: session.nonce, permissions: ['token:read'] },
      }),
      403,
    )
    await problem(
      await call('POST', '/sessions/authorize', {
        key: keys.full,
        body: { nonce: 'nope', permissions: ['token:read'] },
      }),
      404,
    )
    clock.advance(3 * 60_000)
    await problem(await call('GET', '/tokens/x', { key: session.session_key }), 401)
  })
})

import { describe, expect, it } from 'vitest'
import { ALL_TOKEN, json, REVEAL_ALL, setup } from './setup.js'

describe('the handler reusing clients between requests', () => {
  it('still checks the key on every request: a deleted application is refused at once', async () => {
    const { call, keys } = await setup()
    const app = await json<{ id: string; key: string }>(
      await call('POST', '/applications', {
        key: keys.management,
        body: { name: 'short-lived', type: 'private', permissions: ALL_TOKEN, rules: REVEAL_ALL },
      }),
      201,
    )
    const token = await json<{ id: string }>(
      await call('POST', '/tokens', { key: app.key, body: { type: 'token', data: 'secret' } }),
      201,
    )
    for (let i = 0; i < 3; i++) {
      const read = await json<{ data: unknown }>(
        await call('GET', `/tokens/${token.id}`, { key: app.key }),
        200,
      )
      expect(read.data).toBe('secret')
    }
    expect((await call('DELETE', `/applications/${app.id}`, { key: keys.management })).status).toBe(204)
    expect((await call('GET', `/tokens/${token.id}`, { key: app.key })).status).toBe(401)
    expect((await call('POST', '/tokens', { key: app.key, body: { type: 'token', data: 1 } })).status).toBe(
      401,
    )
  })

  it("answers each key's requests as that key, interleaved: another key's reads and rules never apply", async () => {
    const { call, keys, keyFor } = await setup()
    const token = await json<{ id: string }>(
      await call('POST', '/tokens', { key: keys.full, body: { type: 'token', data: 'secret' } }),
      201,
    )
    const masked = await keyFor(
      'private',
      ['token:read'],
      [{ description: 'mask', priority: 1, container: '/', transform: 'mask', permissions: ['token:read'] }],
    )
    const none = await keyFor('private', ['token:create'])
    for (let i = 0; i < 3; i++) {
      const full = await json<{ data: unknown }>(
        await call('GET', `/tokens/${token.id}`, { key: keys.full }),
        200,
      )
      expect(full.data).toBe('secret')
      const other = await json<{ data: unknown }>(
        await call('GET', `/tokens/${token.id}`, { key: masked }),
        200,
      )
      expect(other.data).not.toBe('secret')
      expect((await call('GET', `/tokens/${token.id}`, { key: none })).status).toBe(403)
      expect((await call('GET', `/tokens/${token.id}`, { key: `${keys.full}x` })).status).toBe(401)
    }
  })
})

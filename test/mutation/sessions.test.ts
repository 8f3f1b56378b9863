/**
 * A session's nonce is single-use: once it authorized the session, authorizing again with it answers
 * 409 and leaves the first grant as it was (a used nonce can't widen a session). An `expires_at`
 * must be in the future: the present instant is refused with 400 on that field, changing nothing.
 */
import { describe, expect, it } from 'vitest'
import { failure, setup } from '../core/setup.js'

describe('session authorization', () => {
  it('a used nonce answers 409 and the session keeps its first grant', async () => {
    const s = await setup()
    await s.client.tokens.create({ id: 't1', type: 'token', data: 'x' })
    const pub = await s.keyFor('public', ['token:create'])
    const { session_key, nonce } = await pub.client.sessions.create()
    await s.client.sessions.authorize({ nonce, permissions: ['token:create'] })
    const again = await failure(
      s.client.sessions.authorize({ nonce, permissions: ['token:create', 'token:read'] }),
    )
    expect([again.code, again.message]).toEqual(['conflict', 'the nonce has already been used'])
    const session = s.service.connect(session_key)
    expect((await failure(session.tokens.get('t1'))).code).toBe('forbidden')
    expect((await session.tokens.create({ type: 'token', data: 'y' })).id).toBeTypeOf('string')
  })

  it('expires_at at the present instant or before is a 400 on expires_at, and the nonce stays usable', async () => {
    const s = await setup()
    const pub = await s.keyFor('public', ['token:create'])
    const { session_key, nonce } = await pub.client.sessions.create()
    const now = s.clock.now().getTime()
    for (const at of [now, now - 1]) {
      const refused = await failure(
        s.client.sessions.authorize({
          nonce,
          permissions: ['token:create'],
          expires_at: new Date(at).toISOString(),
        }),
      )
      expect([refused.code, refused.message]).toEqual([
        'validation_failed',
        'expires_at: must be in the future',
      ])
    }
    await s.client.sessions.authorize({
      nonce,
      permissions: ['token:create'],
      expires_at: new Date(now + 1).toISOString(),
    })
    expect((await s.service.connect(session_key).tokens.create({ type: 'token', data: 'y' })).id).toBeTypeOf(
      'string',
    )
  })
})

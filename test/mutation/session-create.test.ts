/**
 * Session create and authorize as docs/limits.md and docs/http-api.md promise them, each at its
 * boundary: a tenant holds at most `maxUnauthorizedSessionsPerTenant` sessions not yet authorized
 * (the next create answers 429 with `Retry-After` the session lifetime in whole seconds, at least 1);
 * a tenant at its bound sweeps expired sessions first, and only a place that is then free counts
 * (an expired *authorized* session swept takes no place of an unauthorized one); a created session
 * holds no permission until authorized; every refusal names what was refused. Manual clock only.
 */
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, type ServiceOptions } from '../../entry/index.js'
import { failure } from '../core/setup.js'

async function vault(options: Partial<ServiceOptions> = {}) {
  const clock = manualClock('2030-01-01T00:00:00.000Z')
  const store = memoryStore()
  const service = createService({ store, clock, runner: null, ...options })
  const tenant = await service.admin.createTenant({ name: 't' })
  const key = async (type: 'private' | 'public') =>
    (
      await service.admin.createApplication({
        tenantId: tenant.id,
        name: type,
        type,
        permissions: ['token:create'],
      })
    ).key
  const privateKey = await key('private')
  const publicKey = await key('public')
  return {
    clock,
    store,
    service,
    tenant,
    pub: service.connect(publicKey),
    priv: service.connect(privateKey),
  }
}

describe('sessions not yet authorized, at a bound of 3', () => {
  it('the 3rd session is made, the 4th answers 429 naming the bound, with Retry-After 180 by default', async () => {
    const { pub, service } = await vault({ maxUnauthorizedSessionsPerTenant: 3 })
    for (let n = 0; n < 3; n++) await pub.sessions.create()
    const refused = await failure(pub.sessions.create())
    expect([refused.code, refused.retryAfterSec]).toEqual(['too_many_requests', 180])
    expect(refused.message).toContain('3 sessions not yet authorized')
    await service.close()
  })

  it('Retry-After is the lifetime rounded up to whole seconds, never below 1', async () => {
    for (const [ttl, seconds] of [
      [1500, 2],
      [1000, 1],
      [200, 1],
    ] as const) {
      const { pub, service } = await vault({ maxUnauthorizedSessionsPerTenant: 1, sessionTtlMs: ttl })
      await pub.sessions.create()
      expect((await failure(pub.sessions.create())).retryAfterSec).toBe(seconds)
      await service.close()
    }
  })

  it('an expired unauthorized session frees its place with no sweep by the host', async () => {
    const { pub, clock, service, store, tenant } = await vault({
      maxUnauthorizedSessionsPerTenant: 3,
      sessionTtlMs: 1000,
    })
    await pub.sessions.create()
    clock.advance(500)
    await pub.sessions.create()
    await pub.sessions.create()
    clock.advance(500)
    // The first has expired (1000 ms), the other two have 500 ms left: one place frees, no more.
    await pub.sessions.create()
    expect((await failure(pub.sessions.create())).code).toBe('too_many_requests')
    expect(await store.countRecords(tenant.id, 'session.created')).toBe(3)
    await service.close()
  })

  it('an expired authorized session swept at the bound frees no place: the 4th is still refused', async () => {
    const { pub, priv, clock, service } = await vault({ maxUnauthorizedSessionsPerTenant: 3 })
    const first = await pub.sessions.create()
    const at = clock.now().getTime()
    await priv.sessions.authorize({
      nonce: first.nonce,
      permissions: ['token:create'],
      expires_at: new Date(at + 1000).toISOString(),
    })
    for (let n = 0; n < 3; n++) await pub.sessions.create()
    clock.advance(1000)
    expect((await failure(pub.sessions.create())).code).toBe('too_many_requests')
    await service.close()
  })
})

describe('a session before and at authorization', () => {
  it('is created holding no permission at all', async () => {
    const { pub, store, service } = await vault()
    await pub.sessions.create()
    const sessions = (await store.dump()).sessions
    expect(sessions.map((s) => [s.state, s.permissions, s.rules])).toEqual([['created', [], undefined]])
    await service.close()
  })

  it('each refusal names what was refused', async () => {
    const { pub, priv, service } = await vault()
    const byPrivate = await failure(priv.sessions.create())
    expect([byPrivate.code, byPrivate.message]).toEqual([
      'forbidden',
      'creating a session needs a public application key',
    ])
    const { nonce } = await pub.sessions.create()
    const byPublic = await failure(pub.sessions.authorize({ nonce, permissions: ['token:create'] }))
    expect([byPublic.code, byPublic.message]).toEqual([
      'forbidden',
      'authorizing a session needs a private application key',
    ])
    const unknown = await failure(
      priv.sessions.authorize({ nonce: 'no-such-nonce', permissions: ['token:create'] }),
    )
    expect([unknown.code, unknown.message]).toEqual(['not_found', 'session not found'])
    await service.close()
  })
})

import { describe, expect, it } from 'vitest'
import { sha256 } from '../../src/kernel/ids.js'
import { failure, setup } from './setup.js'

describe('sessions', () => {
  it('lives its lifecycle on the manual clock: create → 403 → authorize → use → expire → 401', async () => {
    const { keyFor, client, clock, service, store } = await setup()
    const token = await client.tokens.create({ type: 'x', data: 'secret', mask: 'm' })
    const pub = await keyFor('public', ['token:create'])
    const created = await pub.client.sessions.create()
    expect(created.session_key).toMatch(/^key_/)
    expect(created.nonce.length).toBeGreaterThan(20)
    expect(created.expires_at).toBe('2030-01-01T00:03:00.000Z')
    const session = service.connect(created.session_key)
    expect((await failure(session.tokens.get(token.id))).code).toBe('forbidden')
    expect((await failure(session.tokens.create({ type: 'x', data: 1 }))).code).toBe('forbidden')
    expect((await failure(session.transactions.create())).code).toBe('forbidden')

    clock.advance(60_000)
    await client.sessions.authorize({ nonce: created.nonce, permissions: ['token:read'] })
    expect((await session.tokens.get(token.id)).data).toBe('m')
    expect((await failure(session.tokens.create({ type: 'x', data: 1 }))).code).toBe('forbidden')
    expect((await failure(session.tokens.delete(token.id))).code).toBe('forbidden')

    clock.advance(2 * 60_000)
    expect((await failure(session.tokens.get(token.id))).code).toBe('unauthenticated')
    expect((await store.dump()).sessions).toEqual([])
  })

  it('stores only hashes of the session key and nonce', async () => {
    const { keyFor, store } = await setup()
    const pub = await keyFor('public', ['token:create'])
    const { session_key, nonce } = await pub.client.sessions.create()
    const text = JSON.stringify(await store.dump())
    expect(text).not.toContain(session_key)
    expect(text).not.toContain(nonce)
    expect(text).toContain(sha256(session_key))
    expect(text).not.toContain(pub.key)
  })

  it('the nonce is single-use: of 100 concurrent authorizations exactly one succeeds, the rest 409', async () => {
    const { keyFor, client } = await setup()
    const pub = await keyFor('public', ['token:create'])
    const { nonce } = await pub.client.sessions.create()
    const results = await Promise.allSettled(
      Array.from({ length: 100 }, () => client.sessions.authorize({ nonce, permissions: ['token:read'] })),
    )
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
    const codes = results.flatMap((r) => (r.status === 'rejected' ? [r.reason.code] : []))
    expect(new Set(codes)).toEqual(new Set(['conflict']))
  })

  it('unknown or expired nonce → not_found; authorize expires_at replaces the expiry', async () => {
    const { keyFor, client, clock, service } = await setup()
    const pub = await keyFor('public', ['token:create'])
    expect(
      (await failure(client.sessions.authorize({ nonce: 'nope', permissions: ['token:read'] }))).code,
    ).toBe('not_found')
    const old = await pub.client.sessions.create()
    clock.advance(3 * 60_000)
    expect(
      (await failure(client.sessions.authorize({ nonce: old.nonce, permissions: ['token:read'] }))).code,
    ).toBe('not_found')
    const fresh = await pub.client.sessions.create()
    await client.sessions.authorize({
      nonce: fresh.nonce,
      permissions: ['token:create'],
      expires_at: '2030-01-01T01:00:00Z',
    })
    clock.advance(30 * 60_000)
    await service.connect(fresh.session_key).tokens.create({ type: 'x', data: 1 })
    clock.advance(30 * 60_000)
    expect(
      (await failure(service.connect(fresh.session_key).tokens.create({ type: 'x', data: 1 }))).code,
    ).toBe('unauthenticated')
  })

  it('only public keys create sessions; only private keys of the same tenant authorize them', async () => {
    const { keyFor, client, service } = await setup()
    expect((await failure(client.sessions.create())).code).toBe('forbidden')
    const pub = await keyFor('public', ['token:create'])
    const { nonce } = await pub.client.sessions.create()
    expect(
      (await failure(pub.client.sessions.authorize({ nonce, permissions: ['token:create'] }))).code,
    ).toBe('forbidden')
    const mgmt = await keyFor('management', ['application:read'])
    expect(
      (await failure(mgmt.client.sessions.authorize({ nonce, permissions: ['token:create'] }))).code,
    ).toBe('forbidden')
    const other = await service.admin.createTenant({ name: 'other' })
    const foreign = await keyFor('private', ['token:read'], undefined, other.id)
    expect(
      (await failure(foreign.client.sessions.authorize({ nonce, permissions: ['token:read'] }))).code,
    ).toBe('not_found')
    await client.sessions.authorize({ nonce, permissions: ['token:read'] })
  })

  it('never grants a permission the authorizer lacks, nor over a scope it lacks it on (docs/guides/govern/sessions.mdx)', async () => {
    const { keyFor, client } = await setup()
    const pub = await keyFor('public', ['token:create'])
    const reader = await keyFor('private', ['token:read'])
    const n1 = (await pub.client.sessions.create()).nonce
    expect(
      (await failure(reader.client.sessions.authorize({ nonce: n1, permissions: ['token:delete'] }))).code,
    ).toBe('forbidden')
    const reveal = {
      description: '',
      priority: 1,
      container: '/',
      transform: 'reveal' as const,
      permissions: ['token:read' as const],
    }
    expect(
      (
        await failure(
          reader.client.sessions.authorize({
            nonce: n1,
            rules: [{ ...reveal, permissions: ['token:read', 'token:delete'] }],
          }),
        )
      ).code,
    ).toBe('forbidden')
    // The transform is not capped: the reader's own reads are masked, yet it may grant reveal.
    await reader.client.sessions.authorize({ nonce: n1, rules: [reveal] })
    // A scoped authorizer can grant within its scope only, with any transform.
    const scoped = await keyFor('private', [], [{ ...reveal, container: '/pci/', transform: 'redact' }])
    const n2 = (await pub.client.sessions.create()).nonce
    expect((await failure(scoped.client.sessions.authorize({ nonce: n2, rules: [reveal] }))).code).toBe(
      'forbidden',
    )
    expect(
      (
        await failure(
          scoped.client.sessions.authorize({ nonce: n2, rules: [{ ...reveal, container: '/general/' }] }),
        )
      ).code,
    ).toBe('forbidden')
    await scoped.client.sessions.authorize({ nonce: n2, rules: [{ ...reveal, container: '/pci/high/' }] })
    // The full-access key (a rule on '/') may grant reveal everywhere, by id condition too.
    const n3 = (await pub.client.sessions.create()).nonce
    await client.sessions.authorize({
      nonce: n3,
      rules: [
        reveal,
        {
          description: '',
          priority: 2,
          conditions: [{ attribute: 'id', operator: 'equals', value: 'x' }],
          transform: 'reveal',
          permissions: ['token:read'],
        },
      ],
    })
  })

  it('the guide flow: a private app with token:create and token:read grants a reveal rule on one token id (docs/guides/govern/sessions.mdx)', async () => {
    const { keyFor, service } = await setup()
    const backend = await keyFor('private', ['token:create', 'token:read'])
    const token = await backend.client.tokens.create({
      type: 'token',
      data: { first_name: 'Luke', social_security_number: '111-22-3333' },
      containers: ['/'],
    })
    await backend.client.tokens.create({ id: 'other', type: 'token', data: 'secret', containers: ['/'] })
    const pub = await keyFor('public', ['token:create'])
    const { session_key, nonce } = await pub.client.sessions.create()
    await backend.client.sessions.authorize({
      nonce,
      rules: [
        {
          description: 'Allow reading only our token',
          priority: 1,
          conditions: [{ attribute: 'id', operator: 'equals', value: token.id }],
          permissions: ['token:read'],
          transform: 'reveal',
        },
      ],
    })
    const session = service.connect(session_key)
    expect((await session.tokens.get(token.id)).data).toEqual({
      first_name: 'Luke',
      social_security_number: '111-22-3333',
    })
    expect((await failure(session.tokens.get('other'))).code).toBe('forbidden')
    // The backend's own read stays masked (no mask: no data).
    expect((await backend.client.tokens.get(token.id)).data).toBeUndefined()
  })

  it('session rules need conditions or a container, not both (docs/api/applications/applications.mdx#access-rules)', async () => {
    const { keyFor, client } = await setup()
    const pub = await keyFor('public', ['token:create'])
    const { nonce } = await pub.client.sessions.create()
    const bare = {
      description: '',
      priority: 1,
      transform: 'reveal' as const,
      permissions: ['token:read' as const],
    }
    const neither = await failure(client.sessions.authorize({ nonce, rules: [bare] }))
    expect(neither.code).toBe('validation_failed')
    const both = await failure(
      client.sessions.authorize({
        nonce,
        rules: [
          { ...bare, container: '/', conditions: [{ attribute: 'id', operator: 'equals', value: 'a' }] },
        ],
      }),
    )
    expect(both.code).toBe('validation_failed')
    await client.sessions.authorize({ nonce, rules: [{ ...bare, container: '/' }] })
  })

  it('a session granted rules reads exactly what they allow', async () => {
    const { keyFor, client, service } = await setup()
    await client.tokens.create({ id: 'pci', type: 'x', data: 'card', containers: ['/pci/'] })
    await client.tokens.create({ id: 'gen', type: 'x', data: 'note', containers: ['/general/'] })
    const pub = await keyFor('public', ['token:create'])
    const s = await pub.client.sessions.create()
    await client.sessions.authorize({
      nonce: s.nonce,
      rules: [
        {
          description: '',
          priority: 1,
          container: '/pci/',
          transform: 'reveal',
          permissions: ['token:read'],
        },
      ],
    })
    const session = service.connect(s.session_key)
    expect((await session.tokens.get('pci')).data).toBe('card')
    expect((await failure(session.tokens.get('gen'))).code).toBe('forbidden')
  })

  it('admin sweep deletes expired sessions', async () => {
    const { keyFor, clock, service, store } = await setup({ sessionTtlMs: 1000 })
    const pub = await keyFor('public', ['token:create'])
    await pub.client.sessions.create()
    clock.advance(999)
    expect(await service.admin.sweep()).toEqual({
      sessions: 0,
      applications: 0,
      transactions: 0,
      tokens: 0,
      cvcs: 0,
      endedTransactions: 0,
      idempotency: 0,
      tokenIntents: 0,
    })
    clock.advance(1)
    expect(await service.admin.sweep()).toEqual({
      sessions: 1,
      applications: 0,
      transactions: 0,
      tokens: 0,
      cvcs: 0,
      endedTransactions: 0,
      idempotency: 0,
      tokenIntents: 0,
    })
    expect((await store.dump()).sessions).toEqual([])
  })
})

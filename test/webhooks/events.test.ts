/**
 * Each event type tokenvault sends, from the write that makes it: token created, updated, deleted,
 * expired (the sweep); application created, updated, deleted; reactor created, updated, deleted;
 * session created, authorized; proxy created, updated, deleted. Never a secret in an event: no
 * token data, no key, no key hash, no proxy configuration or code.
 */
import { describe, expect, it } from 'vitest'
import { SENT_EVENT_TYPES } from '../../src/webhooks/index.js'
import { createTestVault } from '../../testing/index.js'

const RECEIVER = 'https://hooks.example.test'

async function subscribed() {
  const v = await createTestVault({ destinations: { [RECEIVER]: () => new Response(null, { status: 200 }) } })
  await v
    .client('management')
    .webhooks.create({ name: 'all', url: `${RECEIVER}/in`, events: [...SENT_EVENT_TYPES] })
  const events = async () => {
    await v.webhooks.deliverDue()
    return v.proxy
      .received(RECEIVER)
      .map((r) => JSON.parse(r.body).event as { type: string; data: Record<string, { id: string }> })
  }
  return { v, events }
}

type Got = { type: string; data: Record<string, { id: string }> }
// Deliveries run concurrently (signatures on the thread pool), so they may arrive in any order.
const sorted = (types: string[]) => [...types].sort()
const typesOf = (got: Got[]) => sorted(got.map((e) => e.type))
const byType = (got: Got[], type: string) => got.find((e) => e.type === type)!

describe('event types', () => {
  it('token.created, token.updated, token.deleted and token.expired', async () => {
    const { v, events } = await subscribed()
    const client = v.client()
    const t = await client.tokens.create({ type: 'token', data: 'pan-4111' })
    await client.tokens.update(t.id, { metadata: { a: 'b' } })
    await client.tokens.delete(t.id)
    await client.tokens.create({ type: 'token', data: 'later', expires_at: '2030-01-01T01:00:00.000Z' })
    v.clock.advance(2 * 60 * 60 * 1000)
    await v.service.admin.sweep()
    const got = await events()
    expect(typesOf(got)).toEqual(
      sorted(['token.created', 'token.updated', 'token.deleted', 'token.created', 'token.expired']),
    )
    expect(byType(got, 'token.updated').data['token']).toMatchObject({
      id: t.id,
      metadata: { a: 'b' },
      modified_at: expect.any(String),
    })
    expect(byType(got, 'token.deleted').data['token']).toEqual({ id: t.id })
    expect(JSON.stringify(got)).not.toContain('pan-4111')
    await v.close()
  })

  it('application.created, application.updated and application.deleted, without keys', async () => {
    const { v, events } = await subscribed()
    const apps = v.client('management').applications
    const made = await apps.create({ name: 'app', type: 'private', permissions: ['token:read'] })
    await apps.update(made.id, { name: 'app 2', permissions: ['token:read'] })
    await apps.delete(made.id)
    const got = await events()
    expect(typesOf(got)).toEqual(
      sorted(['application.created', 'application.updated', 'application.deleted']),
    )
    expect(byType(got, 'application.created').data['application']).toMatchObject({
      id: made.id,
      name: 'app',
      type: 'private',
    })
    expect(JSON.stringify(got)).not.toMatch(/key_|key_hash/)
    await v.close()
  })

  it('reactor.created, reactor.updated and reactor.deleted', async () => {
    const { v, events } = await subscribed()
    const reactors = v.client('management').reactors
    const code = 'module.exports = async function (req) { return { raw: req.args } }'
    const made = await reactors.create({ name: 'r', code })
    await reactors.update(made.id, { name: 'r2', code })
    await reactors.delete(made.id)
    const got = await events()
    expect(typesOf(got)).toEqual(sorted(['reactor.created', 'reactor.updated', 'reactor.deleted']))
    expect(byType(got, 'reactor.updated').data['reactor']).toMatchObject({ id: made.id, name: 'r2' })
    expect(JSON.stringify(got)).not.toContain('module.exports')
    await v.close()
  })

  it('proxy.created, proxy.updated and proxy.deleted, as the reference shows them: never the configuration', async () => {
    const { v, events } = await subscribed()
    const proxies = v.client('management').proxies
    const made = await proxies.create({
      name: 'p',
      destination_url: 'https://api.processor.test/charges',
      configuration: { SECRET: 'canary-proxy-secret' },
      request_transform: { code: 'module.exports = async (req) => req // canary-proxy-code' },
    })
    await proxies.patch(made.id, { name: 'p2' })
    await proxies.update(made.id, { name: 'p3', destination_url: 'https://api.processor.test/v2' })
    await proxies.delete(made.id)
    const got = await events()
    expect(typesOf(got)).toEqual(sorted(['proxy.created', 'proxy.updated', 'proxy.updated', 'proxy.deleted']))
    expect(byType(got, 'proxy.created').data['proxy']).toEqual({
      id: made.id,
      name: 'p',
      destination_url: 'https://api.processor.test/charges',
      require_authentication: true,
      created_at: made.created_at,
      created_by: made.created_by,
    })
    const names = got.filter((e) => e.type === 'proxy.updated').map((e) => e.data['proxy'])
    expect(names).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          name: 'p2',
          modified_at: expect.any(String),
          modified_by: expect.any(String),
        }),
        expect.objectContaining({ name: 'p3', destination_url: 'https://api.processor.test/v2' }),
      ]),
    )
    expect(byType(got, 'proxy.deleted').data['proxy']).toEqual({ id: made.id })
    for (const canary of ['canary-proxy-secret', 'canary-proxy-code'])
      expect(JSON.stringify(got)).not.toContain(canary)
    await v.close()
  })

  it('session.created and session.authorized', async () => {
    const { v, events } = await subscribed()
    const session = await v.client('public').sessions.create()
    await v.client().sessions.authorize({ nonce: session.nonce, permissions: ['token:read'] })
    const got = await events()
    expect(typesOf(got)).toEqual(sorted(['session.created', 'session.authorized']))
    expect(byType(got, 'session.authorized').data['session']).toMatchObject({ permissions: ['token:read'] })
    expect(JSON.stringify(got)).not.toContain(session.session_key)
    expect(JSON.stringify(got)).not.toContain(session.nonce)
    await v.close()
  })

  it('token-intent.created, token-intent.converted and token-intent.deleted; none when an intent expires', async () => {
    const { v, events } = await subscribed()
    const client = v.client()
    const card = { number: '4111111111111111', expiration_month: 1, expiration_year: 2032 }
    const converted = await client.tokenIntents.create({ type: 'card', data: card })
    const token = await client.tokens.create({ token_intent_id: converted.id })
    const deleted = await client.tokenIntents.create({ type: 'card', data: card })
    await client.tokenIntents.delete(deleted.id)
    await client.tokenIntents.create({ type: 'card', data: card })
    v.clock.advance(24 * 60 * 60 * 1000)
    expect((await v.service.admin.sweep()).tokenIntents).toBe(1)
    const got = await events()
    expect(typesOf(got)).toEqual(
      sorted([
        'token-intent.created',
        'token-intent.created',
        'token-intent.created',
        'token.created',
        'token-intent.converted',
        'token-intent.deleted',
      ]),
    )
    const created = got.find(
      (e) => e.type === 'token-intent.created' && e.data['token_intent']?.id === converted.id,
    )
    expect(created?.data['token_intent']).toMatchObject({
      id: converted.id,
      type: 'card',
      card: { last4: '1111' },
    })
    expect(byType(got, 'token-intent.converted').data).toMatchObject({
      token_intent: { id: converted.id },
      token: { id: token.id, type: 'card' },
    })
    expect(byType(got, 'token-intent.deleted').data).toMatchObject({ token_intent: { id: deleted.id } })
    expect(JSON.stringify(got)).not.toContain('4111111111111111')
    await v.close()
  })
})

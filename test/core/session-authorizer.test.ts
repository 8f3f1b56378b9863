/**
 * A session holds its grant only while the key that authorized it stands: deleting the authorizing
 * application, deleting or regenerating that key, the application expiring, or its permissions
 * narrowed below what it granted ends the session
 * (401, and it is deleted); a session is stored expiring no later than its authorizer.
 */
import { describe, expect, it } from 'vitest'
import { failure, setup } from './setup.js'

async function world() {
  const s = await setup()
  const token = await s.client.tokens.create({ type: 'x', data: 'secret', mask: 'm' })
  const pub = await s.keyFor('public', ['token:create'])
  const admin = await s.keyFor('management', [
    'application:create',
    'application:read',
    'application:update',
    'application:delete',
  ])
  const authorizer = await s.keyFor('private', ['token:read'])
  /** A session authorized by `by` for a day, and its client. */
  const session = async (by = authorizer.client) => {
    const created = await pub.client.sessions.create()
    await by.sessions.authorize({
      nonce: created.nonce,
      permissions: ['token:read'],
      expires_at: '2030-01-02T00:00:00.000Z',
    })
    return s.service.connect(created.session_key)
  }
  return { ...s, token, admin, authorizer, session }
}

describe('a session and the key that authorized it', () => {
  it('works while the key stands; deleting the application ends it (401, deleted)', async () => {
    const { token, admin, authorizer, session, store } = await world()
    const mine = await session()
    expect((await mine.tokens.get(token.id)).data).toBe('m')
    await admin.client.applications.delete(authorizer.application.id)
    expect((await failure(mine.tokens.get(token.id))).code).toBe('unauthenticated')
    expect((await store.dump()).sessions).toEqual([])
  })

  it('ends when that key is regenerated or deleted; a session another key authorized goes on', async () => {
    const { token, admin, authorizer, session, service } = await world()
    const first = await session()
    const regenerated = await admin.client.applications.regenerateKey(authorizer.application.id)
    expect((await failure(first.tokens.get(token.id))).code).toBe('unauthenticated')
    const byNew = await session(service.connect(regenerated.key!))
    const extra = await admin.client.applicationKeys.create(authorizer.application.id)
    const byExtra = await session(service.connect(extra.key!))
    await admin.client.applicationKeys.delete(authorizer.application.id, extra.id)
    expect((await failure(byExtra.tokens.get(token.id))).code).toBe('unauthenticated')
    expect((await byNew.tokens.get(token.id)).data).toBe('m')
  })

  it('ends when its authorizer no longer holds what it granted; widening the authorizer changes nothing', async () => {
    const { token, admin, authorizer, session } = await world()
    const mine = await session()
    const id = authorizer.application.id
    await admin.client.applications.update(id, { name: 'wider', permissions: ['token:read', 'token:create'] })
    expect((await mine.tokens.get(token.id)).data).toBe('m')
    await admin.client.applications.update(id, { name: 'narrower', permissions: ['token:create'] })
    expect((await failure(mine.tokens.get(token.id))).code).toBe('unauthenticated')
  })

  it('expires no later than its authorizing application', async () => {
    const { token, pub, clock, service, store, tenant, admin } = await (async () => {
      const w = await world()
      return { ...w, pub: await w.keyFor('public', ['token:create']) }
    })()
    const { key, application } = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'short-lived',
      type: 'private',
      permissions: ['token:read'],
      expires_at: '2030-01-01T01:00:00.000Z',
    })
    const created = await pub.client.sessions.create()
    await service.connect(key).sessions.authorize({
      nonce: created.nonce,
      permissions: ['token:read'],
      expires_at: '2031-01-01T00:00:00.000Z',
    })
    expect((await store.dump()).sessions.map((s) => s.expires_at)).toEqual(['2030-01-01T01:00:00.000Z'])
    const session = service.connect(created.session_key)
    clock.advance(60 * 60_000 - 1)
    expect((await session.tokens.get(token.id)).data).toBe('m')
    clock.advance(1)
    expect((await failure(session.tokens.get(token.id))).code).toBe('unauthenticated')
    expect((await admin.client.applications.get(application.id)).id).toBe(application.id)
  })
})

/**
 * The webhooks API as node-sdk 5 speaks it (`client.webhooks.create/list/get/update/delete/ping`,
 * `client.webhooks.events.list`): the in-process client and the HTTP routes, `webhook:*`
 * permissions, the url checked against the one egress allow-list, at most 5 webhooks per tenant.
 */
import { describe, expect, it } from 'vitest'
import { ServiceError } from '../../entry/index.js'
import { createTestVault } from '../../testing/index.js'

const RECEIVER = 'https://hooks.example.test'

async function vault() {
  return createTestVault({ destinations: { [RECEIVER]: () => new Response(null, { status: 204 }) } })
}

const body = (over: Record<string, unknown> = {}) => ({
  name: 'my hook',
  url: `${RECEIVER}/in`,
  events: ['token.created'],
  ...over,
})

async function refusal(run: () => Promise<unknown>): Promise<ServiceError> {
  try {
    await run()
  } catch (error) {
    if (error instanceof ServiceError) return error
    throw error
  }
  throw new Error('expected a refusal')
}

describe('webhooks API (client)', () => {
  it('creates, lists, gets, updates and deletes a webhook in the reference shape', async () => {
    const v = await vault()
    const hooks = v.client('management').webhooks
    const made = await hooks.create({ ...body(), notify_email: 'ops@example.test' })
    expect(made).toMatchObject({
      tenant_id: v.tenant.id,
      status: 'enabled',
      name: 'my hook',
      url: `${RECEIVER}/in`,
      notify_email: 'ops@example.test',
      events: ['token.created'],
      created_by: v.applications.management.id,
      created_at: '2030-01-01T00:00:00.000Z',
    })
    expect(await hooks.get(made.id)).toEqual(made)
    const listed = await hooks.list()
    expect(listed.data).toEqual([made])
    expect(listed.pagination.total_items).toBe(1)
    v.clock.advance(1000)
    const changed = await hooks.update(
      made.id,
      body({ name: 'renamed', events: ['token:updated'], status: 'disabled' }),
    )
    expect(changed).toMatchObject({
      name: 'renamed',
      events: ['token.updated'],
      status: 'disabled',
      created_at: made.created_at,
      modified_at: '2030-01-01T00:00:01.000Z',
    })
    await hooks.delete(made.id)
    expect((await refusal(() => hooks.get(made.id))).code).toBe('not_found')
    expect((await refusal(() => hooks.delete(made.id))).code).toBe('not_found')
    await v.close()
  })

  it('lists the reference event types, token.created and token.updated among them', async () => {
    const v = await vault()
    const types = await v.client('management').webhooks.eventTypes()
    expect(types).toContain('token.created')
    expect(types).toContain('token.updated')
    expect(types).toContain('token.deleted')
    expect(types).toContain('3ds.session.authenticated')
    await v.close()
  })

  it('needs webhook:create, webhook:read, webhook:update, webhook:delete', async () => {
    const v = await vault()
    const made = await v.client('management').webhooks.create(body())
    const hooks = v.client('private').webhooks
    expect((await refusal(() => hooks.create(body()))).code).toBe('forbidden')
    expect((await refusal(() => hooks.list())).code).toBe('forbidden')
    expect((await refusal(() => hooks.get(made.id))).code).toBe('forbidden')
    expect((await refusal(() => hooks.eventTypes())).code).toBe('forbidden')
    expect((await refusal(() => hooks.update(made.id, body()))).code).toBe('forbidden')
    expect((await refusal(() => hooks.delete(made.id))).code).toBe('forbidden')
    await expect(hooks.ping()).resolves.toBeUndefined()
    await v.close()
  })

  it('refuses a url whose origin is not on the egress allow-list, and unknown event types', async () => {
    const v = await vault()
    const hooks = v.client('management').webhooks
    for (const url of [
      'https://elsewhere.example.test/in',
      'http://127.0.0.1:9/in',
      'ftp://hooks.example.test/',
    ]) {
      const error = await refusal(() => hooks.create(body({ url })))
      expect(error.code).toBe('validation_failed')
      expect(Object.keys(error.issues ?? {})).toEqual(['url'])
    }
    const unknown = await refusal(() => hooks.create(body({ events: ['token.exploded'] })))
    expect(unknown.code).toBe('validation_failed')
    expect((await refusal(() => hooks.create(body({ events: [] })))).code).toBe('validation_failed')
    expect((await hooks.list()).data).toEqual([])
    // Spaces and control characters, on create and on update (a CR LF was stored as given).
    const made = await hooks.create(body())
    const base = body().url as string
    for (const url of [`${base}\r\nInjected: 1`, `${base}\t`, `${base} x`, `${base}\u007f`]) {
      const error = await refusal(() => hooks.create(body({ url })))
      expect(error.issues).toEqual({ url: ['must not hold spaces or control characters'] })
      const again = await refusal(() => hooks.update(made.id, body({ url })))
      expect(Object.keys(again.issues ?? {})).toEqual(['url'])
    }
    expect((await hooks.get(made.id)).url).toBe(base)
    await v.close()
  })

  it('a tenant has at most 5 webhooks: the 5th is made, the 6th answers 429', async () => {
    const v = await vault()
    const hooks = v.client('management').webhooks
    for (let i = 0; i < 5; i++) await hooks.create(body({ name: `hook ${i}` }))
    const error = await refusal(() => hooks.create(body({ name: 'one too many' })))
    expect(error.code).toBe('too_many_requests')
    expect((await hooks.list()).pagination.total_items).toBe(5)
    await v.close()
  })
})

describe('webhooks API (HTTP)', () => {
  it('serves /webhooks, /webhooks/event-types and /ping as node-sdk 5 calls them', async () => {
    const v = await vault()
    const key = { 'SVC-API-KEY': v.keys.management, 'content-type': 'application/json' }
    const call = (method: string, path: string, json?: unknown) =>
      v.http(
        new Request(`http://vault${path}`, {
          method,
          headers: key,
          ...(json === undefined ? {} : { body: JSON.stringify(json) }),
        }),
      )
    const created = await call('POST', '/webhooks', body())
    expect(created.status).toBe(201)
    const made = (await created.json()) as { id: string }
    expect((await call('GET', `/webhooks/${made.id}`)).status).toBe(200)
    const listed = (await (await call('GET', '/webhooks')).json()) as { data: unknown[] }
    expect(listed.data).toHaveLength(1)
    const types = (await (await call('GET', '/webhooks/event-types')).json()) as string[]
    expect(types).toContain('token.created')
    expect((await call('PUT', `/webhooks/${made.id}`, body({ name: 'again' }))).status).toBe(200)
    expect((await call('GET', '/ping')).status).toBe(200)
    expect((await call('DELETE', `/webhooks/${made.id}`)).status).toBe(204)
    expect((await call('GET', `/webhooks/${made.id}`)).status).toBe(404)
    const refused = await call('POST', '/webhooks', body({ url: 'https://elsewhere.example.test/' }))
    expect(refused.status).toBe(400)
    await v.close()
  })
})

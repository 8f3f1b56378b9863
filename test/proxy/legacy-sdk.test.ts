/**
 * The legacy SDK, `@basis-theory/basis-theory-js@1.79.3`, unmodified, drives the proxy against the
 * handler on a real socket (`headerPrefix: 'BT'`), the destination on loopback listed in `egress`.
 */
import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import { BasisTheory } from '@basis-theory/basis-theory-js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHttpHandler, toNodeListener } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, type Service } from '../../entry/index.js'
import { loopbackDestination } from './loopback.js'

let destination: Awaited<ReturnType<typeof loopbackDestination>>
let service: Service
let server: Server
let base = ''
let privateKey = ''
let tokenId = ''
let managementKey = ''

beforeAll(async () => {
  destination = await loopbackDestination()
  service = createService({
    store: memoryStore(),
    clock: manualClock('2030-01-01T00:00:00.000Z'),
    runner: null,
    egress: [destination.origin],
  })
  const tenant = await service.admin.createTenant({ name: 'sdk' })
  privateKey = (
    await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'private',
      type: 'private',
      permissions: ['token:create', 'token:use'],
    })
  ).key
  tokenId = (
    await service.connect(privateKey).tokens.create({ type: 'card', data: { number: '4242424242424242' } })
  ).id
  managementKey = (
    await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'management',
      type: 'management',
      permissions: ['proxy:create', 'proxy:read', 'proxy:update', 'proxy:delete'],
    })
  ).key
  server = createServer(toNodeListener(createHttpHandler(service, { headerPrefix: 'BT', log: () => {} })))
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  base = `http://localhost:${address.port}`
})
afterAll(async () => {
  server.closeAllConnections()
  server.close()
  await destination.close()
  await service.close()
})

/** The SDK answers the destination's body as it parsed it (JSON) or as text. */
const parsed = (answer: unknown): unknown => (typeof answer === 'string' ? JSON.parse(answer) : answer)

const sdk = (key: string) => {
  // A variable, as test/http/sdk.test.ts passes it: the SDK's types omit `disableTelemetry`.
  const options = { apiBaseUrl: base, disableTelemetry: true }
  return new BasisTheory().init(key, options)
}

describe('legacy SDK: bt.proxy', () => {
  it('post, put and patch send the detokenized body; get and delete reach the path and query', async () => {
    const bt = await sdk(privateKey)
    const headers = { 'BT-PROXY-URL': `${destination.origin}/api`, 'Content-Type': 'application/json' }
    const body = JSON.stringify({ number: `{{ ${tokenId} | json: '$.number' }}` })
    for (const method of ['post', 'put', 'patch'] as const) {
      const answer = await bt.proxy[method]({ path: 'charges', query: { a: '1' }, headers, body })
      const got = parsed(answer) as { method: string; url: string; body: string }
      expect(got.method).toBe(method.toUpperCase())
      expect(got.url).toBe('/api/charges?a=1')
      expect(JSON.parse(got.body)).toEqual({ number: '4242424242424242' })
    }
    for (const method of ['get', 'delete'] as const) {
      const answer = await bt.proxy[method]({ path: 'charges/ch_1', headers })
      expect((parsed(answer) as { url: string }).url).toBe('/api/charges/ch_1')
    }
  })

  it('a vault failure is the reference’s proxy_error with its status', async () => {
    const bt = await sdk(privateKey)
    const error = await bt.proxy
      .post({
        headers: { 'BT-PROXY-URL': destination.origin, 'Content-Type': 'application/json' },
        body: JSON.stringify({ n: '{{ unknown_token_id }}' }),
      })
      .catch((e: unknown) => e)
    expect((error as { status: number }).status).toBe(400)
    const data = (error as { data: unknown }).data
    const parsed = (typeof data === 'string' ? JSON.parse(data) : data) as { proxy_error: { detail: string } }
    expect(parsed.proxy_error.detail).toContain('Failed to detokenize some tokens: unknown_token_id')
  })
})

describe('legacy SDK: bt.proxies', () => {
  it('create, list, retrieve, update, patch and delete; bt.proxy with BT-PROXY-KEY reaches its destination', async () => {
    const bt = await sdk(managementKey)
    const created = await bt.proxies.create({
      name: 'Stripe',
      destinationUrl: `${destination.origin}/v1`,
      configuration: { SECRET: 'canary-config-value' },
      requireAuth: true,
    })
    expect(created).toMatchObject({
      name: 'Stripe',
      destinationUrl: `${destination.origin}/v1`,
      requireAuth: true,
    })
    expect(created.key).toEqual(expect.any(String))
    expect((await bt.proxies.list()).data.map((p) => p.id)).toEqual([created.id])
    expect((await bt.proxies.retrieve(created.id)).configuration).toEqual({ SECRET: 'canary-config-value' })
    const updated = await bt.proxies.update(created.id, {
      name: 'Stripe 2',
      destinationUrl: `${destination.origin}/v2`,
      requireAuth: true,
    })
    expect(updated.name).toBe('Stripe 2')
    const patched = await bt.proxies.patch(created.id, { name: 'Stripe 3' })
    expect(patched).toMatchObject({ name: 'Stripe 3', destinationUrl: `${destination.origin}/v2` })

    const user = await sdk(privateKey)
    const answer = await user.proxy.post({
      path: 'charges',
      headers: { 'BT-PROXY-KEY': created.key as string, 'Content-Type': 'application/json' },
      body: JSON.stringify({ number: `{{ ${tokenId} | json: '$.number' }}` }),
    })
    const got = parsed(answer) as { url: string; body: string }
    expect(got.url).toBe('/v2/charges')
    expect(JSON.parse(got.body)).toEqual({ number: '4242424242424242' })
    // A forged key (another proxy id, or a MAC changed) is 404, as an unknown proxy.
    const forged = `${(created.key as string).slice(0, -2)}xx`
    const error = await user.proxy
      .post({ headers: { 'BT-PROXY-KEY': forged }, body: '{}' })
      .catch((e: unknown) => e)
    expect((error as { status: number }).status).toBe(404)

    await bt.proxies.delete(created.id)
    expect((await bt.proxies.list()).data).toEqual([])
  })
})

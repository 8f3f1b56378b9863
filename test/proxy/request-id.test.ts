/**
 * A proxy call over HTTP runs as every other route's call: under its request id (`X-Request-Id`,
 * else `BT-TRACE-ID`, else one made), which its audit entries carry and its answer returns, on a
 * view of its key's kept client (one `connect` for many calls of one key).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHttpHandler } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, type Service, systemClock } from '../../entry/index.js'
import type { Store } from '../../src/store/contract.js'
import { loopbackDestination } from './loopback.js'

let destination: Awaited<ReturnType<typeof loopbackDestination>>
beforeAll(async () => {
  destination = await loopbackDestination()
})
afterAll(() => destination.close())

async function setup() {
  const raw: Store = memoryStore()
  const service = createService({
    store: raw,
    clock: systemClock,
    runner: null,
    egress: [destination.origin],
  })
  const tenant = await service.admin.createTenant({ name: 't' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'a',
    type: 'private',
    permissions: ['token:create', 'token:use'],
  })
  const token = await service.connect(key).tokens.create({ type: 'token', data: 'secret-4242' })
  const counter = { connects: 0 }
  const counted: Service = {
    ...service,
    connect: (k, options) => {
      counter.connects++
      return service.connect(k, options)
    },
  }
  const logs = async () => raw.listLogs(tenant.id, { order: 'chain', limit: 10_000 })
  return { service, counted, counter, key, token, logs }
}

describe('proxy over HTTP: request ids', () => {
  it('each call carries its own request id into its audit entries and its answer; one client for the key', async () => {
    const { service, counted, counter, key, token, logs } = await setup()
    const handler = createHttpHandler(counted)
    const before = (await logs()).length
    const call = (headers: Record<string, string>) =>
      handler(
        new Request('http://v/proxy/charges', {
          method: 'POST',
          headers: {
            'BT-API-KEY': key,
            'BT-PROXY-URL': destination.origin,
            'content-type': 'application/json',
            ...headers,
          },
          body: JSON.stringify({ n: `{{ ${token.id} }}` }),
        }),
      )
    const answers = [
      await call({ 'X-Request-Id': 'px-1' }),
      await call({ 'BT-TRACE-ID': 'px-2' }),
      await call({}),
    ]
    expect(answers.map((a) => a.status)).toEqual([201, 201, 201])
    const made = answers[2]!.headers.get('x-request-id')
    expect(answers.map((a) => a.headers.get('x-request-id'))).toEqual(['px-1', 'px-2', made])
    expect(made).toMatch(/^[A-Za-z0-9_-]{21}$/)
    const entries = (await logs()).slice(before)
    expect(entries.length).toBeGreaterThanOrEqual(3)
    const ids = entries.map((e) => e.request_id ?? null)
    expect(new Set(ids)).toEqual(new Set(['px-1', 'px-2', made]))
    // A malformed X-Request-Id gives way to a plain BT-TRACE-ID.
    const both = await call({ 'X-Request-Id': 'bad id!', 'BT-TRACE-ID': 'px-3' })
    expect(both.headers.get('x-request-id')).toBe('px-3')
    expect(ids.filter((id) => id === 'px-1').length).toBe(entries.length / 3)
    expect(counter.connects).toBe(1)
    expect(destination.seen.at(-1)!.body).toBe('{"n":"secret-4242"}')
    await service.close()
  })
})

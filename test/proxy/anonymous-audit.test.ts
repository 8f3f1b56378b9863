/**
 * A call of a `require_auth: false` proxy without an API key (the inbound case) is audited as every
 * call is: one entry in the proxy's tenant, actor `proxy` (its id), entity the proxy, its outcome
 * and the request id the answer carries (`X-Request-Id`, else `BT-TRACE-ID`, else one made). Never
 * the plaintext the third party posted (a canary in the body, query and a header). A refused call
 * whose key is the proxy's is logged as refused; a forged key, in no tenant.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHttpHandler } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, systemClock } from '../../entry/index.js'
import type { Store } from '../../src/store/contract.js'
import { loopbackDestination } from './loopback.js'

const CANARY = 'canary-4111111111111111-inbound'

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
    name: 'm',
    type: 'management',
    permissions: ['proxy:create'],
  })
  const proxies = service.connect(key).proxies
  const open = await proxies.create({
    name: 'inbound',
    destination_url: destination.origin,
    require_auth: false,
  })
  const closed = await proxies.create({ name: 'closed', destination_url: destination.origin })
  const logs = async () => raw.listLogs(tenant.id, { order: 'chain', limit: 10_000 })
  const handler = createHttpHandler(service)
  const call = (proxyKey: string, headers: Record<string, string> = {}) =>
    handler(
      new Request(`http://v/proxy/hook?card=${CANARY}`, {
        method: 'POST',
        headers: {
          'BT-PROXY-KEY': proxyKey,
          'content-type': 'application/json',
          'x-card': CANARY,
          ...headers,
        },
        body: JSON.stringify({ number: CANARY }),
      }),
    )
  return { service, tenant, open, closed, logs, call }
}

describe('proxy without an API key: audited', () => {
  it('each call is one entry with actor proxy and its request id; no plaintext in any entry', async () => {
    const { service, tenant, open, logs, call } = await setup()
    const before = (await logs()).length
    const answers = [
      await call(open.key!, { 'X-Request-Id': 'in-1' }),
      await call(open.key!, { 'BT-TRACE-ID': 'in-2' }),
      await call(open.key!),
    ]
    expect(answers.map((a) => a.status)).toEqual([201, 201, 201])
    expect(destination.seen.at(-1)!.body).toBe(JSON.stringify({ number: CANARY }))
    const made = answers[2]!.headers.get('x-request-id')
    expect(made).toMatch(/^[A-Za-z0-9_-]{21}$/)
    expect(answers.map((a) => a.headers.get('x-request-id'))).toEqual(['in-1', 'in-2', made])
    const entries = (await logs()).slice(before)
    expect(entries).toHaveLength(3)
    for (const [i, entry] of entries.entries()) {
      expect(entry).toMatchObject({
        actor_type: 'proxy',
        actor_id: open.id,
        entity_type: 'proxy',
        entity_id: open.id,
        operation: 'invoke',
        outcome: 'success',
        request_id: ['in-1', 'in-2', made][i],
      })
    }
    expect(JSON.stringify(await logs())).not.toContain(CANARY)
    expect(JSON.stringify(await logs())).not.toContain(open.key!)
    // The entries are in the tenant's chain like any other: it verifies.
    expect((await service.admin.verifyLogs({ tenantId: tenant.id })).ok).toBe(true)
    await service.close()
  })

  it('a proxy that requires a key: 401, logged as refused; a forged key: 401, logged nowhere', async () => {
    const { service, closed, open, logs, call } = await setup()
    const before = (await logs()).length
    const refused = await call(closed.key!, { 'X-Request-Id': 'in-closed' })
    expect(refused.status).toBe(401)
    const forged = `${open.key!.slice(0, -4)}AAAA`
    expect((await call(forged, { 'X-Request-Id': 'in-forged' })).status).toBe(401)
    const entries = (await logs()).slice(before)
    expect(entries).toHaveLength(1)
    expect(entries[0]).toMatchObject({
      actor_type: 'proxy',
      actor_id: closed.id,
      entity_id: closed.id,
      outcome: 'unauthenticated',
      request_id: 'in-closed',
    })
    expect(JSON.stringify(await logs())).not.toContain(CANARY)
    await service.close()
  })

  it('in process: service.proxy.invoke takes the request id', async () => {
    const { service, open, logs } = await setup()
    const before = (await logs()).length
    const answer = await service.proxy.invoke(
      { method: 'POST', proxy_key: open.key!, body: CANARY },
      { requestId: 'in-process-1' },
    )
    expect(answer.status).toBe(201)
    const entries = (await logs()).slice(before)
    expect(entries.map((e) => [e.actor_type, e.request_id, e.outcome])).toEqual([
      ['proxy', 'in-process-1', 'success'],
    ])
    await service.close()
  })
})

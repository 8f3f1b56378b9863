/**
 * `GET /logs` and `GET /logs/entity-types` as the real clients call them, unmodified, on a real
 * socket with `headerPrefix: 'BT'`: the legacy SDK's `bt.logs.list` (1.79.3) and node-sdk 5's
 * `client.logs.list` / `getEntityTypes`.
 */
import { once } from 'node:events'
import { createServer } from 'node:http'
import { BasisTheory } from '@basis-theory/basis-theory-js'
import { BasisTheoryClient } from '@basis-theory/node-sdk'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHttpHandler, toNodeListener } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'

const clock = manualClock(new Date('2030-01-01T00:00:00.000Z'))
const service = createService({ store: memoryStore(), clock, runner: null })
const server = createServer(toNodeListener(createHttpHandler(service, { headerPrefix: 'BT', log: () => {} })))
let url = ''
let management = ''
const tokenIds: string[] = []

beforeAll(async () => {
  const tenant = await service.admin.createTenant({ name: 'sdk' })
  const app = async (type: 'private' | 'management', permissions: string[]) =>
    (
      await service.admin.createApplication({
        tenantId: tenant.id,
        name: type,
        type,
        permissions: permissions as never,
      })
    ).key
  management = await app('management', ['log:read'])
  const writer = service.connect(await app('private', ['token:create', 'token:read']))
  for (let i = 0; i < 3; i++) {
    clock.advance(60_000)
    tokenIds.push((await writer.tokens.create({ type: 'token', data: `v${i}` })).id)
  }
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  url = `http://localhost:${address.port}`
})

afterAll(async () => {
  server.closeAllConnections()
  server.close()
  await service.close()
})

describe('logs through the SDKs', () => {
  it('legacy bt.logs.list filters by entity and date and pages', async () => {
    const options = { apiBaseUrl: url, disableTelemetry: true }
    const bt = await new BasisTheory().init(management, options)
    const page = await bt.logs.list({ entityType: 'token', page: 1, size: 2 })
    expect(page.data.map((e) => e.entityId)).toEqual([tokenIds[2], tokenIds[1]])
    expect(page.data[0]).toMatchObject({ entityType: 'token', operation: 'create', actorType: 'application' })
    const one = await bt.logs.list({ entityType: 'token', entityId: tokenIds[0]! })
    expect(one.data).toHaveLength(1)
    const dated = await bt.logs.list({
      entityType: 'token',
      startDate: '2030-01-01T00:02:00.000Z',
      endDate: '2030-01-01T00:02:00.000Z',
    })
    expect(dated.data.map((e) => e.entityId)).toEqual([tokenIds[1]])
  })

  it('node-sdk client.logs.list pages to the end, and getEntityTypes lists the types', async () => {
    const client = new BasisTheoryClient({ apiKey: management, baseUrl: url, maxRetries: 0 })
    const seen: string[] = []
    for await (const entry of await client.logs.list({ entityType: 'token', size: 1 }))
      seen.push(entry.entityId!)
    expect(seen).toEqual([tokenIds[2], tokenIds[1], tokenIds[0]])
    const types = await client.logs.getEntityTypes()
    expect(types.map((t) => t.value)).toContain('token')
  })
})

/**
 * One kept client per key, a view per call (`client.withCall`): the HTTP handler reuses its key's
 * client for every request, and what one request carries (its request id, the request log's
 * recorder) reaches that request's entries alone, concurrent requests of one key included.
 */
import { describe, expect, it } from 'vitest'
import { createHttpHandler } from '../../adapters/http/index.js'
import { RequestLog } from '../../adapters/http/request-log.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, type Service } from '../../entry/index.js'
import type { AccessTrace, CallRecorder } from '../../src/kernel/index.js'
import type { Store } from '../../src/store/contract.js'

/** A service on a memory store (`raw`: the store below it, to read the audit entries) and a key whose reads are masked. */
async function setup(testMode = false) {
  const raw: Store = memoryStore()
  const clock = manualClock(new Date('2030-01-01T00:00:00.000Z'))
  const options = { store: raw, clock, runner: null }
  const service: Service = testMode ? createService({ ...options, testMode: true }) : createService(options)
  const tenant = await service.admin.createTenant({ name: 'acme' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'writer',
    type: 'private',
    permissions: ['token:create', 'token:read'],
    rules: [
      {
        description: 'all masked',
        priority: 1,
        container: '/',
        transform: 'mask',
        permissions: ['token:create', 'token:read'],
      },
    ],
  })
  const logs = async () => raw.listLogs(tenant.id, { order: 'chain', limit: 10_000 })
  return { service, clock, key, logs }
}

/** `service` counting its `connect` calls. */
function counted(service: Service) {
  const counter = { connects: 0 }
  const wrapped: Service = {
    ...service,
    connect: (key, options) => {
      counter.connects++
      return service.connect(key, options)
    },
  }
  return { wrapped, counter }
}

const create = (key: string, requestId: string, data: string) =>
  new Request('http://v/tokens', {
    method: 'POST',
    headers: { 'svc-api-key': key, 'content-type': 'application/json', 'x-request-id': requestId },
    body: JSON.stringify({ type: 'token', data }),
  })

const get = (key: string, requestId: string, id: string) =>
  new Request(`http://v/tokens/${id}`, { headers: { 'svc-api-key': key, 'x-request-id': requestId } })

/** A recorder keeping what it is told. */
function recording() {
  const journaled: string[] = []
  const decided: AccessTrace[] = []
  const recorder: CallRecorder = {
    decided: (decision) => decided.push(decision.trace()),
    journaled: (entry) => journaled.push(entry.operation),
  }
  return { recorder, journaled, decided }
}

describe('one client per key over HTTP', () => {
  it('connects once for many requests of one key, with request ids, a transaction and the request log', async () => {
    const { service, clock, key } = await setup(true)
    const { wrapped, counter } = counted(service)
    const requestLog = new RequestLog({ now: () => clock.now() })
    const handler = createHttpHandler(wrapped, { requestLog })
    const made = await handler(create(key, 'req-1', 'a'))
    expect(made.status).toBe(201)
    const { id } = (await made.json()) as { id: string }
    expect((await handler(get(key, 'req-2', id))).status).toBe(200)
    expect(
      (
        await handler(
          new Request(`http://v/tokens/${id}`, { method: 'HEAD', headers: { 'svc-api-key': key } }),
        )
      ).status,
    ).toBe(200)
    const tx = await handler(
      new Request('http://v/transactions', { method: 'POST', headers: { 'svc-api-key': key } }),
    )
    expect(tx.status).toBe(201)
    const { id: transactionId } = (await tx.json()) as { id: string }
    const inTx = create(key, 'req-4', 'b')
    inTx.headers.set('svc-transaction-id', transactionId)
    expect((await handler(inTx)).status).toBe(201)
    expect(counter.connects).toBe(1)
    expect(requestLog.list().map((e) => e.operations)).toEqual([
      ['token.create'],
      ['token.get'],
      ['token.get'],
      ['transaction.create'],
      ['token.create'],
    ])
    await service.close()
  })

  it('gives two concurrent requests of one key each its own request id in the audit entries', async () => {
    const { service, key, logs } = await setup()
    const handler = createHttpHandler(service)
    const answers = await Promise.all(
      ['req-a', 'req-b', 'req-c', 'req-d'].map(async (requestId, i) => {
        const answer = await handler(create(key, requestId, `data-${i}`))
        expect(answer.status).toBe(201)
        return { requestId, id: ((await answer.json()) as { id: string }).id }
      }),
    )
    const reads = await Promise.all(
      answers.map(async ({ requestId, id }) => {
        const answer = await handler(get(key, `${requestId}-read`, id))
        expect(answer.status).toBe(200)
        return answer
      }),
    )
    expect(reads).toHaveLength(4)
    const entries = (await logs()).filter((e) => e.entity_type === 'token')
    for (const { requestId, id } of answers) {
      const own = entries
        .filter((e) => e.entity_id === id)
        .map((e) => [e.operation, e.request_id])
        .sort()
      expect(own).toEqual([
        ['create', requestId],
        ['read', `${requestId}-read`],
      ])
    }
    await service.close()
  })

  it('gives two concurrent requests of one key in test mode each its own request log entry', async () => {
    const { service, clock, key } = await setup(true)
    const requestLog = new RequestLog({ now: () => clock.now() })
    const handler = createHttpHandler(service, { requestLog })
    const made = await handler(create(key, 'req-made', 'secret'))
    const { id } = (await made.json()) as { id: string }
    const [read, wrote] = await Promise.all([
      handler(get(key, 'req-read', id)),
      handler(create(key, 'req-write', 'other')),
    ])
    expect([read.status, wrote.status]).toEqual([200, 201])
    const readEntry = requestLog.get('req-read')!
    const writeEntry = requestLog.get('req-write')!
    expect(readEntry.operations).toEqual(['token.get'])
    expect(writeEntry.operations).toEqual(['token.create'])
    expect(readEntry.journal).toHaveLength(1)
    expect(writeEntry.journal).toHaveLength(1)
    expect(readEntry.journal[0]).not.toBe(writeEntry.journal[0])
    // The masked read's trace is the read's alone.
    expect(readEntry.trace?.map((t) => [t.permission, t.token_id])).toEqual([['token:read', id]])
    expect(writeEntry.trace?.every((t) => t.permission === 'token:create')).toBe(true)
    await service.close()
  })
})

describe('client.withCall in process', () => {
  it("carries each view's request id into its calls' entries, and none into the client's", async () => {
    const { service, key, logs } = await setup()
    const client = service.connect(key)
    const [a, b] = await Promise.all([
      client.withCall({ requestId: 'view-a' }).tokens.create({ type: 'token', data: 'a' }),
      client.withCall({ requestId: 'view-b' }).tokens.create({ type: 'token', data: 'b' }),
    ])
    const plain = await client.tokens.create({ type: 'token', data: 'c' })
    const requestOf = async (id: string) =>
      (await logs()).find((e) => e.entity_id === id && e.operation === 'create')?.request_id ?? null
    expect(await requestOf(a.id)).toBe('view-a')
    expect(await requestOf(b.id)).toBe('view-b')
    expect(await requestOf(plain.id)).toBe(null)
    await service.close()
  })

  it("tells each view's recorder of its own calls alone, concurrent views of one client included", async () => {
    const { service, key } = await setup()
    const client = service.connect(key)
    const token = await client.tokens.create({ type: 'token', data: 'secret' })
    const first = recording()
    const second = recording()
    await Promise.all([
      client.withCall({ recorder: first.recorder }).tokens.get(token.id),
      client.withCall({ recorder: second.recorder }).tokens.create({ type: 'token', data: 'x' }),
    ])
    await client.tokens.get(token.id)
    expect(first.journaled).toEqual(['token.get'])
    expect(first.decided.map((t) => t.decision)).toEqual(['mask'])
    expect(second.journaled).toEqual(['token.create'])
    expect(second.decided.every((t) => t.permission === 'token:create')).toBe(true)
    await service.close()
  })

  it("keeps the client's own options unless the view gives its own", async () => {
    const { service, key, logs } = await setup()
    const client = service.connect(key, { requestId: 'client-id' })
    const kept = await client.withCall({}).tokens.create({ type: 'token', data: 'a' })
    const replaced = await client
      .withCall({ requestId: 'view-id' })
      .tokens.create({ type: 'token', data: 'b' })
    const entries = await logs()
    const requestOf = (id: string) => entries.find((e) => e.entity_id === id)?.request_id
    expect(requestOf(kept.id)).toBe('client-id')
    expect(requestOf(replaced.id)).toBe('view-id')
    // The client of `connect` lists its areas, not `withCall` (no method of the API).
    expect(Object.keys(client)).not.toContain('withCall')
    expect(Object.keys(client)).toContain('tokens')
    await service.close()
  })
})

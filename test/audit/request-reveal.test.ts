import { describe, expect, it } from 'vitest'
import { createHttpHandler } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import type { Store } from '../../src/store/contract.js'

/** A service on a memory store (`raw`: the store below it, to read the entries) and a key with rules. */
async function setup() {
  const raw: Store = memoryStore()
  const clock = manualClock(new Date('2030-01-01T00:00:00.000Z'))
  const service = createService({ store: raw, clock, runner: null })
  const tenant = await service.admin.createTenant({ name: 'acme' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'reader',
    type: 'private',
    permissions: ['token:create', 'token:read'],
    rules: [
      {
        description: 'pci',
        priority: 1,
        container: '/pci/',
        transform: 'reveal',
        permissions: ['token:read'],
      },
      {
        description: 'rest',
        priority: 2,
        container: '/',
        transform: 'mask',
        permissions: ['token:create', 'token:read'],
      },
    ],
  })
  const client = service.connect(key)
  const card = await client.tokens.create({ type: 'token', data: 'card-secret', containers: ['/pci/'] })
  const note = await client.tokens.create({
    type: 'token',
    data: 'note-secret',
    containers: ['/general/'],
    mask: '{{ data | reveal_last: 2 }}',
  })
  const entries = async (operation: string) =>
    (await raw.listLogs(tenant.id, { order: 'chain', limit: 10_000 })).filter(
      (e) => e.operation === operation && e.entity_type === 'token',
    )
  return { service, key, client, card, note, entries }
}

describe('audit log: request ids over HTTP', () => {
  it("carries the request's X-Request-Id, else its BT-TRACE-ID, on the entries of reads and writes", async () => {
    const { service, key, card, entries } = await setup()
    const handler = createHttpHandler(service)
    const get = (headers: Record<string, string>) =>
      handler(new Request(`http://v/tokens/${card.id}`, { headers: { 'BT-API-KEY': key, ...headers } }))
    expect((await get({ 'X-Request-Id': 'req-42' })).status).toBe(200)
    expect((await get({ 'BT-TRACE-ID': 'bt-trace-7' })).status).toBe(200)
    const answered = await get({})
    const created = await handler(
      new Request('http://v/tokens', {
        method: 'POST',
        headers: { 'BT-API-KEY': key, 'content-type': 'application/json', 'X-Request-Id': 'req-create' },
        body: JSON.stringify({ type: 'token', data: 'x' }),
      }),
    )
    expect(created.status).toBe(201)
    const reads = (await entries('read')).map((e) => e.request_id)
    expect(reads).toEqual(['req-42', 'bt-trace-7', answered.headers.get('x-request-id')])
    const creates = (await entries('create')).map((e) => e.request_id ?? null)
    // The two tokens of the setup were made in process (no request id), the third over HTTP.
    expect(creates).toEqual([null, null, 'req-create'])
  })
})

describe('audit log: revealed or masked, per token', () => {
  it('says which tokens a read answered revealed and which masked', async () => {
    const { client, card, note, entries } = await setup()
    expect((await client.tokens.get(card.id)).data).toBe('card-secret')
    expect((await client.tokens.get(note.id)).data).toBe('XXXX-XXXXet')
    const page = await client.tokens.list({})
    expect(page.data).toHaveLength(2)
    const seen = (await entries('read')).map((e) => `${e.entity_id} ${e.message}`)
    expect(seen.slice(0, 2)).toEqual([
      `${card.id} token.get: answered revealed`,
      `${note.id} token.get: answered masked`,
    ])
    expect(seen.slice(2).sort()).toEqual(
      [`${card.id} token.list: answered revealed`, `${note.id} token.list: answered masked`].sort(),
    )
  })
})

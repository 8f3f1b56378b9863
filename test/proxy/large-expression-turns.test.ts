/**
 * A proxy request whose expressions name large token data gives other work turns of the event loop
 * (`setImmediate`) while it runs: the token opens in steps of 256 KiB of sealed bytes, and the
 * expressions' filters run in a turn of their own once more than 65 536 characters of token data
 * were read, so another tenant's request runs between them instead of waiting behind the whole
 * request (`npm run bench:attacks`, attack (e): `escape_once` over 1 MB). The answers are the same.
 */
import { randomBytes } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { routedEgress } from '../../adapters/egress/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, type Service, ServiceError } from '../../entry/index.js'
import { turnsWhile } from '../support/turns.js'

const ORIGIN = 'https://dest.test'
let service: Service
afterEach(() => service?.close())

/** A client that may create and use tokens, and the bodies its destination received. */
async function start() {
  const received: string[] = []
  service = createService({
    store: memoryStore(),
    clock: manualClock('2030-01-01T00:00:00.000Z'),
    runner: null,
    masterKey: randomBytes(32),
    auditLog: false,
    egress: [ORIGIN],
    egressClient: routedEgress({
      [ORIGIN]: async (request) => {
        received.push(await request.text())
        return new Response('ok')
      },
    }),
  })
  const tenant = await service.admin.createTenant({ name: 't' })
  const permissions = ['token:create' as const, 'token:use' as const]
  const rules = [
    { description: 'all', priority: 1, container: '/', transform: 'reveal' as const, permissions },
  ]
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'p',
    type: 'private',
    permissions,
    rules,
  })
  return { client: service.connect(key), received }
}

/** How many turns of the event loop other work got while `run` ran, and what it answered or threw. */
async function turnsDuring(run: () => Promise<unknown>): Promise<{ turns: number; outcome: unknown }> {
  const { turns, value } = await turnsWhile(() => run().catch((error: unknown) => error))
  return { turns, outcome: value }
}

type Client = Awaited<ReturnType<typeof start>>['client']

/** A proxy call sending `{ "x": "{{ <id> | <filter> }}" }` to the destination. */
const call = (client: Client, id: string, filter: string) => () =>
  client.proxy.invoke({
    method: 'POST',
    url: ORIGIN,
    headers: { 'content-type': 'application/json' },
    body: new TextEncoder().encode(JSON.stringify({ x: `{{ ${id} | ${filter} }}` })),
  })

describe('a proxy request over large token data takes turns', () => {
  it('escape_once over 1 000 000 `&`: refused past the string limit, nothing sent, other work ran meanwhile', async () => {
    const { client, received } = await start()
    const big = await client.tokens.create({ type: 'amp', data: '&'.repeat(1_000_000) })
    const small = await client.tokens.create({ type: 'amp', data: '&&' })
    const alone = await turnsDuring(call(client, small.id, 'escape_once'))
    expect(received).toEqual(['{"x":"&amp;&amp;"}'])
    const attack = await turnsDuring(call(client, big.id, 'escape_once'))
    expect(attack.outcome).toBeInstanceOf(ServiceError)
    expect((attack.outcome as ServiceError).message).toContain(
      'makes a string longer than 1000000 characters',
    )
    expect(received).toHaveLength(1)
    // 1 000 012 sealed bytes: 4 base64 steps, 4 decrypt steps, the text (a string without an escape
    // is not parsed); then the filters.
    expect(attack.turns).toBeGreaterThanOrEqual(alone.turns + 9)
  })

  it('the filters over more than 65 536 characters of token data run in a turn of their own; the answer is the same', async () => {
    const { client, received } = await start()
    // Both open in one step (under 262 144 sealed bytes): only the turn before the filters differs.
    const under = await client.tokens.create({ type: 'lt', data: '<'.repeat(60_000) })
    const over = await client.tokens.create({ type: 'lt', data: '<'.repeat(70_000) })
    const small = await turnsDuring(call(client, under.id, 'escape'))
    const large = await turnsDuring(call(client, over.id, 'escape'))
    expect(large.turns).toBe(small.turns + 1)
    expect(received).toEqual([
      JSON.stringify({ x: '&lt;'.repeat(60_000) }),
      JSON.stringify({ x: '&lt;'.repeat(70_000) }),
    ])
  })
})

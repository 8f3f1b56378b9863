/**
 * An event's stored body is its own stable serialization (keys sorted), so a delivery puts it in
 * its signed body as it is; a body stored before (JSON.stringify's order, `id` first) is parsed
 * and serialized again. `stableJson` writes exactly what `stableStringify` writes, whatever the
 * order of the keys it is given.
 */
import stringify from 'fast-json-stable-stringify'
import { describe, expect, it } from 'vitest'
import type { OutboxEntry } from '../../src/kernel/index.js'
import type { WriteEffectContext } from '../../src/store/index.js'
import {
  type DerivedEvent,
  deliveryRequest,
  eventBody,
  eventEnvelope,
  stableJson,
  stableStringify,
  TEST_WEBHOOK_PRIVATE_KEY,
  TEST_WEBHOOK_PUBLIC_KEY,
  verifyWebhookSignature,
  webhookSigner,
} from '../../src/webhooks/index.js'
import { createTestVault } from '../../testing/index.js'

const RECEIVER = 'https://hooks.example.test'

describe('stableJson', () => {
  it.each([
    ['sorted keys', { a: 1, b: { c: [1, { d: 'x', e: null }], f: true } }],
    ['unsorted keys', { b: 1, a: { z: 1, y: 2 } }],
    ['unsorted keys deep in an array', { a: [{ b: 1 }, { d: 1, c: 2 }] }],
    ['integer-like keys, which Object.keys puts first', { '10': 'x', '9': 'y', a: 'z' }],
    ['undefined members and array items', { a: undefined, b: [undefined, 1], c: 2 }],
    ['a Date (toJSON)', { a: new Date(0) }],
    ['a function member and array item', { a: () => 1, b: [() => 1] }],
    ['strings needing escapes', { a: 'q"\\\n\u2028\ud800' }],
    ['a bare value', 'text'],
    ['nothing at all (undefined)', undefined],
  ])('writes what stableStringify writes: %s', (_name, value) => {
    expect(stableJson(value)).toBe(stableStringify(value))
  })
})

describe('eventBody', () => {
  const context = (over: Partial<WriteEffectContext>): WriteEffectContext => ({
    tenantId: 't1',
    actorId: 'a1',
    actorType: 'application',
    requestId: 'r1',
    operation: 'token.create',
    now: '2030-01-01T00:00:00.000Z',
    ...over,
  })
  const token = (metadata: Record<string, string>) => ({
    token: {
      containers: ['/general/'],
      created_at: '2030-01-01T00:00:00.000Z',
      id: 'x',
      metadata,
      type: 'token',
    },
  })
  it.each<[string, Partial<WriteEffectContext>, DerivedEvent]>([
    ['a token created by an application', {}, { tenantId: 't1', type: 'token.created', data: token({}) }],
    [
      'no actor id (the sweep)',
      { actorId: null, actorType: 'system', requestId: null },
      { tenantId: 't1', type: 'token.expired', data: { token: { id: 'x' } } },
    ],
    [
      'metadata keys in any order, integer-like among them',
      {},
      { tenantId: 't1', type: 'token.updated', data: token({ z: '1', '10': 'x', '9': 'y', a: '2' }) },
    ],
    [
      'strings needing escapes in every place',
      { actorId: 'a"\\', requestId: 'r\n\u2028"', now: 'n\u0001' },
      { tenantId: 't"1', type: 'token.created', data: token({ 'k"': 'v\ud800' }) },
    ],
    [
      'data of two records',
      {},
      {
        tenantId: 't1',
        type: 'token-intent.converted',
        data: { token_intent: { id: 'i' }, token: { id: 'x', type: 't' } },
      },
    ],
    ['data of no record', {}, { tenantId: 't1', type: 'token.created', data: {} }],
  ])('is the stable serialization of the event envelope: %s', (_name, over, event) => {
    const at = context(over)
    const body = eventBody(at, event, 'e1')
    expect(body).toBe(stableStringify(eventEnvelope(at, event, 'e1')))
    expect(body).toBe(stringify(JSON.parse(body)))
  })
})

describe('the stored body of an event', () => {
  it('is stable as stored and delivered as it is, signed, with metadata keys in any order', async () => {
    const v = await createTestVault({
      destinations: { [RECEIVER]: () => new Response(null, { status: 204 }) },
    })
    await v
      .client('management')
      .webhooks.create({ name: 'h', url: `${RECEIVER}/in`, events: ['token.created'] })
    await v
      .client()
      .tokens.create({ type: 'token', data: 'd', metadata: { z: '1', '10': 'x', '9': 'y', a: '2' } })
    const [entry] = await v.webhooks.deliveries()
    expect(entry!.body.startsWith('{"data":')).toBe(true)
    expect(entry!.body).toBe(stringify(JSON.parse(entry!.body)))
    await v.webhooks.deliverDue()
    const [got] = v.proxy.received(RECEIVER)
    expect(got!.body).toBe(stringify(JSON.parse(got!.body)))
    expect(JSON.parse(got!.body).event).toEqual(JSON.parse(entry!.body))
    expect(JSON.parse(got!.body).event.data.token.metadata).toEqual({ z: '1', '10': 'x', '9': 'y', a: '2' })
    expect(v.webhooks.verify(got!)).toBe(true)
    await v.close()
  })

  it('written before bodies were stable (id first), is delivered stable and verifies', async () => {
    const event = {
      id: 'e1',
      type: 'token.created',
      data: { token: { type: 't', id: 'x' }, actor: { type: 'admin' } },
    }
    const entry: OutboxEntry = {
      tenant_id: 't1',
      id: 'o1',
      kind: 'webhook',
      url: `${RECEIVER}/in`,
      body: JSON.stringify(event),
      created_at: '2030-01-01T00:00:00.000Z',
      state: 'pending',
      due_at: '2030-01-01T00:00:00.000Z',
      attempts: [],
    }
    const signer = webhookSigner(TEST_WEBHOOK_PRIVATE_KEY)
    const { body, headers } = await deliveryRequest({ signer }, entry, '2030-01-01T00:00:01.000Z')
    expect(body).toBe(stringify({ event, delivered_at: '2030-01-01T00:00:01.000Z' }))
    expect(verifyWebhookSignature(body, headers['bt-signature']!, TEST_WEBHOOK_PUBLIC_KEY)).toBe(true)
  })
})

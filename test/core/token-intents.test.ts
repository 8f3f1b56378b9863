import { describe, expect, it } from 'vitest'
import { failure, setup } from './setup.js'

const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031, cvc: '123' }

describe('token intents', () => {
  it('creates an intent answered without its data, with the card summary and a fingerprint', async () => {
    const { client, tenant, full } = await setup()
    const intent = await client.tokenIntents.create({ type: 'card', data: CARD })
    expect(intent).toEqual({
      id: expect.any(String),
      tenant_id: tenant.id,
      type: 'card',
      card: {
        bin: '42424242',
        last4: '4242',
        expiration_month: 12,
        expiration_year: 2031,
        brand: 'visa',
        funding: null,
        authentication: null,
      },
      fingerprint: expect.any(String),
      created_by: full.application.id,
      created_at: '2030-01-01T00:00:00.000Z',
      expires_at: '2030-01-02T00:00:00.000Z',
    })
    expect(intent).not.toHaveProperty('data')
    expect(await client.tokenIntents.get(intent.id)).toEqual(intent)
    // The fingerprint is the one a card token of the same number gets.
    const token = await client.tokens.create({ type: 'card', data: CARD })
    expect(intent.fingerprint).toBe(token.fingerprint)
  })

  it('inside a transaction a conversion answers 400 naming token_intent_id, and stages nothing', async () => {
    const { client, service, full, store } = await setup()
    const intent = await client.tokenIntents.create({ type: 'card', data: CARD })
    const tx = await client.transactions.create()
    const inTx = service.connect(full.key, { transactionId: tx.id })
    const before = await store.dump()
    const one = await failure(inTx.tokens.create({ token_intent_id: intent.id } as never))
    expect([one.code, Object.keys(one.issues ?? {})]).toEqual(['validation_failed', ['token_intent_id']])
    const many = await failure(inTx.tokens.tokenize({ a: { token_intent_id: intent.id } }))
    expect([many.code, Object.keys(many.issues ?? {})]).toEqual(['validation_failed', ['a.token_intent_id']])
    expect(await store.dump()).toEqual(before)
    // Outside it, the intent converts.
    await client.transactions.rollback(tx.id)
    expect((await client.tokens.create({ token_intent_id: intent.id } as never)).type).toBe('card')
  })

  it('answers a bank summary, and a 15-digit card a 6-digit BIN and its brand', async () => {
    const { client } = await setup()
    const bank = await client.tokenIntents.create({
      type: 'bank',
      data: { routing_number: '110000000', account_number: '000123456789' },
    })
    expect(bank.bank).toEqual({ routing_number: '110000000', account_number_last4: '6789' })
    expect(bank.card).toBeUndefined()
    const amex = await client.tokenIntents.create({
      type: 'card',
      data: { number: '378282246310005', expiration_month: 1, expiration_year: 2032 },
    })
    expect(amex.card).toMatchObject({ bin: '378282', last4: '0005', brand: 'american-express' })
  })

  it('keeps the data sealed: no store record holds it in the clear', async () => {
    const { client, store } = await setup()
    await client.tokenIntents.create({ type: 'card', data: { ...CARD, number: '4000056655665556' } })
    const dump = await store.dump()
    expect(dump.token_intents).toHaveLength(1)
    const text = JSON.stringify(dump)
    expect(text).not.toContain('4000056655665556')
    expect(JSON.stringify(dump.token_intents)).not.toContain('"cvc"')
  })

  it('expires a day after it was made: the last millisecond found, the next one not found', async () => {
    const { client, clock, service, store } = await setup()
    const intent = await client.tokenIntents.create({ type: 'card', data: CARD })
    clock.advance(24 * 60 * 60 * 1000 - 1)
    expect((await client.tokenIntents.get(intent.id)).id).toBe(intent.id)
    expect((await service.admin.sweep()).tokenIntents).toBe(0)
    clock.advance(1)
    expect((await failure(client.tokenIntents.get(intent.id))).code).toBe('not_found')
    expect((await failure(client.tokenIntents.delete(intent.id))).code).toBe('not_found')
    expect((await store.dump()).token_intents).toHaveLength(1)
    expect((await service.admin.sweep()).tokenIntents).toBe(1)
    expect((await store.dump()).token_intents).toEqual([])
  })

  it('deletes an intent: then not found', async () => {
    const { client, store } = await setup()
    const intent = await client.tokenIntents.create({ type: 'card', data: CARD })
    await client.tokenIntents.delete(intent.id)
    expect((await failure(client.tokenIntents.get(intent.id))).code).toBe('not_found')
    expect((await failure(client.tokenIntents.delete(intent.id))).code).toBe('not_found')
    expect((await store.dump()).token_intents).toEqual([])
  })

  it('answers another tenant’s intent as unknown, to get, delete and conversion alike', async () => {
    const { client, service, keyFor, store } = await setup()
    const other = await service.admin.createTenant({ name: 'other' })
    const theirs = await keyFor(
      'private',
      ['token-intent:read', 'token-intent:delete', 'token:create'],
      [
        {
          description: 'all',
          priority: 1,
          container: '/',
          transform: 'reveal',
          permissions: ['token:create'],
        },
      ],
      other.id,
    )
    const intent = await client.tokenIntents.create({ type: 'card', data: CARD })
    const missing = await failure(theirs.client.tokenIntents.get(intent.id))
    expect(missing.code).toBe('not_found')
    expect(missing.message).toBe((await failure(theirs.client.tokenIntents.get('no-such-id'))).message)
    expect((await failure(theirs.client.tokenIntents.delete(intent.id))).code).toBe('not_found')
    const converted = await failure(theirs.client.tokens.create({ token_intent_id: intent.id }))
    expect(converted.code).toBe('validation_failed')
    expect((await store.dump()).token_intents).toHaveLength(1)
    expect((await store.dump()).tokens).toEqual([])
  })

  it('refuses a bad type or bad data with a 400 naming the field, storing nothing', async () => {
    const { client, store } = await setup()
    const before = await store.dump()
    const bad = [
      [{ type: 'card', data: { ...CARD, number: '4242424242424241' } }, 'data.number'],
      [{ type: 'card' }, 'data'],
      [{ type: '', data: 'x' }, 'type'],
      [{ type: 'bank', data: { routing_number: '123', account_number: '1' } }, 'data.routing_number'],
      [{ type: 'card', data: CARD, metadata: {} }, 'metadata'],
    ] as const
    for (const [body, field] of bad) {
      const error = await failure(client.tokenIntents.create(body as never))
      expect(error.code).toBe('validation_failed')
      expect(Object.keys(error.issues ?? {})).toContain(field)
    }
    expect(await store.dump()).toEqual(before)
  })

  it('needs its permissions: a public key may create, not read or delete', async () => {
    const { client, keyFor } = await setup()
    const pub = await keyFor('public', ['token-intent:create'])
    const made = await pub.client.tokenIntents.create({ type: 'card', data: CARD })
    expect((await failure(pub.client.tokenIntents.get(made.id))).code).toBe('forbidden')
    expect((await failure(pub.client.tokenIntents.delete(made.id))).code).toBe('forbidden')
    const none = await keyFor('public', ['token:create'])
    expect((await failure(none.client.tokenIntents.create({ type: 'card', data: CARD }))).code).toBe(
      'forbidden',
    )
    expect((await client.tokenIntents.get(made.id)).id).toBe(made.id)
  })

  it('converts into a token with token_intent_id: the card without its cvc, the intent consumed', async () => {
    const { client, store } = await setup()
    const intent = await client.tokenIntents.create({ type: 'card', data: CARD })
    const token = await client.tokens.create({
      token_intent_id: intent.id,
      metadata: { customer: 'c1' },
      containers: ['/pci/high/'],
    })
    expect(token.type).toBe('card')
    expect(token.metadata).toEqual({ customer: 'c1' })
    expect(token.fingerprint).toBe(intent.fingerprint)
    const read = await client.tokens.get(token.id)
    expect(read.data).toEqual({ number: '4242424242424242', expiration_month: 12, expiration_year: 2031 })
    expect((await failure(client.tokenIntents.get(intent.id))).code).toBe('not_found')
    expect((await store.dump()).token_intents).toEqual([])
    // Consumed: converting it again is refused, nothing made.
    const again = await failure(client.tokens.create({ token_intent_id: intent.id }))
    expect(again.code).toBe('validation_failed')
    expect((await store.dump()).tokens).toHaveLength(1)
  })

  it('refuses conversion of an expired intent and of one given with type or data, making nothing', async () => {
    const { client, clock, store } = await setup()
    const intent = await client.tokenIntents.create({ type: 'card', data: CARD })
    const both = await failure(client.tokens.create({ token_intent_id: intent.id, type: 'card' } as never))
    expect(both.code).toBe('validation_failed')
    expect(Object.keys(both.issues ?? {})).toEqual(['token_intent_id'])
    clock.advance(24 * 60 * 60 * 1000)
    const expired = await failure(client.tokens.create({ token_intent_id: intent.id }))
    expect(expired.code).toBe('validation_failed')
    expect(Object.keys(expired.issues ?? {})).toEqual(['token_intent_id'])
    expect((await store.dump()).tokens).toEqual([])
  })

  it('of conversions of one intent racing each other, exactly one makes a token', async () => {
    const { client, store } = await setup()
    const intent = await client.tokenIntents.create({ type: 'card', data: CARD })
    const results = await Promise.allSettled(
      Array.from({ length: 5 }, () => client.tokens.create({ token_intent_id: intent.id })),
    )
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
    for (const r of results)
      if (r.status === 'rejected') expect((r.reason as { code: string }).code).toBe('validation_failed')
    expect((await store.dump()).tokens).toHaveLength(1)
  })

  it('deduplicates a converted card against an existing token of the same number', async () => {
    const { client } = await setup()
    const existing = await client.tokens.create({ type: 'card', data: CARD })
    const intent = await client.tokenIntents.create({ type: 'card', data: CARD })
    const token = await client.tokens.create({ token_intent_id: intent.id, deduplicate_token: true })
    expect(token.id).toBe(existing.id)
    expect(token._extras).toEqual({ deduplicated: true })
  })

  it('tokenize converts each body naming token_intent_id, in the request’s shape, consuming each intent', async () => {
    const { client, store } = await setup()
    const first = await client.tokenIntents.create({ type: 'card', data: CARD })
    const second = await client.tokenIntents.create({ type: 'card_number', data: '4000056655665556' })
    const answer = (await client.tokens.tokenize({
      payment: { card: { token_intent_id: first.id, metadata: { k: 'v' } } },
      list: [{ token_intent_id: second.id }],
      name: 'plain',
    })) as { payment: { card: { id: string; type: string } }; list: { type: string }[] }
    expect(answer.payment.card.type).toBe('card')
    expect(answer.list[0]!.type).toBe('card_number')
    const read = await client.tokens.get(answer.payment.card.id)
    expect(read.data).toEqual({ number: '4242424242424242', expiration_month: 12, expiration_year: 2031 })
    expect(read.metadata).toEqual({ k: 'v' })
    expect((await store.dump()).token_intents).toEqual([])
  })

  it('tokenize refuses an intent named twice, or one that is gone, naming its path and writing nothing', async () => {
    const { client, store } = await setup()
    const intent = await client.tokenIntents.create({ type: 'card', data: CARD })
    const before = await store.dump()
    const twice = await failure(
      client.tokens.tokenize({ a: { token_intent_id: intent.id }, b: { token_intent_id: intent.id } }),
    )
    expect(twice.code).toBe('validation_failed')
    expect(Object.keys(twice.issues ?? {})).toEqual(['b.token_intent_id'])
    const gone = await failure(client.tokens.tokenize([{ token_intent_id: 'no-such-intent' }]))
    expect(Object.keys(gone.issues ?? {})).toEqual(['0.token_intent_id'])
    expect(await store.dump()).toEqual(before)
  })

  it('a child create refuses token_intent_id', async () => {
    const { client } = await setup()
    const parent = await client.tokens.create({ type: 'token', data: 'p' })
    const intent = await client.tokenIntents.create({ type: 'card', data: CARD })
    const error = await failure(
      client.tokens.children.create(parent.id, {
        token_intent_id: intent.id,
        type: 'token',
        data: 'c',
      } as never),
    )
    expect(error.code).toBe('validation_failed')
  })
})

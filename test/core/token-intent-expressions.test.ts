/**
 * Token intents named in expressions (`{{ token_intent: <id> | … }}`): the proxy's bodies through
 * an in-process destination, detokenize; the caller's tenant only, live intents only, the caller's
 * `token:use` (`token:read` for detokenize) weighed as the token it would become (a card in
 * `/pci/high/`), counted with the tokens, audited as a token use.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { ServiceError } from '../../src/kernel/errors.js'
import type { AccessRule, Permission } from '../../src/kernel/types.js'
import { createTestVault, type TestVault } from '../../testing/vault.js'

const PSP = 'https://psp.test'
const CARD = { number: '4111111111111111', expiration_month: 7, expiration_year: 2031, cvc: '987' }
let vault: TestVault
afterEach(() => vault?.close())

async function world() {
  vault = await createTestVault({ destinations: { [PSP]: 'echo' } })
  const client = vault.client()
  const intent = await client.tokenIntents.create({ type: 'card', data: CARD })
  const keyFor = async (permissions: Permission[], rules?: AccessRule[], tenantId = vault.tenant.id) => {
    const { key } = await vault.service.admin.createApplication({
      tenantId,
      name: 'app',
      type: 'private',
      permissions,
      ...(rules ? { rules } : {}),
    })
    return vault.service.connect(key)
  }
  return { client, intent, keyFor }
}

const failure = async (p: Promise<unknown>): Promise<ServiceError> => {
  try {
    await p
  } catch (error) {
    if (error instanceof ServiceError) return error
    throw error
  }
  throw new Error('expected a ServiceError')
}

const json = (body: unknown) => ({
  method: 'POST',
  url: PSP,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
})

describe('token intents in expressions', () => {
  it("sends the intent's number, expiry and cvc to the destination (JSON and form bodies)", async () => {
    const { client, intent } = await world()
    const id = intent.id
    const card = {
      number: `{{ token_intent: ${id} | json: "$.data.number" }}`,
      month: `{{ token_intent: ${id} | json: "$.data" | card_exp: "MM" }}`,
      year: `{{ token_intent: ${id} | json: "$.data" | card_exp: "YYYY" }}`,
      cvv: `{{token_intent:${id}|json: "$.data.cvc"}}`,
      last4: `x{{ token_intent: ${id} | json: '$.card.last4' }}`,
    }
    const answer = await client.proxy.invoke(json({ card }))
    expect(answer.status).toBe(200)
    expect(JSON.parse(vault.proxy.received(PSP)[0]!.body)).toEqual({
      card: { number: CARD.number, month: '07', year: '2031', cvv: '987', last4: 'x1111' },
    })
    const form = `ccnumber=${card.number}&cvv=${card.cvv}`
    await client.proxy.invoke({
      method: 'POST',
      url: PSP,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form,
    })
    const sent = new URLSearchParams(vault.proxy.received(PSP)[1]!.body)
    expect([sent.get('ccnumber'), sent.get('cvv')]).toEqual([CARD.number, '987'])
  })

  it('keeps the cvc on the intent for a first charge, though the converted token has none', async () => {
    const { client, intent } = await world()
    await client.proxy.invoke(json({ cvc: `{{ token_intent: ${intent.id} | json: "$.data.cvc" }}` }))
    const token = await client.tokens.create({ token_intent_id: intent.id })
    expect(token.data).not.toHaveProperty('cvc')
    expect(JSON.parse(vault.proxy.received(PSP)[0]!.body)).toEqual({ cvc: '987' })
    // Converting consumes the intent: it is then unknown.
    const gone = await failure(client.proxy.invoke(json({ n: `{{ token_intent: ${intent.id} }}` })))
    expect(gone.code).toBe('validation_failed')
    expect(vault.proxy.received(PSP)).toHaveLength(1)
  })

  it('detokenize answers the whole intent with its data, and through its filters', async () => {
    const { client, intent } = await world()
    const out = (await client.tokens.detokenize({ i: `{{ token_intent: ${intent.id} }}`, s: 'n' })) as {
      i: { id: string; data: unknown; expires_at: string }
    }
    expect(out.i.id).toBe(intent.id)
    expect(out.i.data).toEqual(CARD)
    expect(out.i.expires_at).toBe(intent.expires_at)
    const filtered = await client.tokens.detokenize({
      i: `{{ token_intent: ${intent.id} | json: "$.data" }}`,
    })
    expect(filtered).toEqual({ i: CARD })
  })

  it("answers an unknown, an expired and another tenant's intent alike: 400, nothing sent", async () => {
    const { client, intent } = await world()
    const other = await vault.service.admin.createTenant({ name: 'other' })
    const { key } = await vault.service.admin.createApplication({
      tenantId: other.id,
      name: 'theirs',
      type: 'private',
      permissions: ['token:use', 'token:read', 'token-intent:create'],
    })
    const theirs = await vault.service.connect(key).tokenIntents.create({ type: 'card', data: CARD })
    const refused = async (id: string) => {
      const error = await failure(
        client.proxy.invoke(json({ n: `{{ token_intent: ${id} | json: "$.data.number" }}` })),
      )
      const detok = await failure(client.tokens.detokenize({ n: `{{ token_intent: ${id} }}` }))
      return [error.code, error.issues, detok.code, detok.issues]
    }
    const unknown = await refused('no-such-intent')
    expect(unknown[0]).toBe('validation_failed')
    expect(unknown[2]).toBe('validation_failed')
    expect(JSON.stringify(unknown)).toContain('no-such-intent')
    const shape = (r: unknown[], id: string) => JSON.stringify(r).replaceAll(id, 'ID')
    expect(shape(await refused(theirs.id), theirs.id)).toBe(shape(unknown, 'no-such-intent'))
    // The last millisecond of its day it is used; at the day's end it is unknown.
    vault.clock.advance(24 * 60 * 60 * 1000 - 1)
    await client.proxy.invoke(json({ n: `{{ token_intent: ${intent.id} | json: "$.data.number" }}` }))
    expect(vault.proxy.received(PSP)).toHaveLength(1)
    vault.clock.advance(1)
    expect(shape(await refused(intent.id), intent.id)).toBe(shape(unknown, 'no-such-intent'))
    expect(vault.proxy.received(PSP)).toHaveLength(1)
  })

  it("needs token:use (token:read for detokenize) reaching a card token's containers: else 403", async () => {
    const { intent, keyFor } = await world()
    const body = json({ n: `{{ token_intent: ${intent.id} | json: "$.data.number" }}` })
    const detok = { n: `{{ token_intent: ${intent.id} }}` }
    const rule = (container: string, transform: 'reveal' | 'mask' | 'redact'): AccessRule => ({
      description: container,
      priority: 1,
      container,
      transform,
      permissions: ['token:use', 'token:read'],
    })
    const bankOnly = await keyFor(['token:use', 'token:read'], [rule('/bank/', 'reveal')])
    expect((await failure(bankOnly.proxy.invoke(body))).code).toBe('forbidden')
    expect((await failure(bankOnly.tokens.detokenize(detok))).code).toBe('forbidden')
    const pci = await keyFor(['token:use', 'token:read'], [rule('/pci/', 'reveal')])
    expect((await pci.proxy.invoke(body)).status).toBe(200)
    expect(((await pci.tokens.detokenize(detok)) as { n: { data: unknown } }).n.data).toEqual(CARD)
    const useOnly = await keyFor(['token:use'])
    expect((await useOnly.proxy.invoke(body)).status).toBe(200)
    expect((await failure(useOnly.tokens.detokenize(detok))).code).toBe('forbidden')
    const redacted = await keyFor(['token:use'], [rule('/', 'redact')])
    expect((await failure(redacted.proxy.invoke(body))).code).toBe('forbidden')
    // A mask rule sends the card type's mask.
    const masked = await keyFor(['token:use'], [rule('/', 'mask')])
    await masked.proxy.invoke(body)
    const sent = vault.proxy.received(PSP).map((r) => JSON.parse(r.body).n)
    expect(sent).toEqual([CARD.number, CARD.number, 'XXXXXXXXXXXX1111'])
  })

  it('counts intents with the tokens: 100 distinct references pass the count, 101 do not', async () => {
    const { client } = await world()
    const refs = (n: number) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, `{{ token_intent: i${i} }}`]))
    // 100 passes the count and fails on the first unknown intent; 101 is refused by the count.
    const hundred = await failure(client.proxy.invoke(json(refs(100))))
    expect(JSON.stringify(hundred.issues)).toContain('i0')
    const over = await failure(client.proxy.invoke(json(refs(101))))
    expect(JSON.stringify(over.issues)).toContain('101')
    const overDetok = await failure(client.tokens.detokenize(refs(101)))
    expect(JSON.stringify(overDetok.issues)).toContain('101')
    // A token and an intent of the same id are two references.
    const mixed = { ...refs(100), t: '{{ i0 }}' }
    expect(JSON.stringify((await failure(client.proxy.invoke(json(mixed)))).issues)).toContain('101')
  })

  it("audits the intent's use as a token revealed, without its data", async () => {
    const { client, intent } = await world()
    await client.proxy.invoke(json({ n: `{{ token_intent: ${intent.id} | json: "$.data.number" }}` }))
    const logs = await vault.service
      .connect(vault.keys.management)
      .logs.list({ entity_type: 'token', entity_id: intent.id })
    const messages = logs.data.map((e) => e.message)
    expect(messages.some((m) => m.includes('revealed'))).toBe(true)
    expect(JSON.stringify(logs)).not.toContain(CARD.number)
  })
})

/**
 * The proxy's `BT-ENCRYPTED` header: base64 of `{ type, encrypted }` (or of such requests by name)
 * decrypted with the tenant's client encryption key and read by `{{ encrypted | … }}` expressions;
 * every bad header a 400 before anything is sent; never forwarded.
 */
import * as jose from 'jose'
import { afterEach, describe, expect, it } from 'vitest'
import { createHttpHandler } from '../../adapters/http/index.js'
import { ServiceError } from '../../src/kernel/errors.js'
import { createTestVault, type TestVault } from '../../testing/vault.js'

const PSP = 'https://psp.test'
const CARD = { number: '4111111111111111', expiration_month: 7, expiration_year: 2031, cvc: '987' }
let vault: TestVault
afterEach(() => vault?.close())

async function managerOf(tenantId: string) {
  const { key } = await vault.service.admin.createApplication({
    tenantId,
    name: 'keys',
    type: 'management',
    permissions: ['keys:create', 'keys:read', 'keys:delete'],
  })
  return vault.service.connect(key)
}

/** A browser's JWE of `data` to client key `created` (as the reference's elements make it). */
async function encrypt(created: { id: string; public_key_pem: string }, data: unknown) {
  const b64 = created.public_key_pem
    .replace('-----BEGIN PUBLIC KEY-----', '')
    .replace('-----END PUBLIC KEY-----', '')
    .trim()
  const x = Buffer.from(b64, 'base64').toString('base64url')
  const key = await jose.importJWK({ kty: 'OKP', crv: 'X25519', x }, 'ECDH-ES')
  return new jose.CompactEncrypt(new TextEncoder().encode(JSON.stringify(data)))
    .setProtectedHeader({ alg: 'ECDH-ES', enc: 'A256GCM', kid: created.id })
    .encrypt(key)
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64')

async function world() {
  vault = await createTestVault({ destinations: { [PSP]: 'echo' } })
  const created = await (await managerOf(vault.tenant.id)).keys.create()
  const client = vault.client()
  const call = (encrypted: string, body: unknown) =>
    client.proxy.invoke({
      method: 'POST',
      url: PSP,
      headers: { 'content-type': 'application/json', 'bt-encrypted': encrypted, 'x-kept': '1' },
      encrypted,
      body: JSON.stringify(body),
    })
  return { client, created, call }
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

const NUMBER = { n: '{{ encrypted | json: "$.data.number" }}' }

describe('proxy: the BT-ENCRYPTED header', () => {
  it('decrypts one request for {{ encrypted | json: "$.data…" }}, and forwards no BT-ENCRYPTED', async () => {
    const { created, call } = await world()
    const header = b64({ type: 'card', encrypted: await encrypt(created, CARD) })
    const answer = await call(header, {
      n: '{{ encrypted | json: "$.data.number" }}',
      m: '{{ encrypted | json: "$.data" | card_exp: "MM" }}',
      cvc: 'cvc={{ encrypted | json: "$.data.cvc" }}',
      type: '{{ encrypted | json: "$.type" }}',
    })
    expect(answer.status).toBe(200)
    const [received] = vault.proxy.received(PSP)
    expect(JSON.parse(received!.body)).toEqual({ n: CARD.number, m: '07', cvc: 'cvc=987', type: 'card' })
    expect(received!.headers['bt-encrypted']).toBeUndefined()
    expect(received!.headers['x-kept']).toBe('1')
  })

  it('decrypts named requests, read by name', async () => {
    const { created, call } = await world()
    const bank = { routing_number: '110000000', account_number: '000123456789' }
    const header = b64({
      creditCard: { type: 'card', encrypted: await encrypt(created, CARD) },
      bankAccount: { type: 'bank', encrypted: await encrypt(created, bank) },
    })
    await call(header, {
      card: '{{ encrypted | json: "$.creditCard.data.number" }}',
      routing: '{{ encrypted | json: "$.bankAccount.data.routing_number" }}',
    })
    expect(JSON.parse(vault.proxy.received(PSP)[0]!.body)).toEqual({
      card: CARD.number,
      routing: '110000000',
    })
  })

  it('answers a wrong key, a tampered JWE and another tenant’s key with one 400; nothing is sent', async () => {
    const { created, call } = await world()
    const good = await encrypt(created, CARD)
    const other = await vault.service.admin.createTenant({ name: 'other' })
    const theirs = await (await managerOf(other.id)).keys.create()
    const mine2 = await (await managerOf(vault.tenant.id)).keys.create()
    // Encrypted to another key of the tenant but naming the first: decryption fails.
    const wrongKey = await encrypt(mine2, CARD)
    const wrongHeader = JSON.parse(Buffer.from(wrongKey.split('.')[0]!, 'base64url').toString())
    wrongHeader.kid = created.id
    const rekeyed = [
      Buffer.from(JSON.stringify(wrongHeader)).toString('base64url'),
      ...wrongKey.split('.').slice(1),
    ]
    const parts = good.split('.')
    const last = parts[3]!
    parts[3] = (last[0] === 'A' ? 'B' : 'A') + last.slice(1)
    const messages = []
    for (const jwe of [rekeyed.join('.'), parts.join('.'), await encrypt(theirs, CARD)]) {
      const error = await failure(call(b64({ type: 'card', encrypted: jwe }), NUMBER))
      expect(error.code).toBe('validation_failed')
      messages.push(JSON.stringify(error.issues))
    }
    expect(new Set(messages).size).toBe(1)
    expect(messages[0]).toContain('BT-ENCRYPTED')
    expect(vault.proxy.received(PSP)).toHaveLength(0)
  })

  it('refuses a header that is not base64 JSON of requests, even when the body names no encrypted', async () => {
    const { created, call } = await world()
    const jwe = await encrypt(created, CARD)
    const bad = [
      'not base64!',
      Buffer.from('not json').toString('base64'),
      b64([{ type: 'card', encrypted: jwe }]),
      b64({ type: 'card', encrypted: jwe, extra: 1 }),
      b64({ type: 'card' }),
      b64({}),
      b64({ 'bad name': { type: 'card', encrypted: jwe } }),
      b64({ type: 'card', encrypted: 'not-a-jwe' }),
    ]
    for (const header of bad) {
      const error = await failure(call(header, { plain: 'x' }))
      expect(Object.keys(error.issues ?? {}), header).toEqual(['BT-ENCRYPTED'])
    }
    expect(vault.proxy.received(PSP)).toHaveLength(0)
  })

  it('bounds the header before decoding it (65536 characters pass the bound, 65537 do not) and its requests (20, not 21)', async () => {
    const { created, call } = await world()
    const atLimit = await failure(call('A'.repeat(65_536), NUMBER))
    expect(JSON.stringify(atLimit.issues)).not.toContain('at most')
    const over = await failure(call('A'.repeat(65_537), NUMBER))
    expect(JSON.stringify(over.issues)).toContain('at most 65536 characters')
    const jwe = await encrypt(created, CARD)
    const named = (n: number) =>
      b64(
        Object.fromEntries(Array.from({ length: n }, (_, i) => [`c${i}`, { type: 'card', encrypted: jwe }])),
      )
    await call(named(20), { n: '{{ encrypted | json: "$.c19.data.number" }}' })
    expect(JSON.parse(vault.proxy.received(PSP)[0]!.body)).toEqual({ n: CARD.number })
    const tooMany = await failure(call(named(21), NUMBER))
    expect(JSON.stringify(tooMany.issues)).toContain('at most 20')
    expect(vault.proxy.received(PSP)).toHaveLength(1)
  })

  it('without the header, {{ encrypted }} names a token of that id, as before', async () => {
    const { client } = await world()
    const error = await failure(
      client.proxy.invoke({
        method: 'POST',
        url: PSP,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(NUMBER),
      }),
    )
    expect(JSON.stringify(error.issues)).toContain('Failed to detokenize some tokens: encrypted')
  })

  it('takes the header over HTTP (BT-ENCRYPTED) and does not forward it', async () => {
    const { created } = await world()
    const handler = createHttpHandler(vault.service)
    const header = b64({ type: 'card', encrypted: await encrypt(created, CARD) })
    const response = await handler(
      new Request('http://vault/proxy', {
        method: 'POST',
        headers: {
          'BT-API-KEY': vault.keys.private,
          'BT-PROXY-URL': PSP,
          'BT-ENCRYPTED': header,
          'content-type': 'application/json',
        },
        body: JSON.stringify(NUMBER),
      }),
    )
    expect(response.status).toBe(200)
    const [received] = vault.proxy.received(PSP)
    expect(JSON.parse(received!.body)).toEqual({ n: CARD.number })
    expect(received!.headers['bt-encrypted']).toBeUndefined()
    const bad = await handler(
      new Request('http://vault/proxy', {
        method: 'POST',
        headers: { 'BT-API-KEY': vault.keys.private, 'BT-PROXY-URL': PSP, 'BT-ENCRYPTED': 'e30=' },
        body: '{}',
      }),
    )
    expect(bad.status).toBe(400)
    expect(vault.proxy.received(PSP)).toHaveLength(1)
  })
})

/**
 * Client encryption keys (`/keys`) and the encrypted token data they serve: the lifecycle of a key,
 * its bounds, a browser's JWE decrypted into a token, every bad JWE refused with nothing stored, the
 * private key never answered nor at rest in the clear, and tenants kept apart.
 */
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as jose from 'jose'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { failure, setup } from './setup.js'

/** Every private key the vault exports (its JWK `d`): the canaries the at-rest checks look for. */
const exported = vi.hoisted(() => [] as string[])
vi.mock('jose', async (original) => {
  const real = await original<typeof import('jose')>()
  return {
    ...real,
    exportJWK: async (key: Parameters<typeof real.exportJWK>[0]) => {
      const jwk = await real.exportJWK(key)
      if (typeof jwk.d === 'string') exported.push(jwk.d)
      return jwk
    },
  }
})

const KEYS = ['keys:create', 'keys:read', 'keys:delete'] as const

/** The X25519 public key of a `public_key_pem` answer, as a browser reads it: armor off, base64 in. */
async function publicKeyOf(pem: string) {
  const b64 = pem.replace('-----BEGIN PUBLIC KEY-----', '').replace('-----END PUBLIC KEY-----', '').trim()
  const x = Buffer.from(b64, 'base64').toString('base64url')
  return jose.importJWK({ kty: 'OKP', crv: 'X25519', x }, 'ECDH-ES')
}

/** A browser's encrypted token data (the reference's elements: `JSON.stringify(data)`, `kid` the key id). */
async function encrypt(
  created: { id: string; public_key_pem: string },
  data: unknown,
  header: { alg?: string; enc?: string; kid?: string } = {},
) {
  return new jose.CompactEncrypt(new TextEncoder().encode(JSON.stringify(data)))
    .setProtectedHeader({ alg: 'ECDH-ES', enc: 'A256GCM', kid: created.id, ...header })
    .encrypt(await publicKeyOf(created.public_key_pem))
}

async function world() {
  const s = await setup()
  const manager = await s.keyFor('management', [...KEYS])
  const pub = await s.keyFor('public', ['token:create'])
  return { ...s, keys: manager.client.keys, pub: pub.client }
}

describe('client encryption keys: lifecycle', () => {
  it('creates a key answering its public key once, lists and gets it without keys, deletes it', async () => {
    const { keys, clock } = await world()
    const now = clock.now().toISOString()
    const created = await keys.create()
    expect(Object.keys(created).sort()).toEqual(['expires_at', 'id', 'key_id', 'public_key_pem'])
    expect(created.key_id).toBe(created.id)
    expect(created.public_key_pem).toMatch(
      /^-----BEGIN PUBLIC KEY-----\n[A-Za-z0-9+/]{43}=\n-----END PUBLIC KEY-----$/,
    )
    // Without expires_at: a year after it was made, the longest allowed.
    const year = new Date(now)
    year.setUTCFullYear(year.getUTCFullYear() + 1)
    expect(created.expires_at).toBe(year.toISOString())
    const shown = { id: created.id, key_id: created.id, expires_at: created.expires_at }
    expect(await keys.get(created.id)).toEqual(shown)
    expect(await keys.list()).toEqual([shown])
    await keys.delete(created.id)
    expect((await failure(keys.get(created.id))).code).toBe('not_found')
    expect((await failure(keys.delete(created.id))).code).toBe('not_found')
    expect(await keys.list()).toEqual([])
  })

  it('takes expires_at up to exactly one year ahead, and refuses one millisecond past it or a past time', async () => {
    const { keys, clock } = await world()
    clock.set(new Date('2030-03-01T12:00:00.000Z'))
    const made = await keys.create({ expires_at: '2031-03-01T12:00:00.000Z' })
    expect(made.expires_at).toBe('2031-03-01T12:00:00.000Z')
    const past = await failure(keys.create({ expires_at: '2031-03-01T12:00:00.001Z' }))
    expect([past.code, past.message]).toEqual([
      'validation_failed',
      'expires_at: must be at most one year ahead',
    ])
    const before = await failure(keys.create({ expires_at: '2030-03-01T12:00:00.000Z' }))
    expect(before.message).toBe('expires_at: must be in the future')
    expect((await failure(keys.create({ expires_at: 'soon' } as never))).code).toBe('validation_failed')
    expect((await failure(keys.create({ extra: 1 } as never))).code).toBe('validation_failed')
  })

  it('holds at most 50 keys per tenant: the 50th is made, the 51st refused; expired ones make room', async () => {
    const { keys, clock } = await world()
    clock.set(new Date('2030-01-01T00:00:00.000Z'))
    for (let i = 0; i < 49; i++) await keys.create()
    const last = await keys.create({ expires_at: '2030-01-02T00:00:00.000Z' })
    expect(await keys.list()).toHaveLength(50)
    const refused = await failure(keys.create())
    expect([refused.code, refused.message]).toEqual([
      'validation_failed',
      'key: the tenant holds 50 keys, the most it may',
    ])
    clock.set(new Date('2030-01-02T00:00:00.000Z'))
    await keys.create()
    const ids = (await keys.list()).map((k) => k.id)
    expect(ids).toHaveLength(50)
    expect(ids).not.toContain(last.id)
  })

  it('asks keys:create, keys:read and keys:delete', async () => {
    const { keyFor, keys } = await world()
    const made = await keys.create()
    const reader = (await keyFor('management', ['keys:read'])).client.keys
    expect((await failure(reader.create())).code).toBe('forbidden')
    expect((await failure(reader.delete(made.id))).code).toBe('forbidden')
    expect((await reader.get(made.id)).id).toBe(made.id)
    const other = (await keyFor('private', ['token:read'])).client.keys
    expect((await failure(other.list())).code).toBe('forbidden')
  })
})

describe('client encryption keys: encrypted token data', () => {
  it("decrypts a browser's JWE into the token's data, as if the plaintext had been sent", async () => {
    const { keys, pub, client } = await world()
    const created = await keys.create()
    const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' }
    const jwe = await encrypt(created, card)
    const token = await pub.tokens.create({ type: 'card', encrypted: jwe })
    expect(token.type).toBe('card')
    expect((await client.tokens.get(token.id)).data).toEqual(card)
    const text = await pub.tokens.create({ type: 'token', encrypted: await encrypt(created, 'a secret') })
    expect((await client.tokens.get(text.id)).data).toBe('a secret')
  })

  it('tokenize decrypts each encrypted token body where it stands', async () => {
    const { keys, pub, client } = await world()
    const created = await keys.create()
    const answer = (await pub.tokens.tokenize({
      first: { type: 'token', encrypted: await encrypt(created, { ssn: '111-22-3333' }) },
      list: [{ type: 'token', encrypted: await encrypt(created, 'two') }],
    })) as { first: { id: string }; list: { id: string }[] }
    expect((await client.tokens.get(answer.first.id)).data).toEqual({ ssn: '111-22-3333' })
    expect((await client.tokens.get(answer.list[0]!.id)).data).toBe('two')
  })

  it('a token intent takes { type, encrypted } too, and converts into a token holding the plaintext', async () => {
    const { keys, keyFor, client } = await world()
    const created = await keys.create()
    const browser = (await keyFor('public', ['token-intent:create'])).client
    const intent = await browser.tokenIntents.create({
      type: 'token',
      encrypted: await encrypt(created, { secret: 'intended' }),
    } as never)
    const token = await client.tokens.create({ token_intent_id: intent.id })
    expect((await client.tokens.get(token.id)).data).toEqual({ secret: 'intended' })
    const e = await failure(browser.tokenIntents.create({ type: 'token', encrypted: 'x.y.z.w.v' } as never))
    expect([e.code, e.message]).toEqual([
      'validation_failed',
      'encrypted: must be a compact JWE: its protected header is not base64url JSON',
    ])
  })

  it('refuses each bad JWE with a 400 and stores nothing; wrong key and tampered read alike', async () => {
    const { keys, pub, store, clock, keyFor, service } = await world()
    const created = await keys.create({
      expires_at: new Date(clock.now().getTime() + 60_000).toISOString(),
    })
    const other = await keys.create()
    const good = await encrypt(created, 'x')
    const parts = good.split('.')
    const flip = (s: string) => (s[0] === 'A' ? `B${s.slice(1)}` : `A${s.slice(1)}`)
    const tampered = [parts[0], parts[1], parts[2], flip(parts[3]!), parts[4]].join('.')
    // Encrypted to the other key, but naming this one.
    const wrongKey = await encrypt({ ...other, id: created.id }, 'x')
    const otherTenant = await service.admin.createTenant({ name: 'other' })
    const theirs = await (
      await keyFor('management', [...KEYS], undefined, otherTenant.id)
    ).client.keys.create()
    const theirJwe = await encrypt(theirs, 'x')
    const a128 = await encrypt(created, 'x', { enc: 'A128GCM' })
    const kw = await new jose.CompactEncrypt(new TextEncoder().encode('"x"'))
      .setProtectedHeader({ alg: 'ECDH-ES+A256KW', enc: 'A256GCM', kid: created.id })
      .encrypt(await publicKeyOf(created.public_key_pem))
    const before = await store.dump()
    const refusal = async (body: unknown) => {
      const e = await failure(pub.tokens.create(body as never))
      expect(e.code).toBe('validation_failed')
      return e.message
    }
    const undecryptable = "encrypted: can't be decrypted with a current client encryption key of the tenant"
    expect(await refusal({ type: 'token', encrypted: wrongKey })).toBe(undecryptable)
    expect(await refusal({ type: 'token', encrypted: tampered })).toBe(undecryptable)
    expect(await refusal({ type: 'token', encrypted: theirJwe })).toBe(undecryptable)
    expect(await refusal({ type: 'token', encrypted: a128 })).toBe(
      'encrypted: must be encrypted with alg ECDH-ES and enc A256GCM',
    )
    expect(await refusal({ type: 'token', encrypted: kw })).toBe(
      'encrypted: must be encrypted with alg ECDH-ES and enc A256GCM',
    )
    expect(await refusal({ type: 'token', encrypted: 'not a jwe' })).toMatch(
      /^encrypted: must be a compact JWE/,
    )
    expect(await refusal({ type: 'token', encrypted: good, data: 'both' })).toBe(
      'encrypted: is given with data: send one of them',
    )
    // The compact form's length is checked before anything is parsed: 1 048 576 characters at most.
    expect(await refusal({ type: 'token', encrypted: `${good}${'A'.repeat(1_048_577 - good.length)}` })).toBe(
      'encrypted: must be a compact JWE of at most 1048576 characters',
    )
    expect(
      await refusal({
        type: 'token',
        encrypted: `${parts.slice(0, 4).join('.')}.${'A'.repeat(1_048_576 - good.length + parts[4]!.length)}`,
      }),
    ).toBe(undecryptable)
    // In a tokenize request the field is named by its path.
    const e = await failure(pub.tokens.tokenize({ a: { type: 'token', encrypted: tampered } }))
    expect(e.message).toBe(`a.${undecryptable}`)
    // Expired at its expires_at, deleted: alike.
    clock.advance(60_000)
    expect(await refusal({ type: 'token', encrypted: good })).toBe(undecryptable)
    await keys.delete(other.id)
    expect(await refusal({ type: 'token', encrypted: await encrypt(other, 'x') })).toBe(undecryptable)
    const after = await store.dump()
    expect(after.tokens).toEqual(before.tokens)
  })
})

describe('client encryption keys: isolation and secrecy', () => {
  it('still decrypts after a data-key rotation retires the older versions (their versions are kept)', async () => {
    const { keys, pub, client, service, tenant, clock } = await world()
    const created = await keys.create()
    await service.admin.rotateDataKey({ tenantId: tenant.id })
    clock.advance(60_000)
    let progress = await service.admin.reencrypt({ tenantId: tenant.id })
    for (let i = 0; i < 5 && !progress.finished; i++) {
      clock.advance(60_000)
      progress = await service.admin.reencrypt({ tenantId: tenant.id })
    }
    expect(progress.finished).toBe(true)
    // Version 1 stays: the client key is sealed under it.
    expect(progress.versions).toEqual([1, 2])
    const token = await pub.tokens.create({ type: 'token', encrypted: await encrypt(created, 'after') })
    expect((await client.tokens.get(token.id)).data).toBe('after')
  })

  it("deleting a tenant deletes its client keys, and no other tenant's", async () => {
    const { keys, keyFor, service, store, tenant } = await world()
    const mine = await keys.create()
    const other = await service.admin.createTenant({ name: 'other' })
    const theirs = await (await keyFor('management', [...KEYS], undefined, other.id)).client.keys.create()
    await service.admin.deleteTenant({ tenantId: tenant.id })
    const left = (await store.dump()).client_keys.map((k) => k.id)
    expect(left).toEqual([theirs.id])
    expect(left).not.toContain(mine.id)
  })

  it("answers another tenant's key as unknown", async () => {
    const { keys, keyFor, service } = await world()
    const otherTenant = await service.admin.createTenant({ name: 'other' })
    const theirs = await (
      await keyFor('management', [...KEYS], undefined, otherTenant.id)
    ).client.keys.create()
    expect((await failure(keys.get(theirs.id))).code).toBe('not_found')
    expect((await failure(keys.delete(theirs.id))).code).toBe('not_found')
    expect(await keys.list()).toEqual([])
  })

  it('never answers the private key, nor keeps it in the clear in the store, a snapshot or the file store', async () => {
    const { keys, vault, store } = await world()
    exported.length = 0
    const created = await keys.create()
    expect(exported).toHaveLength(1)
    const d = exported[0]!
    const needles = [
      d,
      Buffer.from(d, 'base64url').toString('base64').slice(0, 40),
      Buffer.from(d, 'base64url').toString('hex'),
    ]
    const answers = JSON.stringify([created, await keys.list(), await keys.get(created.id)])
    const dump = JSON.stringify(await store.dump())
    const snapshot = JSON.stringify(await vault.snapshot())
    for (const needle of needles) {
      expect(answers.includes(needle), 'answers').toBe(false)
      expect(dump.includes(needle), 'store').toBe(false)
      expect(snapshot.includes(needle), 'snapshot').toBe(false)
    }
    expect(dump).toContain(created.id)
    expect(JSON.parse(snapshot).records.client_keys).toEqual([])
  })

  it("keeps the file store's data file free of the private key; a reopened store still decrypts", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tokenvault-client-keys-'))
    try {
      const open = async () =>
        createService({
          store: await fileStore({ path: dir }),
          clock: manualClock(),
          runner: null,
          masterKey: Buffer.alloc(32, 5),
        })
      let service = await open()
      const tenant = await service.admin.createTenant({ name: 't' })
      const { key } = await service.admin.createApplication({
        tenantId: tenant.id,
        name: 'm',
        type: 'management',
        permissions: ['keys:create'],
      })
      const app = await service.admin.createApplication({
        tenantId: tenant.id,
        name: 'p',
        type: 'private',
        permissions: ['token:create'],
      })
      exported.length = 0
      const created = await service.connect(key).keys.create()
      const d = exported[0]!
      await service.close()
      const file = readFileSync(join(dir, 'data.mdb'))
      for (const needle of [d, Buffer.from(d, 'base64url').toString('base64').slice(0, 40)])
        expect(file.includes(Buffer.from(needle)), needle).toBe(false)
      expect(file.includes(Buffer.from(d, 'base64url'))).toBe(false)
      service = await open()
      const client = service.connect(app.key)
      // Decrypted after a reopen: the sealed private key opened under the same master key.
      const token = await client.tokens.create({ type: 'token', encrypted: await encrypt(created, 'kept') })
      expect(token.type).toBe('token')
      await service.close()
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})

afterAll(() => {
  exported.length = 0
})

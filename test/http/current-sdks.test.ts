/**
 * Today's Basis Theory SDKs, unmodified — `@basis-theory/node-sdk` 5.x and
 * `@basis-theory/basis-theory-js` 4.x — against the handler on a real socket with `headerPrefix:
 * 'BT'`: applications and their keys, tenants, permissions, and reactors with inline code. Each test
 * names the page of the reference (developers.basistheory.com) whose behaviour it checks.
 */
import * as jose from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sharedRunner } from '../formulas/setup.js'
import { type CurrentSdkVault, failedStatus, startCurrentSdkVault } from './current-sdk-vault.js'

const runner = sharedRunner()
let vault: CurrentSdkVault
beforeAll(async () => {
  vault = await startCurrentSdkVault(runner.get())
})
afterAll(async () => {
  await vault.close()
  await runner.close()
})

const ECHO = `module.exports = async function (req) {
  return { raw: { args: req.args, configuration: req.configuration, sum: req.args.a + req.args.b } }
}`

describe('@basis-theory/node-sdk 5.x (headerPrefix BT)', () => {
  it('Application Keys (docs/api/applications/application-keys): create, list, get, delete; each key acts as the application', async () => {
    const bt = vault.node(vault.management)
    const app = await bt.applications.create({
      name: 'backend',
      type: 'private',
      permissions: ['token:read'],
    })
    const created = await bt.applicationKeys.create(app.id!)
    expect(created.key).toMatch(/^key_/)
    expect(created.id).toBeTypeOf('string')
    expect(created.createdAt).toBeInstanceOf(Date)
    const listed = await bt.applicationKeys.list(app.id!)
    expect(listed).toHaveLength(2)
    expect(listed.map((k) => k.key)).toEqual([undefined, undefined])
    expect((await bt.applicationKeys.get(app.id!, created.id!)).id).toBe(created.id)
    // The new key and the first both act as the application.
    const withNew = vault.node(created.key!)
    expect(await failedStatus(withNew.tokens.get('missing'))).toBe(404)
    expect(await failedStatus(vault.node(app.key!).tokens.get('missing'))).toBe(404)
    await bt.applicationKeys.delete(app.id!, created.id!)
    expect(await failedStatus(withNew.tokens.get('missing'))).toBe(401)
    expect(await failedStatus(vault.node(app.key!).tokens.get('missing'))).toBe(404)
    expect(await failedStatus(bt.applicationKeys.get(app.id!, created.id!))).toBe(404)
    expect(await bt.applicationKeys.list(app.id!)).toHaveLength(1)
  })

  it('Get an Application by Key (docs/api/applications/applications): the caller’s own application', async () => {
    const bt = vault.node(vault.management)
    const own = await bt.applications.getByKey()
    expect(own.type).toBe('management')
    expect(own.key).toBeUndefined()
    const reader = await vault.key('private', ['token:read'])
    // The reference requires application:read, which a private application can't hold.
    expect(await failedStatus(vault.node(reader).applications.getByKey())).toBe(403)
  })

  it('Get a Tenant (docs/api/tenants/tenants): GET /tenants/self needs tenant:read', async () => {
    const tenant = await vault.node(vault.management).tenants.self.get()
    expect(tenant).toMatchObject({ id: vault.tenantId, name: 'sdk' })
    expect(tenant.createdAt).toBeInstanceOf(Date)
    const reader = await vault.key('private', ['token:read'])
    expect(await failedStatus(vault.node(reader).tenants.self.get())).toBe(403)
  })

  it('List Permissions (docs/api/applications/permissions): the catalogue, filtered by application type', async () => {
    const reader = await vault.key('private', ['token:read'])
    const all = await vault.node(reader).permissions.list()
    expect(all.find((p) => p.type === 'token:read')).toMatchObject({ applicationTypes: ['private'] })
    expect(all.find((p) => p.type === 'token:create')?.applicationTypes).toEqual(['private', 'public'])
    const pub = await vault.node(reader).permissions.list({ applicationType: 'public' })
    expect(pub.map((p) => p.type).sort()).toEqual(['token-intent:create', 'token:create', 'token:update'])
    expect(await failedStatus(vault.node(reader).permissions.list({ applicationType: 'robot' }))).toBe(400)
  })

  it('Reactors (docs/api/reactors/reactors): inline code — create, get, list by name and id, update, patch, react, delete', async () => {
    const bt = vault.node(vault.management)
    const reactor = await bt.reactors.create({ name: 'Adder', code: ECHO, configuration: { REGION: 'eu' } })
    expect(reactor).toMatchObject({ name: 'Adder', code: ECHO, configuration: { REGION: 'eu' } })
    expect(reactor.formula).toBeUndefined()
    expect((await bt.reactors.get(reactor.id!)).code).toBe(ECHO)
    const other = await bt.reactors.create({ name: 'Other', code: ECHO })
    const byName = await bt.reactors.list({ name: 'add*' })
    expect(byName.data.map((r) => r.id)).toEqual([reactor.id])
    const byId = await bt.reactors.list({ id: [other.id!, 'nope'] })
    expect(byId.data.map((r) => r.name)).toEqual(['Other'])

    const user = await vault.key('private', ['token:use'])
    const react = await vault.node(user).reactors.react(reactor.id!, { args: { a: 2, b: 3 } })
    expect(react.raw).toEqual({ args: { a: 2, b: 3 }, configuration: { REGION: 'eu' }, sum: 5 })

    const updated = await bt.reactors.update(reactor.id!, { name: 'Adder 2', code: ECHO })
    expect(updated).toMatchObject({ name: 'Adder 2', configuration: {} })
    await bt.reactors.patch(reactor.id!, { configuration: { REGION: 'us' } })
    expect(await bt.reactors.get(reactor.id!)).toMatchObject({
      name: 'Adder 2',
      configuration: { REGION: 'us' },
    })
    expect(await failedStatus(bt.reactors.create({ name: 'Broken', code: 'module.exports = (' }))).toBe(400)
    await bt.reactors.delete(reactor.id!)
    expect(await failedStatus(bt.reactors.get(reactor.id!))).toBe(404)
  })
})

describe('@basis-theory/basis-theory-js 4.x (headerPrefix BT)', () => {
  it('Application Keys (docs/api/applications/application-keys): create, get (list), getById, delete', async () => {
    const bt = await vault.js(vault.management)
    const app = await bt.applications.create({ name: 'web', type: 'public', permissions: ['token:create'] })
    const created = await bt.applicationKeys.create(app.id)
    expect(created.key).toMatch(/^key_/)
    expect((await bt.applicationKeys.get(app.id)).map((k) => k.id)).toContain(created.id)
    expect((await bt.applicationKeys.getById(app.id, created.id!)).createdAt).toBeTypeOf('string')
    await bt.applicationKeys.delete(app.id, created.id!)
    expect(await bt.applicationKeys.get(app.id)).toHaveLength(1)
    expect(await failedStatus(bt.applicationKeys.getById(app.id, created.id!))).toBe(404)
  })

  it('Regenerate API Key (docs/api/applications/applications#regenerate-api-key): a new key acts as the application, every old one stops at once', async () => {
    const bt = await vault.js(vault.management)
    const app = await bt.applications.create({
      name: 'rotating',
      type: 'private',
      permissions: ['token:read'],
    })
    const extra = await bt.applicationKeys.create(app.id)
    const regenerated = await bt.applications.regenerateKey(app.id)
    expect(regenerated).toMatchObject({ id: app.id, name: 'rotating', permissions: ['token:read'] })
    expect(regenerated.key).toMatch(/^key_/)
    expect(regenerated.key).not.toBe(app.key)
    expect(await failedStatus(vault.node(regenerated.key!).tokens.get('missing'))).toBe(404)
    expect(await failedStatus(vault.node(app.key!).tokens.get('missing'))).toBe(401)
    expect(await failedStatus(vault.node(extra.key!).tokens.get('missing'))).toBe(401)
    expect(await bt.applicationKeys.get(app.id)).toHaveLength(1)
    const reader = await vault.key('private', ['token:read'])
    expect(await failedStatus((await vault.js(reader)).applications.regenerateKey(app.id))).toBe(403)
    expect(await failedStatus(bt.applications.regenerateKey('00000000-0000-4000-8000-000000000000'))).toBe(
      404,
    )
  })

  it('Get an Application by Key and Get a Tenant (docs/api/applications/applications, docs/api/tenants/tenants)', async () => {
    const bt = await vault.js(vault.management)
    expect((await bt.applications.retrieveByKey()).type).toBe('management')
    expect(await bt.tenants.retrieve()).toMatchObject({ id: vault.tenantId, name: 'sdk' })
  })

  it('List Permissions (docs/api/applications/permissions)', async () => {
    const bt = await vault.js(vault.management)
    const list = await bt.permissions.list({ applicationType: 'management' })
    expect(list.map((p) => p.type)).toContain('reactor:create')
    expect(list.every((p) => p.applicationTypes.includes('management'))).toBe(true)
  })

  it('Reactors (docs/api/reactors/reactors): inline code — create, retrieve, list, update, patch, react, delete', async () => {
    const bt = await vault.js(vault.management)
    const reactor = await bt.reactors.create({ name: 'Summer', code: ECHO, configuration: { K: 'v' } })
    expect(reactor).toMatchObject({ name: 'Summer', code: ECHO, configuration: { K: 'v' } })
    expect((await bt.reactors.retrieve(reactor.id)).name).toBe('Summer')
    expect((await bt.reactors.list({ name: 'summ' })).data.map((r) => r.id)).toEqual([reactor.id])
    await bt.reactors.update(reactor.id, { name: 'Summer 2', code: ECHO, configuration: { K: 'w' } })
    await bt.reactors.patch(reactor.id, { name: 'Summer 3' })
    expect(await bt.reactors.retrieve(reactor.id)).toMatchObject({
      name: 'Summer 3',
      configuration: { K: 'w' },
    })
    const user = await vault.js(await vault.key('private', ['token:use']))
    const react = await user.reactors.react(reactor.id, { args: { a: 1, b: 1 } })
    expect(react.raw).toMatchObject({ sum: 2, configuration: { K: 'w' } })
    await bt.reactors.delete(reactor.id)
    expect(await failedStatus(bt.reactors.retrieve(reactor.id))).toBe(404)
  })
})

describe('Idempotency (docs/api/idempotency.mdx) through both SDKs and BT-IDEMPOTENCY-KEY', () => {
  const tokenBody = { type: 'token' as const, data: { n: 'idempotent' } }

  it('node-sdk: tokens.create with an idempotencyKey twice creates one token; another body with it is a 400', async () => {
    const bt = vault.node(await vault.key('private', ['token:create', 'token:read']))
    const first = await bt.tokens.create(tokenBody, { idempotencyKey: 'node-1' })
    const again = await bt.tokens.create(tokenBody, { idempotencyKey: 'node-1' })
    expect(again.id).toBe(first.id)
    const other = await bt.tokens.create(tokenBody, { idempotencyKey: 'node-2' })
    expect(other.id).not.toBe(first.id)
    expect(
      await failedStatus(bt.tokens.create({ ...tokenBody, data: 'x' }, { idempotencyKey: 'node-1' })),
    ).toBe(400)
  })

  it('basis-theory-js: tokens.create and reactors.create with an idempotencyKey act once', async () => {
    const bt = await vault.js(await vault.key('private', ['token:create']))
    const first = await bt.tokens.create(tokenBody, { idempotencyKey: 'js-1' })
    expect((await bt.tokens.create(tokenBody, { idempotencyKey: 'js-1' })).id).toBe(first.id)
    const admin = await vault.js(vault.management)
    const reactor = { name: 'once', code: ECHO }
    const r1 = await admin.reactors.create(reactor, { idempotencyKey: 'js-r' })
    const r2 = await admin.reactors.create(reactor, { idempotencyKey: 'js-r' })
    expect(r2.id).toBe(r1.id)
    expect((await admin.reactors.list({ name: 'once' })).data).toHaveLength(1)
  })

  it('the header replays status and body; on GET and DELETE it is ignored', async () => {
    const key = await vault.key('private', ['token:create', 'token:read', 'token:delete'])
    const send = (method: string, path: string, body?: unknown) =>
      fetch(`${vault.url}${path}`, {
        method,
        headers: { 'BT-API-KEY': key, 'BT-IDEMPOTENCY-KEY': 'raw-1', 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
    const first = await send('POST', '/tokens', tokenBody)
    const again = await send('POST', '/tokens', tokenBody)
    expect(first.status).toBe(201)
    expect(again.status).toBe(201)
    const created = (await first.json()) as { id: string }
    expect(await again.json()).toEqual(created)
    // GET and DELETE with the same key are processed as usual.
    expect((await send('GET', `/tokens/${created.id}`)).status).toBe(200)
    expect((await send('DELETE', `/tokens/${created.id}`)).status).toBe(204)
    expect((await send('DELETE', `/tokens/${created.id}`)).status).toBe(404)
  })
})

describe('Tokenize and detokenize (docs/api/tokens/tokenize, detokenize) through the SDKs that offer them', () => {
  it('node-sdk tokens.tokenize and tokens.detokenize; basis-theory-js tokenize', async () => {
    const all = ['token:create', 'token:read'] as const
    const { key } = await vault.service.admin.createApplication({
      tenantId: vault.tenantId,
      name: 'reader',
      type: 'private',
      permissions: [...all],
      rules: [
        { description: 'all', priority: 1, container: '/', transform: 'reveal', permissions: [...all] },
      ],
    })
    const node = vault.node(key)
    const made = (await node.tokens.tokenize({ type: 'token', data: 'plain' })) as { id: string }
    expect(made.id).toBeTypeOf('string')
    expect(await node.tokens.detokenize({ a: `{{ ${made.id} }}` })).toEqual({ a: 'plain' })
    const js = await vault.js(key)
    const viaJs = (await js.tokenize({ type: 'token', data: 'other' } as never)) as { id: string }
    expect(await node.tokens.detokenize({ b: `{{ ${viaJs.id} }}` })).toEqual({ b: 'other' })
    // basis-theory-js lists tokens (GET /tokens), filtered by id.
    const listed = await js.tokens.list({ id: [made.id, viaJs.id] })
    expect(listed.data.map((t) => t.id).sort()).toEqual([made.id, viaJs.id].sort())
  })

  it('List Tokens V2 (docs/api/tokens/tokens): node-sdk tokens.listV2 walks every page by cursor', async () => {
    const { key } = await vault.service.admin.createApplication({
      tenantId: vault.tenantId,
      name: 'lister',
      type: 'private',
      permissions: ['token:create', 'token:read'],
    })
    const node = vault.node(key)
    const made: string[] = []
    for (let i = 0; i < 5; i++) {
      const t = await node.tokens.create({ type: 'token', data: `v${i}`, metadata: { batch: 'v2' } })
      made.push(t.id!)
    }
    const page = await node.tokens.listV2({ size: 2, metadata: { batch: 'v2' } })
    expect(page.data).toHaveLength(2)
    const seen: string[] = []
    for await (const token of page) seen.push(token.id!)
    expect(seen).toEqual([...made].sort())
    expect(await failedStatus(node.tokens.listV2({ start: 'forged' }))).toBe(400)
  })
})

describe('Search Tokens (docs/api/tokens/search, searchV2) through both SDKs', () => {
  it('node-sdk tokens.searchV2 walks pages by cursor; basis-theory-js tokens.search pages; data matches search_indexes', async () => {
    const key = await vault.key('private', ['token:create', 'token:read', 'token:search'])
    const node = vault.node(key)
    const made: string[] = []
    for (let i = 0; i < 5; i++) {
      const t = await node.tokens.create({
        type: 'token',
        data: { number: `424242424242${1000 + i}` },
        metadata: { batch: 'search' },
        searchIndexes: ['{{ data.number }}', '{{ data.number | last4 }}'],
      })
      expect(t.searchIndexes).toEqual(['{{ data.number }}', '{{ data.number | last4 }}'])
      made.push(t.id!)
    }
    const page = await node.tokens.searchV2({ query: 'metadata.batch:SEARCH', size: 2 })
    expect(page.data).toHaveLength(2)
    const seen: string[] = []
    for await (const token of page) seen.push(token.id!)
    expect(seen).toEqual([...made].sort())
    const byLast4 = await node.tokens.searchV2({ query: 'data:1003' })
    expect(byLast4.data.map((t) => t.id)).toEqual([made[3]])
    expect(await failedStatus(node.tokens.searchV2({ query: 'metadata.batch:search AND' }))).toBe(400)
    expect(await failedStatus(node.tokens.searchV2({ query: 'secret:1' }))).toBe(400)

    const js = await vault.js(key)
    const first = await js.tokens.search({ query: 'metadata.batch:search', page: 1, size: 3 })
    expect(first.pagination).toMatchObject({ totalItems: 5, pageNumber: 1, pageSize: 3, totalPages: 2 })
    const second = await js.tokens.search({ query: 'metadata.batch:search', page: 2, size: 3 })
    expect([...first.data, ...second.data].map((t) => t.id)).toEqual([...made].sort())
    const full = await js.tokens.search({ query: 'data:4242424242421004' })
    expect(full.data.map((t) => t.id)).toEqual([made[4]])

    const reader = await vault.key('private', ['token:read'])
    expect(await failedStatus(vault.node(reader).tokens.searchV2({ query: '' }))).toBe(403)
    expect(await failedStatus((await vault.js(reader)).tokens.search({ query: '' }))).toBe(403)
  })
})

describe('Token types (docs/api/tokens/token-types) through both SDKs', () => {
  it('node-sdk and basis-theory-js create card tokens: validated, /pci/high/, masked, fingerprinted, deduplicated', async () => {
    const key = await vault.key('private', ['token:create', 'token:read'])
    const node = vault.node(key)
    const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031, cvc: '123' }
    const created = await node.tokens.create({ type: 'card', data: card, deduplicateToken: true })
    expect(created.containers).toEqual(['/pci/high/'])
    expect(created.fingerprint).toMatch(/^[A-Za-z0-9_-]{43}$/)
    // A private key without rules reads masked: the card type's default mask.
    expect((await node.tokens.get(created.id!)).data).toEqual({
      number: 'XXXXXXXXXXXX4242',
      expiration_month: 12,
      expiration_year: 2031,
    })
    expect(
      await failedStatus(node.tokens.create({ type: 'card', data: { number: '4242424242424241' } })),
    ).toBe(400)
    const js = await vault.js(key)
    const again = await js.tokens.create({ type: 'card', data: card, deduplicateToken: true })
    expect(again.id).toBe(created.id)
    expect(again.fingerprint).toBe(created.fingerprint)
    const ssn = await js.tokens.create({ type: 'social_security_number', data: '123-45-6789' })
    expect(ssn.containers).toEqual(['/pii/high/'])
    const byFingerprint = await node.tokens.listV2({ fingerprint: created.fingerprint! })
    expect(byFingerprint.data.map((t) => t.id)).toEqual([created.id])
  })
})

describe('Token intents (docs/api/tokens/token-intents) through both SDKs', () => {
  it('node-sdk tokenIntents.create, get, delete and tokens.create with tokenIntentId; basis-theory-js tokenIntents.create, delete', async () => {
    const key = await vault.key('private', [
      'token:create',
      'token:read',
      'token-intent:create',
      'token-intent:read',
      'token-intent:delete',
    ])
    const node = vault.node(key)
    const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031, cvc: '123' }
    const intent = await node.tokenIntents.create({ type: 'card', data: card })
    expect(intent.type).toBe('card')
    expect(intent.card).toMatchObject({ bin: '42424242', last4: '4242', expirationMonth: 12, brand: 'visa' })
    expect(intent.expiresAt!.getTime() - intent.createdAt!.getTime()).toBe(24 * 60 * 60 * 1000)
    expect(intent).not.toHaveProperty('data')
    expect((await node.tokenIntents.get(intent.id!)).fingerprint).toBe(intent.fingerprint)
    const token = await node.tokens.create({ tokenIntentId: intent.id!, metadata: { from: 'intent' } })
    expect(token.type).toBe('card')
    expect(token.fingerprint).toBe(intent.fingerprint)
    expect(await failedStatus(node.tokenIntents.get(intent.id!))).toBe(404)
    expect(await failedStatus(node.tokens.create({ tokenIntentId: intent.id! }))).toBe(400)
    const other = await node.tokenIntents.create({ type: 'card', data: card })
    await node.tokenIntents.delete(other.id!)
    expect(await failedStatus(node.tokenIntents.get(other.id!))).toBe(404)
    expect(await failedStatus(node.tokenIntents.create({ type: 'card', data: { number: '1' } }))).toBe(400)

    const publicKey = await vault.key('public', ['token-intent:create'])
    const js = await vault.js(publicKey)
    const fromBrowser = await js.tokenIntents.create({ type: 'card', data: card })
    expect(fromBrowser.type).toBe('card')
    expect((fromBrowser as { card?: { last4?: string } }).card?.last4).toBe('4242')
    expect((await node.tokenIntents.get(fromBrowser.id)).id).toBe(fromBrowser.id)
    await (await vault.js(key)).tokenIntents.delete(fromBrowser.id)
    expect(await failedStatus(node.tokenIntents.get(fromBrowser.id))).toBe(404)
  })
})

describe('Documents (docs/api/documents/api) through node-sdk 5', () => {
  it('upload (multipart: document file and request JSON), get, data.get (the bytes), delete; each needs its documents:* permission', async () => {
    const key = await vault.key('private', [
      'documents:create',
      'documents:read',
      'documents:reveal',
      'documents:delete',
    ])
    const bt = vault.node(key)
    const bytes = new Uint8Array(200_003)
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + (i >> 8)) & 0xff
    const made = await bt.documents.upload({
      document: new Blob([bytes], { type: 'application/pdf' }),
      request: { metadata: { name: 'scan.pdf' } },
    })
    expect(made).toMatchObject({
      tenantId: vault.tenantId,
      metadata: { name: 'scan.pdf' },
      contentType: 'application/pdf',
    })
    expect(made.id).toMatch(/^[0-9a-f-]{36}$/)
    expect(made.createdAt).toBeInstanceOf(Date)
    expect(await bt.documents.get(made.id!)).toMatchObject({ id: made.id, contentType: 'application/pdf' })
    const data = await bt.documents.data.get(made.id!)
    expect(Buffer.from(await data.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true)
    const reader = vault.node(await vault.key('private', ['documents:read']))
    expect((await reader.documents.get(made.id!)).id).toBe(made.id)
    expect(await failedStatus(reader.documents.data.get(made.id!))).toBe(403)
    expect(await failedStatus(reader.documents.delete(made.id!))).toBe(403)
    expect(await failedStatus(reader.documents.upload({ document: new Blob([bytes]) }))).toBe(403)
    await bt.documents.delete(made.id!)
    expect(await failedStatus(bt.documents.get(made.id!))).toBe(404)
    expect(await failedStatus(bt.documents.data.get(made.id!))).toBe(404)
    // A form without its document is a 400, nothing kept.
    expect(await failedStatus(bt.documents.upload({ request: { metadata: {} } }))).toBe(400)
  })
})

describe('Client encryption keys (docs/api/client-keys) through node-sdk 5, and a token from a browser’s JWE', () => {
  it('keys.create answers the public key once; list and get answer keyId and expiresAt; a JWE made with jose becomes a token; delete', async () => {
    const bt = vault.node(vault.management)
    const made = await bt.keys.create()
    expect(made.keyId).toMatch(/^[0-9a-f-]{36}$/)
    expect(made.publicKeyPem).toMatch(
      /^-----BEGIN PUBLIC KEY-----\n[A-Za-z0-9+/]{43}=\n-----END PUBLIC KEY-----$/,
    )
    expect(made.expiresAt).toBeInstanceOf(Date)
    const sooner = new Date(made.expiresAt!.getTime() - 86_400_000)
    const second = await bt.keys.create({ expiresAt: sooner })
    expect(second.expiresAt?.toISOString()).toBe(sooner.toISOString())
    const got = await bt.keys.get(made.keyId!)
    expect(got).toMatchObject({ keyId: made.keyId, expiresAt: made.expiresAt })
    expect((got as { publicKeyPem?: string }).publicKeyPem).toBeUndefined()
    expect((await bt.keys.list()).map((k) => k.keyId)).toEqual(
      expect.arrayContaining([made.keyId, second.keyId]),
    )
    // In the browser: the public key out of its armor, the card data as the reference's elements encrypt it.
    const b64 = made.publicKeyPem!.replace(/-----(BEGIN|END) PUBLIC KEY-----/g, '').trim()
    const publicKey = await jose.importJWK(
      { kty: 'OKP', crv: 'X25519', x: Buffer.from(b64, 'base64').toString('base64url') },
      'ECDH-ES',
    )
    const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031, cvc: '123' }
    const encrypted = await new jose.CompactEncrypt(new TextEncoder().encode(JSON.stringify(card)))
      .setProtectedHeader({ alg: 'ECDH-ES', enc: 'A256GCM', kid: made.keyId! })
      .encrypt(publicKey)
    const browser = vault.node(await vault.key('public', ['token:create']))
    const token = await browser.tokens.create({ type: 'card', encrypted })
    expect(token.type).toBe('card')
    expect(token.id).toBeTypeOf('string')
    // A JWE to the other key under this key's id: the same 400 as any undecryptable one.
    const otherKey = await jose.importJWK(
      {
        kty: 'OKP',
        crv: 'X25519',
        x: Buffer.from(
          second.publicKeyPem!.replace(/-----(BEGIN|END) PUBLIC KEY-----/g, '').trim(),
          'base64',
        ).toString('base64url'),
      },
      'ECDH-ES',
    )
    const wrong = await new jose.CompactEncrypt(new TextEncoder().encode(JSON.stringify(card)))
      .setProtectedHeader({ alg: 'ECDH-ES', enc: 'A256GCM', kid: made.keyId! })
      .encrypt(otherKey)
    expect(await failedStatus(browser.tokens.create({ type: 'card', encrypted: wrong }))).toBe(400)
    await bt.keys.delete(made.keyId!)
    await bt.keys.delete(second.keyId!)
    expect(await failedStatus(bt.keys.get(made.keyId!))).toBe(404)
    expect(await failedStatus(browser.tokens.create({ type: 'card', encrypted }))).toBe(400)
    const reader = vault.node(await vault.key('private', ['token:read']))
    expect(await failedStatus(reader.keys.list())).toBe(403)
  })
})

/**
 * Pre-configured proxies' transforms, run in the formula sandbox with the reference's contract
 * (docs/api/proxies/pre-configured-proxies, "Transforms"; docs/api/proxies/proxy-errors): request
 * and response transforms, `bt` as the proxy's application (the inbound flow), the answers of a
 * throwing, a broken and a hung transform, and `require_auth: false` (a call without an API key).
 * Each test starts the sandbox's worker: 120 s each, for a busy machine.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { sandboxRunner } from '../../adapters/sandbox/index.js'
import { ServiceError } from '../../src/kernel/errors.js'
import { createTestVault, type TestVault } from '../../testing/vault.js'

const DEST = 'https://api.partner.test'
const SLOW = 120_000
const sandbox = sandboxRunner({ poolSize: 1, timeoutMs: 5000 })
/** The one sandbox, kept open across the tests (a vault closes its runner). */
const runner = { check: sandbox.check, run: sandbox.run, close: async () => {} }
let vault: TestVault
afterEach(() => vault?.close())
afterAll(() => sandbox.close())

const failure = async (p: Promise<unknown>): Promise<ServiceError> => {
  try {
    await p
  } catch (error) {
    if (error instanceof ServiceError) return error
    throw error
  }
  throw new Error('expected a ServiceError')
}

/** A vault whose destination answers `answer` (echo by default), and a proxy to it made with `fields`. */
async function proxyWith(
  fields: Record<string, unknown>,
  answer?: (r: Request) => Response | Promise<Response>,
) {
  vault = await createTestVault({ runner, destinations: { [DEST]: answer ?? 'echo' } })
  const proxy = await vault
    .client('management')
    .proxies.create({ name: 'partner', destination_url: `${DEST}/api`, ...fields })
  return proxy
}

const code = (body: string) => ({ code: `module.exports = async function (req) {\n${body}\n}` })

describe('request transforms', () => {
  it(
    'get the reference args and configuration; their body and headers go to the destination, expressions then replaced',
    async () => {
      const proxy = await proxyWith({
        configuration: { API_SECRET: 'sk_live_1' },
        request_transform: code(`
          const { body, headers, method, path, query } = req.args
          return {
            body: { ...body, seen: [method, path, query], number: '{{ ' + body.card + " | json: '$.number' }}" },
            headers: { ...headers, authorization: 'Bearer ' + req.configuration.API_SECRET },
          }`),
      })
      const token = await vault.client().tokens.create({ type: 'card', data: { number: '4242424242424242' } })
      const answer = await vault.client().proxy.invoke({
        method: 'POST',
        proxy_key: proxy.key,
        path: '/charges',
        query: 'x=1',
        headers: { 'content-type': 'application/json', 'x-mine': 'kept' },
        body: JSON.stringify({ card: token.id }),
      })
      expect(answer.status).toBe(200)
      const [got] = vault.proxy.received()
      expect(got!.url).toBe(`${DEST}/api/charges?x=1`)
      expect(got!.headers.authorization).toBe('Bearer sk_live_1')
      expect(got!.headers['x-mine']).toBe('kept')
      expect(JSON.parse(got!.body)).toEqual({
        card: token.id,
        seen: ['POST', '/charges', '?x=1'],
        number: '4242424242424242',
      })
    },
    SLOW,
  )

  it(
    'tokenize inbound data with bt as the proxy application: the destination receives a token, not the data',
    async () => {
      vault = await createTestVault({ runner, destinations: { [DEST]: 'echo' } })
      const proxy = await vault.client('management').proxies.create({
        name: 'inbound',
        destination_url: DEST,
        application: { id: vault.applications.private.id },
        require_auth: false,
        request_transform: code(`
          const token = await req.bt.tokenize({ type: 'card_number', data: req.args.body.card_number })
          return { body: { ...req.args.body, card_number: token.id }, headers: req.args.headers }`),
      })
      // No API key at all: the third party holds only the proxy's key.
      const answer = await vault.service.proxy.invoke({
        method: 'POST',
        proxy_key: proxy.key,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ card_number: '4111111111111111', name: 'Jo' }),
      })
      expect(answer.status).toBe(200)
      const sent = JSON.parse(vault.proxy.received()[0]!.body) as { card_number: string; name: string }
      expect(sent.name).toBe('Jo')
      expect(sent.card_number).not.toContain('4111')
      const stored = await vault.client().tokens.get(sent.card_number)
      expect(stored.data).toBe('4111111111111111')
    },
    SLOW,
  )
})

describe('response transforms', () => {
  it(
    'tokenize what the destination answers (2xx), and do not run on any other status',
    async () => {
      let status = 200
      const proxy = await proxyWith(
        {
          response_transform: code(`
            const token = await req.bt.tokenize({ type: 'card_number', data: req.args.body.pan })
            return { body: { pan: token.id }, headers: { ...req.args.headers, 'x-transformed': 'yes' } }`),
        },
        () => Response.json({ pan: '5555555555554444' }, { status }),
      )
      await vault
        .client('management')
        .proxies.patch(proxy.id, { application: { id: vault.applications.private.id } })
      const call = { method: 'GET', proxy_key: proxy.key }
      const answer = await vault.client().proxy.invoke(call)
      expect(answer.status).toBe(200)
      expect(answer.headers['x-transformed']).toBe('yes')
      const pan = (JSON.parse(answer.body) as { pan: string }).pan
      expect(pan).not.toContain('5555')
      expect((await vault.client().tokens.get(pan)).data).toBe('5555555555554444')
      status = 402
      const declined = await vault.client().proxy.invoke(call)
      expect(declined.status).toBe(402)
      expect(JSON.parse(declined.body)).toEqual({ pan: '5555555555554444' })
    },
    SLOW,
  )
})

describe('the headers a transform answers', () => {
  it(
    'may hold 16 384 bytes in all; one more is the transform’s failure (500 naming it)',
    async () => {
      // One header `x-fill` whose name, value, `: ` and CR LF come to `total` bytes.
      const proxy = await proxyWith({
        response_transform: code(
          "return { body: 'ok', headers: { 'x-fill': 'a'.repeat(Number(req.args.body.headers['x-total']) - 10) } }",
        ),
      })
      const call = (total: number) =>
        vault
          .client()
          .proxy.invoke({ method: 'GET', proxy_key: proxy.key, headers: { 'x-total': String(total) } })
      const answered = await call(16_384)
      expect(answered.headers['x-fill']).toHaveLength(16_374)
      const error = await failure(call(16_385))
      expect(error.code).toBe('formula_failed')
      expect(error.message).toContain('at most 16384 bytes')
    },
    SLOW,
  )
})

describe('transform errors answer as the reference does, and nothing is sent', () => {
  it(
    'a formulas SDK error keeps its status and errors; any other throw is 500; code that cannot load is 422; a hung one is stopped',
    async () => {
      const proxy = await proxyWith({
        request_transform: code(`
          const { AuthenticationError } = require('@basis-theory/basis-theory-reactor-formulas-sdk-js')
          throw new AuthenticationError('MY-CUSTOM-API-KEY header is required')`),
      })
      const call = { method: 'POST', proxy_key: proxy.key, body: 'x' }
      const sdkError = await failure(vault.client().proxy.invoke(call))
      expect(sdkError.status).toBe(401)
      expect(sdkError.issues).toEqual({ error: ['MY-CUSTOM-API-KEY header is required'] })
      const patch = (body: string) =>
        vault.client('management').proxies.patch(proxy.id, { request_transform: { code: body } })
      await patch('module.exports = async function () { throw new Error("boom") }')
      expect((await failure(vault.client().proxy.invoke(call))).status).toBe(500)
      await patch('module.exports = async function ( {')
      expect((await failure(vault.client().proxy.invoke(call))).code).toBe('formula_invalid')
      await patch('module.exports = async function () { for (;;) {} }')
      const hung = await failure(vault.client().proxy.invoke(call))
      expect(hung.code).toBe('formula_failed')
      expect(hung.status).toBe(504)
      expect(vault.proxy.received()).toHaveLength(0)
    },
    SLOW,
  )

  it(
    'CustomHttpResponseError answers its own status, headers and body (over HTTP, not wrapped in proxy_error)',
    async () => {
      const proxy = await proxyWith({
        request_transform: code(`
          const { CustomHttpResponseError } = require('@basis-theory/basis-theory-reactor-formulas-sdk-js')
          throw new CustomHttpResponseError({ status: 409, headers: { 'Custom-1': 'v1' }, body: { myCustomError: 'nope' } })`),
      })
      const response = await vault.http(
        new Request('http://vault/proxy', {
          method: 'POST',
          headers: { 'SVC-API-KEY': vault.keys.private, 'SVC-PROXY-KEY': proxy.key },
          body: 'x',
        }),
      )
      expect(response.status).toBe(409)
      expect(response.headers.get('custom-1')).toBe('v1')
      expect(await response.json()).toEqual({ myCustomError: 'nope' })
      expect(vault.proxy.received()).toHaveLength(0)
    },
    SLOW,
  )

  it(
    "CustomHttpResponseError's framing headers and values HTTP can't carry are dropped, the others kept",
    async () => {
      const proxy = await proxyWith({
        request_transform: code(`
          const { CustomHttpResponseError } = require('@basis-theory/basis-theory-reactor-formulas-sdk-js')
          throw new CustomHttpResponseError({ status: 409, body: 'nope', headers: {
            'Transfer-Encoding': 'chunked', Connection: 'upgrade', Upgrade: 'x', 'Content-Length': '99',
            'X-Broken': 'a\\r\\nSet-Cookie: s=1', 'X-Wide': 'é€', 'X-Kept': 'café' } })`),
      })
      const answer = await vault.client().proxy.invoke({ method: 'POST', proxy_key: proxy.key, body: 'x' })
      expect(answer.status).toBe(409)
      expect(answer.headers).toEqual({ 'x-kept': 'café' })
      const response = await vault.http(
        new Request('http://vault/proxy', {
          method: 'POST',
          headers: { 'SVC-API-KEY': vault.keys.private, 'SVC-PROXY-KEY': proxy.key },
          body: 'x',
        }),
      )
      expect(response.status).toBe(409)
      expect(response.headers.get('transfer-encoding')).toBeNull()
      expect(response.headers.get('set-cookie')).toBeNull()
      expect(await response.text()).toBe('nope')
    },
    SLOW,
  )
})

describe('require_auth', () => {
  it(
    'false: called over HTTP with the proxy key alone; true (the default): no API key is a 401 and nothing is sent',
    async () => {
      const proxy = await proxyWith({ require_auth: false })
      const call = (key: string) =>
        vault.http(
          new Request(`http://vault/proxy/hook?svc-proxy-key=${encodeURIComponent(key)}`, {
            method: 'POST',
            headers: { 'content-type': 'text/plain' },
            body: 'hello',
          }),
        )
      const open = await call(proxy.key)
      expect(open.status).toBe(200)
      expect(vault.proxy.received()[0]).toMatchObject({ url: `${DEST}/api/hook`, body: 'hello' })
      const closed = await vault.client('management').proxies.patch(proxy.id, { require_auth: true })
      const refused = await call(closed.key)
      expect(refused.status).toBe(401)
      expect(((await refused.json()) as { proxy_error: { status: number } }).proxy_error.status).toBe(401)
      expect((await call(`${proxy.key.slice(0, -2)}xx`)).status).toBe(401)
      expect(vault.proxy.received()).toHaveLength(1)
    },
    SLOW,
  )

  it(
    'a call without an API key whose proxy key is refused is answered 401 before its body is read',
    async () => {
      const proxy = await proxyWith({ require_auth: true })
      let pulled = 0
      // A body that never ends: answering at all shows it was not read.
      const endless = () =>
        new ReadableStream<Uint8Array>({
          pull(controller) {
            pulled++
            if (pulled === 1) controller.enqueue(new Uint8Array(16))
          },
        })
      for (const key of [proxy.key, `${proxy.key.slice(0, -2)}xx`, 'not-a-key']) {
        const response = await vault.http(
          new Request(`http://vault/proxy/hook?svc-proxy-key=${encodeURIComponent(key)}`, {
            method: 'POST',
            headers: { 'content-type': 'text/plain', 'content-length': '1000000' },
            body: endless(),
            duplex: 'half',
          } as RequestInit),
        )
        expect(response.status).toBe(401)
      }
      expect(vault.proxy.received()).toHaveLength(0)
    },
    SLOW,
  )
})

describe('a body a transform gets', () => {
  it(
    'is its text when it nests deeper than 64 levels (parsed, a 500 000-deep body overflowed the stack: a 500)',
    async () => {
      const proxy = await proxyWith({
        request_transform: code(
          'return { body: { kind: typeof req.args.body, length: req.args.body.length } }',
        ),
      })
      const deep = `${'['.repeat(500_000)}${']'.repeat(500_000)}`
      const answer = await vault.client().proxy.invoke({
        method: 'POST',
        proxy_key: proxy.key,
        headers: { 'content-type': 'application/json' },
        body: deep,
      })
      expect(answer.status).toBe(200)
      expect(JSON.parse(vault.proxy.received()[0]!.body)).toEqual({ kind: 'string', length: 1_000_000 })
      // 64 levels are parsed as JSON.
      await vault.client().proxy.invoke({
        method: 'POST',
        proxy_key: proxy.key,
        headers: { 'content-type': 'application/json' },
        body: `${'['.repeat(64)}${']'.repeat(64)}`,
      })
      expect(JSON.parse(vault.proxy.received()[1]!.body).kind).toBe('object')
    },
    SLOW,
  )
})

describe('changing what a proxy bound to an application runs', () => {
  it(
    'asks application:update beside proxy:update: its transforms, destination or require_auth; not its name',
    async () => {
      const made = await proxyWith({ request_transform: code('return { body: req.args.body }') })
      const proxy = await vault
        .client('management')
        .proxies.patch(made.id, { application: { id: vault.applications.private.id } })
      const { key } = await vault.service.admin.createApplication({
        tenantId: vault.tenant.id,
        name: 'proxy editor',
        type: 'management',
        permissions: ['proxy:read', 'proxy:update'],
      })
      const editor = vault.service.connect(key)
      const patches = [
        { request_transform: code("return { body: await req.bt.detokenize({ c: '{{ x }}' }) }") },
        { response_transform: code('return { body: 1 }') },
        { destination_url: `${DEST}/elsewhere` },
        { require_auth: false },
      ]
      for (const patch of patches)
        expect((await failure(editor.proxies.patch(proxy.id, patch))).code).toBe('forbidden')
      expect((await editor.proxies.patch(proxy.id, { name: 'renamed' })).name).toBe('renamed')
      // With application:update too, it may.
      const full = await vault.service.admin.createApplication({
        tenantId: vault.tenant.id,
        name: 'owner',
        type: 'management',
        permissions: ['proxy:read', 'proxy:update', 'application:update'],
      })
      await vault.service.connect(full.key).proxies.patch(proxy.id, { require_auth: false })
    },
    SLOW,
  )
})

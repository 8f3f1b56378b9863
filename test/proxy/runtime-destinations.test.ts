/**
 * A running `serve --test-mode` registers test destinations at run time:
 * `POST /_test/proxy/destinations { origin, respond }` (echo or a canned answer), listed by GET,
 * removed by DELETE and by reset (back to the `--test-destination` ones), each on the egress list
 * only while it is routed. The legacy SDK (`@basis-theory/basis-theory-js@1.79.3`, unmodified,
 * `http://localhost:PORT`) reaches one registered at run time, and what it received is in
 * `GET /_test/proxy`. Bounds are literal numbers, hostile input a 400 that changes nothing. One
 * server for the file: a start takes seconds on a busy machine (120 s for the hook).
 */
import { BasisTheory } from '@basis-theory/basis-theory-js'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { serve } from '../../bin/serve.js'

const ADMIN = 'admin-token-for-runtime-destinations-0123'
const START = 'https://start.processor.test'
const CHARGES = 'https://api.charges.test'
const SLOW = 120_000

let server: Awaited<ReturnType<typeof serve>>
let base = ''
let privateKey = ''
let tokenId = ''
let management = ''

const control = (method: string, path: string, body?: unknown) =>
  fetch(`${base}/_test/${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  })
const listed = async () =>
  (
    (await (await control('GET', 'proxy/destinations')).json()) as {
      data: { origin: string; respond: unknown }[]
    }
  ).data
const received = async (origin?: string) =>
  (
    (await (
      await control('GET', `proxy${origin ? `?origin=${encodeURIComponent(origin)}` : ''}`)
    ).json()) as {
      origins: string[]
      data: { origin: string; method: string; url: string; headers: Record<string, string>; body: string }[]
    }
  ).data

const sdk = () => new BasisTheory().init(privateKey, { apiBaseUrl: base, disableTelemetry: true } as never)

beforeAll(async () => {
  const lines: string[] = []
  server = await serve({
    port: 0,
    host: '127.0.0.1',
    store: 'memory',
    print: (line) => lines.push(line),
    log: () => {},
    testMode: true,
    adminToken: ADMIN,
    headerPrefix: 'BT',
    testDestinations: [START],
  })
  base = server.url.replace('127.0.0.1', 'localhost')
  management = lines.find((l) => l.startsWith('management key: '))!.slice('management key: '.length)
}, SLOW)
afterAll(async () => {
  await server?.close()
})
// Each test from the state right after start (a reset forgets the application made for the last one).
beforeEach(async () => {
  expect((await control('POST', 'reset')).status).toBe(204)
  const api = async (path: string, key: string, body: unknown) =>
    (await (
      await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'bt-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
    ).json()) as Record<string, string>
  privateKey = (
    await api('/applications', management, {
      name: 'shop',
      type: 'private',
      permissions: ['token:create', 'token:use'],
    })
  ).key!
  tokenId = (await api('/tokens', privateKey, { type: 'card', data: { number: '4242424242424242' } })).id!
})

describe('POST /_test/proxy/destinations', () => {
  it('a canned destination registered at run time is reached by bt.proxy.post; GET lists it, DELETE and reset remove it', async () => {
    expect(await listed()).toEqual([{ origin: START, respond: 'echo' }])
    const canned = { status: 201, headers: { 'x-charge': 'ch_1' }, body: { id: 'ch_1', paid: true } }
    const made = await control('POST', 'proxy/destinations', { origin: CHARGES, respond: canned })
    expect(made.status).toBe(201)
    expect(await made.json()).toEqual({ origin: CHARGES, respond: canned })
    expect(await listed()).toEqual([
      { origin: START, respond: 'echo' },
      { origin: CHARGES, respond: canned },
    ])

    const answer = await (await sdk()).proxy.post({
      path: 'v1/charges',
      headers: { 'BT-PROXY-URL': CHARGES, 'Content-Type': 'application/json' },
      body: JSON.stringify({ card: { number: `{{ ${tokenId} | json: '$.number' }}` } }),
    })
    expect(typeof answer === 'string' ? JSON.parse(answer) : answer).toEqual({ id: 'ch_1', paid: true })
    const got = await received(CHARGES)
    expect(got).toHaveLength(1)
    expect(got[0]).toMatchObject({ origin: CHARGES, method: 'POST', url: `${CHARGES}/v1/charges` })
    expect(JSON.parse(got[0]!.body)).toEqual({ card: { number: '4242424242424242' } })

    // Echo, registered the same way, replaces the canned answer of the same origin.
    expect((await control('POST', 'proxy/destinations', { origin: CHARGES, respond: 'echo' })).status).toBe(
      201,
    )
    const echoed = await (await sdk()).proxy.post({
      headers: { 'BT-PROXY-URL': CHARGES, 'Content-Type': 'application/json' },
      body: JSON.stringify({ n: `{{ ${tokenId} | json: '$.number' }}` }),
    })
    expect((typeof echoed === 'string' ? JSON.parse(echoed) : echoed).body).toEqual({ n: '4242424242424242' })

    // Removed: off the egress list again (400), nothing received, nothing sent to the network.
    expect((await control('DELETE', `proxy/destinations?origin=${encodeURIComponent(CHARGES)}`)).status).toBe(
      204,
    )
    expect((await control('DELETE', `proxy/destinations?origin=${encodeURIComponent(CHARGES)}`)).status).toBe(
      404,
    )
    const refused = await (await sdk()).proxy
      .post({ headers: { 'BT-PROXY-URL': CHARGES }, body: 'x' })
      .catch((e: unknown) => e as { status: number })
    expect((refused as { status: number }).status).toBe(400)
    expect(await received(CHARGES)).toHaveLength(2)

    // Reset: back to the start's destinations, nothing received.
    await control('POST', 'proxy/destinations', { origin: CHARGES })
    expect((await control('POST', 'reset')).status).toBe(204)
    expect(await listed()).toEqual([{ origin: START, respond: 'echo' }])
    expect(await received()).toEqual([])
  })

  it('a canned error status comes back as the destination’s', async () => {
    await control('POST', 'proxy/destinations', {
      origin: CHARGES,
      respond: { status: 402, body: 'card declined', headers: { 'content-type': 'text/plain' } },
    })
    const error = (await (
      await sdk()
    ).proxy
      .post({ headers: { 'BT-PROXY-URL': CHARGES }, body: 'x' })
      .catch((e: unknown) => e)) as { status: number; data: unknown }
    expect(error.status).toBe(402)
    expect(JSON.stringify(error.data)).toContain('card declined')
    expect((await control('DELETE', 'proxy/destinations')).status).toBe(204)
    expect(await listed()).toEqual([])
    await control('POST', 'reset')
  })

  it('at most 32 destinations (the start one counted): the 32nd passes, a 33rd is a 400; replacing one at the bound passes', async () => {
    for (let i = 1; i < 32; i++)
      expect((await control('POST', 'proxy/destinations', { origin: `https://d${i}.test` })).status).toBe(201)
    expect(await listed()).toHaveLength(32)
    const over = await control('POST', 'proxy/destinations', { origin: 'https://d32.test' })
    expect(over.status).toBe(400)
    expect(((await over.json()) as { detail: string }).detail).toContain('at most 32')
    expect(
      (await control('POST', 'proxy/destinations', { origin: 'https://d1.test', respond: {} })).status,
    ).toBe(201)
    expect(await listed()).toHaveLength(32)
    await control('POST', 'reset')
    expect(await listed()).toHaveLength(1)
  })

  it('a canned body of 65536 bytes passes, 65537 is a 400; 32 headers pass, 33 are a 400', async () => {
    const post = (respond: unknown) => control('POST', 'proxy/destinations', { origin: CHARGES, respond })
    expect((await post({ body: 'a'.repeat(65_536) })).status).toBe(201)
    expect((await post({ body: 'a'.repeat(65_537) })).status).toBe(400)
    // A JSON body counts as the JSON written: ["aaa…"] is the string plus 4 bytes.
    expect((await post({ body: ['a'.repeat(65_532)] })).status).toBe(201)
    expect((await post({ body: ['a'.repeat(65_533)] })).status).toBe(400)
    // UTF-8 bytes, not characters: é is two.
    expect((await post({ body: 'é'.repeat(32_768) })).status).toBe(201)
    expect((await post({ body: `${'é'.repeat(32_768)}a` })).status).toBe(400)
    const headers = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`x-h${i}`, 'v']))
    expect((await post({ headers: headers(32) })).status).toBe(201)
    expect((await post({ headers: headers(33) })).status).toBe(400)
    await control('POST', 'reset')
  })

  it('hostile input is a 400 problem that changes nothing; without the admin token a 401', async () => {
    const before = await listed()
    const bad: unknown[] = [
      '[]',
      'null',
      '"https://a.test"',
      {},
      { origin: 'not a url' },
      { origin: 'ftp://a.test' },
      { origin: 'https://a.test/path' },
      { origin: 'https://a.test?q=1' },
      { origin: 'https://user:pass@a.test' },
      { origin: 7 },
      { origin: `https://${'a'.repeat(2048)}.test` },
      { origin: CHARGES, extra: 1 },
      { origin: CHARGES, respond: 'canned' },
      { origin: CHARGES, respond: [] },
      { origin: CHARGES, respond: { status: 199 } },
      { origin: CHARGES, respond: { status: 600 } },
      { origin: CHARGES, respond: { status: 200.5 } },
      { origin: CHARGES, respond: { status: '200' } },
      { origin: CHARGES, respond: { status: 204, body: 'x' } },
      { origin: CHARGES, respond: { headers: [] } },
      { origin: CHARGES, respond: { headers: { 'bad name': 'v' } } },
      { origin: CHARGES, respond: { headers: { 'x-a': 'line\r\nx-injected: 1' } } },
      { origin: CHARGES, respond: { headers: { 'x-a': 1 } } },
      { origin: CHARGES, respond: { headers: { 'content-length': '1' } } },
      { origin: CHARGES, respond: { headers: { 'transfer-encoding': 'chunked' } } },
      { origin: CHARGES, respond: { headers: { 'x-a': 'a'.repeat(8193) } } },
      { origin: CHARGES, respond: { script: 'x' } },
      '{"origin":"https://a.test","respond":{"__proto__":{"status":200}}}',
      '{"origin":',
    ]
    for (const body of bad) {
      const answer = await control('POST', 'proxy/destinations', body)
      expect(answer.status, JSON.stringify(body)).toBe(400)
      expect(answer.headers.get('content-type')).toContain('application/problem+json')
    }
    expect((await control('DELETE', 'proxy/destinations?origin=nope')).status).toBe(400)
    expect(await listed()).toEqual(before)
    expect((await fetch(`${base}/_test/proxy/destinations`)).status).toBe(401)
    const anonymous = await fetch(`${base}/_test/proxy/destinations`, {
      method: 'POST',
      body: JSON.stringify({ origin: CHARGES }),
    })
    expect(anonymous.status).toBe(401)
    expect(await listed()).toEqual(before)
  })
})

describe('the test kit: the same destinations', () => {
  it('createTestVault takes a canned answer as the route does, and keeps what it received', async () => {
    const { createTestVault } = await import('../../testing/index.js')
    const vault = await createTestVault({
      destinations: { [CHARGES]: { status: 201, headers: { 'x-charge': 'ch_2' }, body: { id: 'ch_2' } } },
    })
    const token = await vault.client().tokens.create({ type: 'token', data: 'pan-kit-1' })
    const answer = await vault.client().proxy.invoke({
      method: 'POST',
      url: CHARGES,
      headers: { 'content-type': 'text/plain' },
      body: `n={{ ${token.id} }}`,
    })
    expect(answer).toMatchObject({ status: 201, body: '{"id":"ch_2"}' })
    expect(answer.headers['x-charge']).toBe('ch_2')
    expect(vault.proxy.received(CHARGES).map((r) => r.body)).toEqual(['n=pan-kit-1'])
  })

  it('allowTestEgress adds origins to the egress list and takes them off again; the given ones stay', async () => {
    const { createTestVault } = await import('../../testing/index.js')
    const vault = await createTestVault({ destinations: { [CHARGES]: 'echo' } })
    const call = async (url: string) =>
      (await vault
        .client()
        .proxy.invoke({ method: 'POST', url, body: 'x' })
        .then((a) => a.status)
        .catch((e: { code: string }) => e.code)) as number | string
    const other = 'https://other.test'
    expect(await call(other)).toBe('validation_failed')
    vault.service.admin.allowTestEgress([other])
    // On the list now: it reaches the client, which routes no such origin (a refused connection).
    expect(await call(other)).toBe('destination_failed')
    expect(await call(CHARGES)).toBe(200)
    vault.service.admin.allowTestEgress([])
    expect(await call(other)).toBe('validation_failed')
    expect(await call(CHARGES)).toBe(200)
    expect(() => vault.service.admin.allowTestEgress(['ftp://x.test'])).toThrow(TypeError)
    expect(await call(CHARGES)).toBe(200)
  })
})

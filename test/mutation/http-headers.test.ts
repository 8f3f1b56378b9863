/**
 * Promises of the HTTP adapter's headers, each tested from outside the handler: every answer that
 * carries a body says `Cache-Control: no-store`; a CORS origin is allowed only when it is one of the
 * listed origins exactly (a near miss is not); when a request sends both the `SVC-` and the `BT-`
 * form of a header, the `SVC-` one is the one read (docs/server.md).
 */
import { describe, expect, it } from 'vitest'
import { ROUTES } from '../../adapters/http/routes.js'
import { setup } from '../http/setup.js'

const APP = 'https://app.example'

describe('Cache-Control: no-store on every answer with data', () => {
  it('every route, called by a private and a management key, answers no-store whenever it answers a body', async () => {
    const { call, keys } = await setup({ runner: null })
    const made = await call('POST', '/tokens', {
      key: keys.full,
      body: { id: 't1', type: 'token', data: 'x' },
    })
    expect(made.status).toBe(201)
    expect(made.headers.get('cache-control')).toBe('no-store')
    // Deletes last, so that the reads before them find the token.
    const routes = [...ROUTES].sort(([a], [b]) => Number(a === 'DELETE') - Number(b === 'DELETE'))
    const withData: string[] = []
    for (const key of [keys.full, keys.management]) {
      for (const [method, pattern] of routes) {
        const path = pattern.replace(/:[a-z_]+/g, 't1')
        const headers: Record<string, string> =
          method === 'PATCH' ? { 'content-type': 'application/merge-patch+json' } : {}
        const body = method === 'GET' || method === 'DELETE' ? undefined : '{}'
        const answer = await call(method, path, { key, headers, ...(body === undefined ? {} : { body }) })
        const text = await answer.text()
        if (text === '') continue
        expect(answer.headers.get('cache-control'), `${method} ${path}: ${answer.status}`).toBe('no-store')
        if (answer.status < 300) withData.push(`${method} ${pattern}`)
      }
    }
    // Not only problems: successful answers with data were among them.
    expect(withData).toEqual(
      expect.arrayContaining(['GET /tokens/:id', 'GET /tokens', 'GET /v2/tokens', 'GET /tenants/self']),
    )
    const health = await call('GET', '/healthz')
    expect(health.headers.get('cache-control')).toBe('no-store')
  })
})

describe('CORS origins are matched exactly', () => {
  const NEAR_MISSES = [
    'https://app.example.evil.com',
    'https://app.example-evil.com',
    'https://app.exampl',
    'http://app.example',
    'https://app.example:8443',
    'https://evil.app.example',
  ]

  it('the listed origin is allowed; each near miss gets no CORS header, preflight or not', async () => {
    const { call, keys } = await setup({ runner: null, cors: { origins: [APP] } })
    const simple = (origin: string) => call('POST', '/sessions', { key: keys.public, headers: { origin } })
    const preflight = (origin: string) =>
      call('OPTIONS', '/sessions', { headers: { origin, 'access-control-request-method': 'POST' } })
    expect((await simple(APP)).headers.get('access-control-allow-origin')).toBe(APP)
    expect((await preflight(APP)).headers.get('access-control-allow-origin')).toBe(APP)
    for (const origin of NEAR_MISSES) {
      expect((await simple(origin)).headers.get('access-control-allow-origin'), origin).toBeNull()
      expect((await preflight(origin)).headers.get('access-control-allow-origin'), origin).toBeNull()
    }
  })
})

describe('SVC- wins over BT- when a request sends both', () => {
  it('the API key: the SVC- key is the one used, whether the BT- one is another valid key or none', async () => {
    const { handler, keys, call } = await setup({ runner: null })
    await call('POST', '/tokens', { key: keys.full, body: { id: 't1', type: 'token', data: 'x' } })
    const get = async (headers: Record<string, string>) =>
      (await handler(new Request('http://vault.test/tokens/t1', { headers }))).status
    // The private key reads the token, the public key may not (403): the status tells which key was read.
    expect(await get({ 'SVC-API-KEY': keys.full })).toBe(200)
    expect(await get({ 'SVC-API-KEY': keys.public })).toBe(403)
    expect(await get({ 'SVC-API-KEY': keys.full, 'BT-API-KEY': keys.public })).toBe(200)
    expect(await get({ 'SVC-API-KEY': keys.public, 'BT-API-KEY': keys.full })).toBe(403)
    expect(await get({ 'SVC-API-KEY': 'key_nope', 'BT-API-KEY': keys.full })).toBe(401)
  })

  it('the transaction header: a write under SVC-TRANSACTION-ID is staged in that transaction, whatever BT- names', async () => {
    const { handler, keys, call } = await setup({ runner: null })
    await call('POST', '/tokens', { key: keys.full, body: { id: 't1', type: 'token', data: 'before' } })
    const tx = (await (await call('POST', '/transactions', { key: keys.full })).json()) as { id: string }
    const other = (await (await call('POST', '/transactions', { key: keys.full })).json()) as { id: string }
    const update = await handler(
      new Request('http://vault.test/tokens/t1', {
        method: 'PATCH',
        headers: {
          'SVC-API-KEY': keys.full,
          'SVC-TRANSACTION-ID': tx.id,
          'BT-TRANSACTION-ID': other.id,
          'content-type': 'application/merge-patch+json',
        },
        body: JSON.stringify({ data: 'staged' }),
      }),
    )
    expect(update.status).toBe(200)
    const read = async (transactionId?: string) =>
      (
        (await (
          await call('GET', '/tokens/t1', { key: keys.full, ...(transactionId ? { transactionId } : {}) })
        ).json()) as {
          data: unknown
        }
      ).data
    expect(await read()).toBe('before')
    expect(await read(tx.id)).toBe('staged')
    expect(await read(other.id)).toBe('before')
  })

  it('the idempotency header: a repeat with the same SVC- key replays, whatever BT- says', async () => {
    const { handler, keys } = await setup({ runner: null })
    const create = (svc: string, bt: string) =>
      handler(
        new Request('http://vault.test/tokens', {
          method: 'POST',
          headers: {
            'SVC-API-KEY': keys.full,
            'SVC-IDEMPOTENCY-KEY': svc,
            'BT-IDEMPOTENCY-KEY': bt,
            'content-type': 'application/json',
          },
          body: JSON.stringify({ type: 'token', data: 'x' }),
        }),
      )
    const first = (await (await create('same', 'one')).json()) as { id: string }
    const again = (await (await create('same', 'two')).json()) as { id: string }
    const fresh = (await (await create('other', 'one')).json()) as { id: string }
    expect(again.id).toBe(first.id)
    expect(fresh.id).not.toBe(first.id)
  })
})

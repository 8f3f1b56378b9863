import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createHttpHandler, type HttpLogEvent } from '../../adapters/http/index.js'
import type { Service } from '../../entry/index.js'
import { assertProperty } from '../../testing/store/seed.js'
import { empty, json, problem, setup } from './setup.js'

/** A stream of `chunks` chunks of `size` bytes that counts how many times it was pulled. */
function countingStream(chunks: number, size: number) {
  const counter = { pulls: 0 }
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        counter.pulls++
        if (counter.pulls > chunks) controller.close()
        else controller.enqueue(new Uint8Array(size).fill(0x20))
      },
    },
    { highWaterMark: 0 },
  )
  return { stream, counter }
}

describe('routing', () => {
  it('answers 404 with a problem for an unknown route', async () => {
    const { call, keys } = await setup()
    for (const path of [
      '/',
      '/nope',
      '/tokens/a/b',
      '/tokens/a/children/b/c',
      '//tokens',
      '/tokens//children',
    ]) {
      const body = await problem(await call('GET', path, { key: keys.full }), 404)
      expect(body).toMatchObject({ type: 'about:blank', title: 'Not Found', status: 404 })
    }
  })

  it('answers 405 with Allow for a wrong method on a known path', async () => {
    const { call, keys } = await setup()
    const cases: [string, string, string][] = [
      ['PUT', '/tokens', 'GET, POST'],
      ['PUT', '/tokens/x', 'DELETE, GET, PATCH'],
      ['GET', '/tokens/x/children/y', 'DELETE, POST'],
      ['DELETE', '/tokens/x/children', 'GET, POST'],
      ['GET', '/transactions/x/commit', 'POST'],
      ['PATCH', '/applications/x', 'DELETE, GET, PUT'],
      ['GET', '/sessions/authorize/', 'POST'],
    ]
    for (const [method, path, allow] of cases) {
      const response = await call(method, path, { key: keys.full })
      expect(response.headers.get('allow'), `${method} ${path}`).toBe(allow)
      expect((await problem(response, 405)).title).toBe('Method Not Allowed')
    }
  })

  it('accepts trailing slashes', async () => {
    const { call, keys } = await setup()
    await json(await call('POST', '/tokens/', { key: keys.full, body: { id: 'p', type: 'x', data: 1 } }), 201)
    await json(await call('GET', '/tokens/p/', { key: keys.full }), 200)
    await json(
      await call('POST', '/tokens/p/children/', { key: keys.full, body: { id: 'c', type: 'x', data: 2 } }),
      201,
    )
    await json(await call('GET', '/tokens/p/children/?type=x', { key: keys.full }), 200)
    await empty(await call('DELETE', '/tokens/p/children/c/', { key: keys.full }), 204)
    await json(await call('GET', '/applications/', { key: keys.management }), 200)
  })

  it('answers 400 for a path that is not valid percent-encoding', async () => {
    const { call, keys } = await setup()
    expect(
      (await problem(await call('GET', '/tokens/%E0%A4%A', { key: keys.full }), 400)).errors,
    ).toHaveProperty('path')
  })

  it('reads the API key header case-insensitively, with any prefix', async () => {
    const { call, keys } = await setup()
    await json(await call('POST', '/tokens', { key: keys.full, body: { id: 'k', type: 'x', data: 1 } }), 201)
    for (const name of ['svc-api-key', 'SVC-API-KEY', 'Svc-Api-Key']) {
      await json(await call('GET', '/tokens/k', { headers: { [name]: keys.full } }), 200)
    }
    await json(await call('GET', '/tokens/k', { headers: { 'bt-api-key': keys.full } }), 200)
    await problem(await call('GET', '/tokens/k', { headers: { 'XY-API-KEY': keys.full } }), 401)

    const bt = await setup({ headerPrefix: 'BT' })
    await json(
      await bt.call('POST', '/tokens', { key: bt.keys.full, body: { id: 'k', type: 'x', data: 1 } }),
      201,
    )
    await json(await bt.call('GET', '/tokens/k', { headers: { 'bt-api-key': bt.keys.full } }), 200)
    await problem(await bt.call('GET', '/tokens/k', { headers: { 'SVC-API-KEY': bt.keys.full } }), 401)
  })
})

describe('request bodies', () => {
  it('takes application/json, any application/*+json, and parameters', async () => {
    const { call, keys } = await setup()
    const types = [
      'application/json',
      'application/json; charset=utf-8',
      'Application/JSON',
      'application/merge-patch+json',
      'application/vnd.api+json',
    ]
    for (const [i, type] of types.entries()) {
      const body = JSON.stringify({ id: `t${i}`, type: 'x', data: i })
      await json(
        await call('POST', '/tokens', { key: keys.full, body, headers: { 'content-type': type } }),
        201,
      )
    }
  })

  it('answers 415 for a body that is not declared JSON', async () => {
    const { call, keys, handler } = await setup()
    const body = JSON.stringify({ type: 'x', data: 1 })
    for (const type of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'application/jsonx',
      'text/json',
    ]) {
      await problem(
        await call('POST', '/tokens', { key: keys.full, body, headers: { 'content-type': type } }),
        415,
      )
    }
    const untyped = new Request('http://vault.test/tokens', {
      method: 'POST',
      headers: { 'svc-api-key': keys.full },
      body: new Blob([body]),
    })
    expect(untyped.headers.get('content-type')).toBeNull()
    await problem(await handler(untyped), 415)
    // Declared encoded: a 415 (it was parsed as plain text); `identity` is no encoding.
    for (const encoding of ['gzip', 'deflate', 'br', 'x-anything']) {
      const headers = { 'content-type': 'application/json', 'content-encoding': encoding }
      const refused = await problem(await call('POST', '/tokens', { key: keys.full, body, headers }), 415)
      expect(refused.detail).toContain('Content-Encoding')
    }
    const identity = { 'content-type': 'application/json', 'content-encoding': 'identity' }
    await json(await call('POST', '/tokens', { key: keys.full, body, headers: identity }), 201)
  })

  it('treats a body-less POST with any content type, and an empty body, as no body', async () => {
    const { call, keys } = await setup()
    await json(
      await call('POST', '/transactions', { key: keys.full, headers: { 'content-type': 'text/plain' } }),
      201,
    )
    await json(
      await call('POST', '/transactions', {
        key: keys.full,
        body: '',
        headers: { 'content-type': 'text/html' },
      }),
      201,
    )
    await json(await call('POST', '/transactions', { key: keys.full, body: '' }), 201)
    await json(await call('POST', '/transactions', { key: keys.full, body: {} }), 201)
    await json(await call('POST', '/transactions', { key: keys.full, body: null }), 201)
  })

  it('answers 400 for malformed JSON or UTF-8, naming the body', async () => {
    const { call, keys, handler } = await setup()
    const headers = { 'content-type': 'application/json' }
    for (const body of ['{', '{"type":"x",}', "{'a':1}", 'undefined', 'NaN']) {
      const answer = await problem(await call('POST', '/tokens', { key: keys.full, body, headers }), 400)
      expect(answer.errors).toEqual({ body: ['is not valid JSON'] })
    }
    const bytes = new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x7d])
    const response = await handler(
      new Request('http://vault.test/tokens', {
        method: 'POST',
        headers: { ...headers, 'svc-api-key': keys.full },
        body: bytes,
      }),
    )
    expect((await problem(response, 400)).errors).toEqual({ body: ['is not valid UTF-8'] })
    // A JSON value that is not an object is the service's to refuse.
    for (const body of ['[]', '"x"', '42', 'null', 'true']) {
      await problem(await call('POST', '/tokens', { key: keys.full, body, headers }), 400)
    }
  })

  it('answers 413 from Content-Length without reading the body', async () => {
    const { handler, keys } = await setup({ maxBodyBytes: 64 })
    const { stream, counter } = countingStream(100, 16)
    const request = new Request('http://vault.test/tokens', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': '1600', 'svc-api-key': keys.full },
      body: stream,
      duplex: 'half',
    } as RequestInit)
    const answer = await problem(await handler(request), 413)
    expect(answer.title).toBe('Payload Too Large')
    expect(counter.pulls).toBeLessThanOrEqual(1)
  })

  it('answers 413 while streaming: reading stops once the limit is passed', async () => {
    const { handler, keys } = await setup({ maxBodyBytes: 64 })
    const { stream, counter } = countingStream(1000, 16)
    const request = new Request('http://vault.test/tokens', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'svc-api-key': keys.full },
      body: stream,
      duplex: 'half',
    } as RequestInit)
    await problem(await handler(request), 413)
    // 64 bytes is 4 chunks; the fifth passes the limit. A little read-ahead is fine, reading on is not.
    expect(counter.pulls).toBeGreaterThanOrEqual(5)
    expect(counter.pulls).toBeLessThan(10)
  })

  it('accepts a body of exactly the limit', async () => {
    const { call, keys } = await setup({ maxBodyBytes: 64 })
    const body = JSON.stringify({ type: 'x', data: 'y'.repeat(64 - 22) })
    expect(body.length).toBe(64)
    await json(
      await call('POST', '/tokens', {
        key: keys.full,
        body,
        headers: { 'content-type': 'application/json' },
      }),
      201,
    )
    await problem(
      await call('POST', '/tokens', {
        key: keys.full,
        body: `${body} `,
        headers: { 'content-type': 'application/json' },
      }),
      413,
    )
  })
})

describe('failures and logging', () => {
  it('logs one request line without the query string or any key, and nothing else', async () => {
    const { call, keys, events } = await setup()
    await problem(
      await call('GET', `/tokens/p/children/?type=secret&x=${keys.full}`, { key: keys.full }),
      400,
    )
    expect(events).toHaveLength(1)
    expect(events[0]).toMatchObject({
      kind: 'request',
      method: 'GET',
      path: '/tokens/p/children/',
      status: 400,
    })
    expect(JSON.stringify(events)).not.toContain(keys.full)
    expect(JSON.stringify(events)).not.toContain('secret')
  })

  it('answers an unexpected failure 500 without internals, and logs it', async () => {
    const events: HttpLogEvent[] = []
    const broken = {
      connect: () => ({
        tokens: {
          get: async () => {
            throw new Error('database password is hunter2')
          },
        },
      }),
    } as unknown as Service
    const handler = createHttpHandler(broken, { log: (e) => events.push(e) })
    const response = await handler(new Request('http://vault.test/tokens/x'))
    const body = await problem(response, 500)
    expect(JSON.stringify(body)).not.toContain('hunter2')
    expect(events.map((e) => e.kind)).toEqual(['error', 'request'])
    expect(events[0]).toMatchObject({ kind: 'error', error: expect.any(Error) })
  })

  it('never answers 5xx to anything a client sends', async () => {
    const { handler, keys, events } = await setup()
    const segment = fc.oneof(
      fc.constantFrom('tokens', 'children', 'transactions', 'commit', 'rollback', 'sessions', 'authorize'),
      fc.constantFrom('applications', 'reactor-formulas', 'reactors', 'react', '', '%', '%2F', '__proto__'),
      fc.string({ maxLength: 8 }).map(encodeURIComponent),
    )
    const body = fc.oneof(
      fc.constant(undefined),
      fc.jsonValue().map((v) => JSON.stringify(v)),
      fc.string({ maxLength: 40 }),
      fc.constantFrom(
        '{"__proto__":{"x":1}}',
        '{"constructor":{"prototype":{}}}',
        `${'['.repeat(5000)}${']'.repeat(5000)}`,
      ),
      fc.record({ type: fc.string(), data: fc.jsonValue(), id: fc.string() }).map((v) => JSON.stringify(v)),
    )
    await assertProperty(
      fc.asyncProperty(
        fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'),
        fc.array(segment, { minLength: 1, maxLength: 5 }),
        fc.string({ maxLength: 30 }),
        body,
        fc.constantFrom('application/json', 'text/plain', 'application/merge-patch+json', ''),
        fc.constantFrom(keys.full, keys.public, keys.management, '', 'key_nope'),
        fc.option(fc.string({ maxLength: 20 }), { nil: undefined }),
        async (method, segments, query, payload, type, key, tx) => {
          const headers = new Headers({ 'svc-api-key': key })
          if (type) headers.set('content-type', type)
          if (tx !== undefined && /^[\x20-\x7e]*$/.test(tx)) headers.set('svc-transaction-id', tx)
          const init: RequestInit = { method, headers }
          if (payload !== undefined && method !== 'GET' && method !== 'HEAD') init.body = payload
          const url = `http://vault.test/${segments.join('/')}?${encodeURIComponent(query).replace(/%3D/g, '=')}`
          const response = await handler(new Request(url, init))
          expect(response.status, `${method} ${url}`).toBeLessThan(500)
        },
      ),
      { numRuns: 400 },
    )
    expect(events.filter((e) => e.kind === 'error')).toEqual([])
  })
})

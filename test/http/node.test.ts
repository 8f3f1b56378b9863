import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import { connect } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { untouchedBody } from '../../adapters/http/handler.js'
import { type FetchHandler, toNodeListener } from '../../adapters/http/index.js'
import { setup } from './setup.js'

const servers: Server[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
})

/** Serves `handler` through `toNodeListener` on 127.0.0.1, on a free port. */
async function serve(handler: FetchHandler): Promise<string> {
  const server = createServer(toNodeListener(handler))
  servers.push(server)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  return `http://127.0.0.1:${address.port}`
}

/**
 * Sends `head` on a raw socket, then body chunks of `chunkBytes` until the server answers or
 * `totalBytes` were sent. Returns the answer's first line and how many body bytes went out.
 */
async function rawUpload(base: string, head: string, chunkBytes: number, totalBytes: number) {
  const { hostname, port } = new URL(base)
  const socket = connect(Number(port), hostname)
  await once(socket, 'connect')
  let answer = ''
  let closed = false
  socket.on('data', (d) => {
    answer += d.toString('latin1')
  })
  socket.on('error', () => {})
  socket.on('close', () => {
    closed = true
  })
  socket.write(head)
  let sent = 0
  const chunk = Buffer.alloc(chunkBytes, 0x20)
  const chunked = head.toLowerCase().includes('transfer-encoding: chunked')
  while (sent < totalBytes && answer === '' && !closed) {
    const flushed = socket.write(
      chunked
        ? Buffer.concat([Buffer.from(`${chunkBytes.toString(16)}\r\n`), chunk, Buffer.from('\r\n')])
        : chunk,
    )
    sent += chunkBytes
    // Not `once`: it rejects on the socket's 'error', and a server that answered 413 and closed
    // gives the next write an EPIPE, which is the outcome this waits for, not a failure.
    if (!flushed)
      await new Promise<void>((resolve) => {
        socket.once('drain', resolve)
        socket.once('close', () => resolve())
        socket.once('error', () => resolve())
      })
    await new Promise((resolve) => setImmediate(resolve))
  }
  // Waits for the close event; the deadline only keeps a broken server from hanging the test.
  const deadline = Date.now() + 60_000
  while (!closed && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
  socket.destroy()
  return { status: answer.split('\r\n')[0], answer, sent, closed }
}

describe('toNodeListener', () => {
  it('serves the API on a real socket with Content-Length and keep-alive', async () => {
    const { handler, keys } = await setup()
    const base = await serve(handler)
    const created = await fetch(`${base}/tokens`, {
      method: 'POST',
      headers: { 'SVC-API-KEY': keys.full, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'n1', type: 'x', data: { café: '☕' } }),
    })
    expect(created.status).toBe(201)
    const text = await created.text()
    expect(created.headers.get('content-length')).toBe(String(Buffer.byteLength(text)))
    expect(created.headers.get('connection')).toBe('keep-alive')
    const read = await fetch(`${base}/tokens/n1?ignored=1`, { headers: { 'svc-api-key': keys.full } })
    expect(await read.json()).toMatchObject({ id: 'n1', data: { café: '☕' } })
    const gone = await fetch(`${base}/tokens/n1`, { method: 'DELETE', headers: { 'svc-api-key': keys.full } })
    expect(gone.status).toBe(204)
    const wrong = await fetch(`${base}/tokens/n1`, { method: 'PUT', headers: { 'svc-api-key': keys.full } })
    expect(wrong.status).toBe(405)
    expect(wrong.headers.get('allow')).toBe('DELETE, GET, PATCH')
    expect(wrong.headers.get('content-type')).toBe('application/problem+json')
  })

  it('answers 413 to a chunked upload past the limit without reading it all, and closes the connection', async () => {
    const { handler, keys } = await setup({ maxBodyBytes: 1024 })
    const base = await serve(handler)
    const head = `POST /tokens HTTP/1.1\r\nHost: x\r\nSVC-API-KEY: ${keys.full}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`
    const total = 64 * 1024 * 1024
    const { status, sent, closed } = await rawUpload(base, head, 16 * 1024, total)
    expect(status).toMatch(/^HTTP\/1\.1 413 /)
    expect(sent).toBeLessThan(total / 4)
    expect(closed).toBe(true)
  })

  it('answers 413 from a large Content-Length before any body byte is sent', async () => {
    const { handler, keys } = await setup({ maxBodyBytes: 1024 })
    const base = await serve(handler)
    const head = `POST /tokens HTTP/1.1\r\nHost: x\r\nSVC-API-KEY: ${keys.full}\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n`
    const { hostname, port } = new URL(base)
    const socket = connect(Number(port), hostname)
    socket.write(head)
    const [data] = await once(socket, 'data')
    expect(String(data)).toMatch(/^HTTP\/1\.1 413 /)
    expect(String(data).toLowerCase()).toContain('connection: close')
    socket.destroy()
  })

  it('bridges any fetch handler: request line, headers, streamed body, status, headers and cookies back', async () => {
    const echo: FetchHandler = async (request) => {
      const url = new URL(request.url)
      const body = request.body ? await request.text() : null
      const headers = new Headers({ 'content-type': 'application/json', 'x-echo': 'yes' })
      headers.append('set-cookie', 'a=1')
      headers.append('set-cookie', 'b=2')
      return new Response(
        JSON.stringify({
          method: request.method,
          path: url.pathname,
          search: url.search,
          body,
          h: request.headers.get('x-in'),
        }),
        { status: 202, headers },
      )
    }
    const base = await serve(echo)
    const response = await fetch(`${base}/any/path?q=1`, {
      method: 'POST',
      headers: { 'x-in': 'hello' },
      body: 'payload',
    })
    expect(response.status).toBe(202)
    expect(response.headers.get('x-echo')).toBe('yes')
    expect(response.headers.getSetCookie()).toEqual(['a=1', 'b=2'])
    expect(await response.json()).toEqual({
      method: 'POST',
      path: '/any/path',
      search: '?q=1',
      body: 'payload',
      h: 'hello',
    })
    const get = await fetch(`${base}/x`)
    expect(((await get.json()) as { body: unknown }).body).toBeNull()
  })

  it('bridges answers of one chunk with their length and longer ones streamed, and keeps the path whatever the Host', async () => {
    const chunks = ['a'.repeat(70_000), 'b'.repeat(70_000), 'c']
    const handler: FetchHandler = async (request) => {
      const url = new URL(request.url)
      if (url.pathname === '/stream') {
        let i = 0
        const body = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (i < chunks.length) controller.enqueue(new TextEncoder().encode(chunks[i++]!))
            else controller.close()
          },
        })
        return new Response(body, { headers: { 'content-type': 'text/plain' } })
      }
      if (url.pathname === '/empty') return new Response(null, { status: 204 })
      return new Response(JSON.stringify({ url: request.url }), { status: 200 })
    }
    const base = await serve(handler)
    const one = await rawUpload(
      base,
      'GET /one?x=1 HTTP/1.1\r\nHost: evil.example/other?\r\nConnection: close\r\n\r\n',
      1,
      0,
    )
    expect(one.status).toBe('HTTP/1.1 200 OK')
    expect(one.answer.toLowerCase()).toContain('content-length: ')
    expect(one.answer.toLowerCase()).not.toContain('transfer-encoding')
    expect(one.answer).toContain('"url":"http://localhost/one?x=1"')
    const streamed = await fetch(`${base}/stream`)
    expect(streamed.headers.get('transfer-encoding')).toBe('chunked')
    expect(await streamed.text()).toBe(chunks.join(''))
    const empty = await fetch(`${base}/empty`)
    expect(empty.status).toBe(204)
    expect(empty.headers.get('content-length')).toBeNull()
  })

  it('serves the API through the generic Request path too, 413 included', async () => {
    const { handler, keys } = await setup({ maxBodyBytes: 1024 })
    const wrapped: FetchHandler = (request) => handler(request)
    const base = await serve(wrapped)
    const created = await fetch(`${base}/tokens/`, {
      method: 'POST',
      headers: { 'SVC-API-KEY': keys.full, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'g1', type: 'x', data: 1 }),
    })
    expect(created.status).toBe(201)
    const read = await fetch(`${base}/tokens/g1`, { headers: { 'svc-api-key': keys.full } })
    expect(((await read.json()) as { data: unknown }).data).toBe(1)
    const head = `POST /tokens HTTP/1.1\r\nHost: x\r\nSVC-API-KEY: ${keys.full}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`
    const total = 64 * 1024 * 1024
    const { status, sent } = await rawUpload(base, head, 16 * 1024, total)
    expect(status).toMatch(/^HTTP\/1\.1 413 /)
    expect(sent).toBeLessThan(total / 4)
  })
})

describe('toNodeListener: a Request and Response passed through untouched', () => {
  const card = JSON.stringify({ type: 'token', data: 'through' })
  /** Creates a token through the server at `base` with `key`. */
  const postCard = (base: string, key: string) =>
    fetch(`${base}/tokens`, {
      method: 'POST',
      headers: { 'svc-api-key': key, 'content-type': 'application/json' },
      body: card,
    })

  it('reads an untouched body from the node request, and its stream then fails rather than hangs', async () => {
    const { handler, keys } = await setup()
    const seen: Request[] = []
    const base = await serve(async (request) => {
      seen.push(request)
      return handler(request)
    })
    const created = await postCard(base, keys.full)
    expect(created.status).toBe(201)
    const request = seen[0]!
    // The handler never read the stream: the body came from the node request.
    expect(request.bodyUsed).toBe(false)
    await expect(request.text()).rejects.toThrow(/already read/)
  })

  it('reads through the stream a body something else touched first', async () => {
    const { handler, keys } = await setup()
    const base = await serve(async (request) => {
      const text = await request.text()
      return handler(new Request(request.url, { method: 'POST', headers: request.headers, body: text }))
    })
    const created = await postCard(base, keys.full)
    expect(created.status).toBe(201)
    expect(((await created.json()) as { type: string }).type).toBe('token')
  })

  it('writes the bytes of an untouched Response as they are, with headers set on the way', async () => {
    const { handler, keys } = await setup()
    const id = (
      (await (
        await handler(
          new Request('http://x/tokens', {
            method: 'POST',
            headers: { 'svc-api-key': keys.full, 'content-type': 'application/json' },
            body: card,
          }),
        )
      ).json()) as { id: string }
    ).id
    const base = await serve(async (request) => {
      const response = await handler(request)
      response.headers.set('x-added', 'yes')
      return response
    })
    const read = await fetch(`${base}/tokens/${id}`, { headers: { 'svc-api-key': keys.full } })
    const text = await read.text()
    expect(read.headers.get('x-added')).toBe('yes')
    expect(read.headers.get('content-length')).toBe(String(Buffer.byteLength(text)))
    expect((JSON.parse(text) as { data: unknown }).data).toBe('through')
  })

  it('writes what a Response says once something read its body and answered another', async () => {
    const { handler, keys } = await setup()
    const base = await serve(async (request) => {
      const response = await handler(request)
      const body = (await response.json()) as Record<string, unknown>
      return new Response(JSON.stringify({ ...body, wrapped: true }), {
        status: response.status,
        headers: { 'content-type': 'application/json' },
      })
    })
    const created = await postCard(base, keys.full)
    expect(created.status).toBe(201)
    expect(((await created.json()) as { wrapped?: boolean }).wrapped).toBe(true)
  })

  it('writes a Response whose body was cloned and the clone read', async () => {
    const { handler, keys } = await setup()
    const base = await serve(async (request) => {
      const response = await handler(request)
      // A clone tees the body: both branches carry the same bytes, whichever is written.
      const copy = response.clone()
      await copy.text()
      return response
    })
    const created = await postCard(base, keys.full)
    expect(created.status).toBe(201)
    expect(((await created.json()) as { type: string }).type).toBe('token')
  })
})

describe('untouchedBody', () => {
  it("answers a handler's Response bytes only while nothing has locked or read its body", async () => {
    const { handler } = await setup()
    const answer = () => handler(new Request('http://x/tokens/none'))
    const fresh = await answer()
    const bytes = untouchedBody(fresh)
    expect(new TextDecoder().decode(bytes)).toBe(await fresh.clone().text())
    const locked = await answer()
    locked.body!.getReader()
    expect(untouchedBody(locked)).toBeUndefined()
    const read = await answer()
    await read.arrayBuffer()
    expect(untouchedBody(read)).toBeUndefined()
    expect(untouchedBody(new Response('{}'))).toBeUndefined()
  })
})

describe('toNodeListener: stand-ins for the Request and Response of a handler it does not know', () => {
  /** Counts the real `Request`s and `Response`s made while `run` runs (the globals, as node.ts makes them). */
  async function counting<T>(
    run: () => Promise<T>,
  ): Promise<{ requests: number; responses: number; result: T }> {
    const made = { requests: 0, responses: 0 }
    const RealRequest = globalThis.Request
    const RealResponse = globalThis.Response
    vi.stubGlobal(
      'Request',
      class extends RealRequest {
        constructor(...args: ConstructorParameters<typeof Request>) {
          super(...args)
          made.requests++
        }
      },
    )
    vi.stubGlobal(
      'Response',
      class extends RealResponse {
        constructor(...args: ConstructorParameters<typeof Response>) {
          super(...args)
          made.responses++
        }
      },
    )
    try {
      const result = await run()
      return { ...made, result }
    } finally {
      vi.unstubAllGlobals()
    }
  }

  it('makes no real Request or Response when the handler of this package gets the request as it came', async () => {
    const { handler, keys } = await setup()
    const seen: { request: Request; response: Response }[] = []
    const base = await serve(async (request) => {
      const response = await handler(request)
      seen.push({ request, response })
      return response
    })
    const { requests, responses, result } = await counting(async () => {
      const created = await fetch(`${base}/tokens`, {
        method: 'POST',
        headers: { 'svc-api-key': keys.full, 'content-type': 'application/json' },
        body: JSON.stringify({ id: 's1', type: 'token', data: 'stand-in' }),
      })
      const read = await fetch(`${base}/tokens/s1`, { headers: { 'svc-api-key': keys.full } })
      return { created: created.status, read: (await read.json()) as { data: unknown } }
    })
    expect(result.created).toBe(201)
    expect(result.read.data).toBe('stand-in')
    expect({ requests, responses }).toEqual({ requests: 0, responses: 0 })
    const { request, response } = seen[1]!
    expect(request).toBeInstanceOf(Request)
    expect(Object.prototype.toString.call(request)).toBe('[object Request]')
    expect(request.method).toBe('GET')
    expect(request.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/tokens\/s1$/)
    expect(response).toBeInstanceOf(Response)
    expect(response.status).toBe(200)
    expect(response.ok).toBe(true)
  })

  it('gives whatever looks further the real objects: headers, copies, clones and bodies', async () => {
    const { handler, keys } = await setup()
    const base = await serve(async (request) => {
      expect(request.headers.get('svc-api-key')).toBe(keys.full)
      const probe = request.clone()
      expect(await probe.text()).toContain('"looked"')
      const copy = new Request(request, {
        headers: { 'svc-api-key': keys.full, 'content-type': 'application/json', 'x-copy': '1' },
      })
      expect(copy.headers.get('x-copy')).toBe('1')
      const response = await handler(copy)
      return new Response(response.body, response)
    })
    const { requests, responses, result } = await counting(async () => {
      const created = await fetch(`${base}/tokens`, {
        method: 'POST',
        headers: { 'svc-api-key': keys.full, 'content-type': 'application/json' },
        body: JSON.stringify({ id: 's2', type: 'token', data: 'looked' }),
      })
      return { status: created.status, type: created.headers.get('content-type'), body: await created.json() }
    })
    expect(result).toMatchObject({
      status: 201,
      type: 'application/json',
      body: { id: 's2', type: 'token' },
    })
    // The stand-in's real Request and the copy; the wrapper's Response.
    expect(requests).toBeGreaterThanOrEqual(2)
    expect(responses).toBeGreaterThanOrEqual(1)
  })

  it('answers a stand-in Response that reads as the real one: headers, text, clone', async () => {
    const { handler, keys } = await setup()
    const looked: unknown[] = []
    const base = await serve(async (request) => {
      const response = await handler(request)
      looked.push(response.headers.get('content-type'), await response.clone().json(), response.bodyUsed)
      return response
    })
    const read = await fetch(`${base}/tokens/none`, { headers: { 'svc-api-key': keys.full } })
    expect(read.status).toBe(404)
    const problem = (await read.json()) as { status: number }
    expect(problem.status).toBe(404)
    expect(looked).toEqual(['application/problem+json', problem, false])
  })

  it('reads headers a wrapper changed on the stand-in, and the body after them', async () => {
    const { handler, keys } = await setup()
    const base = await serve(async (request) => {
      request.headers.set('svc-api-key', keys.full)
      return handler(request)
    })
    const created = await fetch(`${base}/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 's3', type: 'token', data: 'keyed' }),
    })
    expect(created.status).toBe(201)
    const read = await fetch(`${base}/tokens/s3`)
    expect(((await read.json()) as { data: unknown }).data).toBe('keyed')
  })

  it('serves a stand-in a wrapper hands over inside a Proxy, as it serves a real Request in one', async () => {
    const { handler, keys } = await setup()
    const base = await serve(async (request) => {
      const response = await handler(new Proxy(request, {}))
      return new Proxy(response, {})
    })
    const created = await fetch(`${base}/tokens`, {
      method: 'POST',
      headers: { 'svc-api-key': keys.full, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 's4', type: 'token', data: 'proxied' }),
    })
    expect(created.status).toBe(201)
    const read = await fetch(`${base}/tokens/s4`, { headers: { 'svc-api-key': keys.full } })
    expect(read.status).toBe(200)
    expect(((await read.json()) as { data: unknown }).data).toBe('proxied')
  })

  it('answers a real Response to a Request that did not come from the bridge', async () => {
    const { handler, keys } = await setup()
    const response = await handler(
      new Request('http://x/tokens/none', { headers: { 'svc-api-key': keys.full } }),
    )
    expect(Object.getPrototypeOf(response)).toBe(Response.prototype)
    expect(response.status).toBe(404)
  })

  it('makes real Requests where a runtime keeps their state out of reach of a stand-in', async () => {
    const RealRequest = globalThis.Request
    // A Request whose copy reads a private field of its input, as runtimes that keep the state in
    // private fields do: a stand-in has none, so the probe fails and the bridge makes real ones.
    class PrivateRequest extends RealRequest {
      readonly #own = true
      constructor(input: ConstructorParameters<typeof Request>[0], init?: RequestInit) {
        if (input instanceof PrivateRequest && !input.#own) throw new TypeError('not a request')
        super(input, init)
      }
    }
    vi.stubGlobal('Request', PrivateRequest)
    vi.resetModules()
    try {
      const http = await import('../../adapters/http/index.js')
      const { createTestVault } = await import('../../testing/vault.js')
      const vault = await createTestVault({ tenantName: 'fresh', runner: null })
      const made: Request[] = []
      const server = createServer(
        http.toNodeListener(async (request) => {
          made.push(request)
          return vault.http(request)
        }),
      )
      servers.push(server)
      server.listen(0, '127.0.0.1')
      await once(server, 'listening')
      const { port } = server.address() as { port: number }
      const answer = await fetch(`http://127.0.0.1:${port}/tokens/none`, {
        headers: { 'svc-api-key': vault.keys.private },
      })
      expect(answer.status).toBe(404)
      expect(Object.getPrototypeOf(made[0])).toBe(PrivateRequest.prototype)
    } finally {
      vi.unstubAllGlobals()
      vi.resetModules()
    }
  })
})

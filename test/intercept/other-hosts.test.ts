/**
 * `tokenvault/intercept` answers only its hosts: a request to any other host goes out through Node's
 * own `fetch` and `http` exactly as sent (method, path, headers, body) and its answer comes back
 * unchanged; `close()` gives Node its own `fetch` and `http.request` back.
 */
import { once } from 'node:events'
import http, { createServer, type IncomingMessage, type Server } from 'node:http'
import https from 'node:https'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { type Interception, intercept } from '../../entry/intercept.js'
import { createTestVault, type TestVault } from '../../testing/index.js'

interface Seen {
  method: string
  url: string
  headers: IncomingMessage['headers']
  body: string
}

let server: Server
let origin = ''
const seen: Seen[] = []
beforeAll(async () => {
  server = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    seen.push({
      method: req.method!,
      url: req.url!,
      headers: req.headers,
      body: Buffer.concat(chunks).toString(),
    })
    res.writeHead(207, { 'content-type': 'text/plain', 'x-origin': 'other' }).end('from the other host')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`
})
afterAll(() => {
  server.closeAllConnections()
  server.close()
})

let vault: TestVault
let interception: Interception
beforeEach(async () => {
  seen.length = 0
  vault = await createTestVault()
  interception = intercept(vault)
})
afterEach(async () => {
  interception.close()
  await vault.close()
})

/** Sends a POST with `http.request` and answers the status, a header and the body. */
function httpPost(url: string, body: string): Promise<{ status: number; origin: unknown; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, {
      method: 'POST',
      headers: { 'x-mine': 'kept', 'content-type': 'text/plain' },
    })
    request.on('error', reject)
    request.on('response', async (response) => {
      const chunks: Buffer[] = []
      for await (const chunk of response) chunks.push(chunk as Buffer)
      resolve({
        status: response.statusCode!,
        origin: response.headers['x-origin'],
        body: Buffer.concat(chunks).toString(),
      })
    })
    request.end(body)
  })
}

describe('intercept leaves other hosts alone', () => {
  it('fetch to another host reaches it with method, path, headers and body as sent; its answer is unchanged', async () => {
    const answer = await fetch(`${origin}/tokens?x=1`, {
      method: 'PUT',
      headers: { 'BT-API-KEY': vault.keys.private, 'x-mine': 'kept' },
      body: 'payload',
    })
    expect(answer.status).toBe(207)
    expect(answer.headers.get('x-origin')).toBe('other')
    expect(await answer.text()).toBe('from the other host')
    expect(seen).toHaveLength(1)
    expect(seen[0]).toMatchObject({ method: 'PUT', url: '/tokens?x=1', body: 'payload' })
    expect(seen[0]!.headers).toMatchObject({ 'bt-api-key': vault.keys.private, 'x-mine': 'kept' })
    // The vault saw nothing of it.
    expect((await vault.client().tokens.list({})).data).toEqual([])
  })

  it('http.request (what axios uses) to another host reaches it as sent', async () => {
    const answer = await httpPost(`${origin}/reactors/abc/react`, '{"args":{}}')
    expect(answer).toEqual({ status: 207, origin: 'other', body: 'from the other host' })
    expect(seen).toEqual([
      expect.objectContaining({ method: 'POST', url: '/reactors/abc/react', body: '{"args":{}}' }),
    ])
    expect(seen[0]!.headers['x-mine']).toBe('kept')
  })

  it('a host given in `hosts` is answered by the vault; the defaults then pass through', async () => {
    interception.close()
    const own = intercept(vault, { hosts: ['127.0.0.1'] })
    try {
      const answer = await fetch(`${origin}/tokens`, { headers: { 'BT-API-KEY': vault.keys.private } })
      expect(answer.status).toBe(200)
      expect(await answer.json()).toMatchObject({ data: [] })
      expect(seen).toEqual([])
    } finally {
      own.close()
    }
  })
})

describe('one interception at a time', () => {
  it('a second intercept while one is installed throws, and the first keeps answering', async () => {
    const other = await createTestVault({ tenantName: 'other' })
    try {
      expect(() => intercept(other)).toThrow(/already intercepts api\.basistheory\.com/)
      const self = await fetch('https://api.basistheory.com/tenants/self', {
        headers: { 'BT-API-KEY': vault.keys.management },
      })
      expect(await self.json()).toMatchObject({ id: vault.tenant.id })
      interception.close()
      const next = intercept(other)
      const answer = await fetch('https://api.basistheory.com/tenants/self', {
        headers: { 'BT-API-KEY': other.keys.management },
      })
      expect(await answer.json()).toMatchObject({ id: other.tenant.id })
      next.close()
    } finally {
      await other.close()
    }
  })
})

describe('close() removes the interception cleanly', () => {
  it("gives back Node's own fetch, http.request, http.get, https.request and https.get; a second close is harmless", async () => {
    interception.close()
    const own = {
      fetch: globalThis.fetch,
      request: http.request,
      get: http.get,
      sRequest: https.request,
      sGet: https.get,
    }
    const again = intercept(vault, { hosts: ['vault.invalid'] })
    const answered = await fetch('https://vault.invalid/tokens', {
      headers: { 'BT-API-KEY': vault.keys.private },
    })
    expect(answered.status).toBe(200)
    again.close()
    again.close()
    expect(globalThis.fetch).toBe(own.fetch)
    expect({ request: http.request, get: http.get, sRequest: https.request, sGet: https.get }).toEqual({
      request: own.request,
      get: own.get,
      sRequest: own.sRequest,
      sGet: own.sGet,
    })
    // `.invalid` never resolves: with the interception gone the request fails, unanswered.
    await expect(fetch('https://vault.invalid/tokens')).rejects.toThrow()
  })
})

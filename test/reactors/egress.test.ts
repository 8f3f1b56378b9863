/**
 * Network for formula code only through the host's egress allow-list (`reactorEgress`), the
 * requests made by the host (src/reactors/egress.ts): the reference's runtime gives formulas the network
 * (developers.basistheory.com, docs/concepts/what-are-reactors, "Call a 3rd party"); here it is off
 * unless the host lists origins, and loopback is reachable only when listed by address.
 */
import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { failure, formulaBody, REACTOR, sharedRunner, TOKEN } from '../formulas/setup.js'

const runner = sharedRunner()
let listed: Server
let unlisted: Server
let listedOrigin = ''
let unlistedOrigin = ''
const hits = { listed: 0, unlisted: 0 }

function serve(name: keyof typeof hits): Server {
  return createServer((req, res) => {
    hits[name]++
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x')
      if (url.pathname === '/echo') {
        res.setHeader('content-type', 'application/json')
        res.setHeader('x-reply', 'yes')
        res.statusCode = 201
        res.end(
          JSON.stringify({
            method: req.method,
            path: req.url,
            auth: req.headers.authorization ?? null,
            type: req.headers['content-type'] ?? null,
            host: req.headers.host,
            body: Buffer.concat(chunks).toString(),
          }),
        )
      } else if (url.pathname === '/redirect-out') {
        res.writeHead(302, { location: `${unlistedOrigin}/echo` }).end()
      } else if (url.pathname === '/redirect-in') {
        res.writeHead(303, { location: '/echo?after=redirect' }).end()
      } else if (url.pathname === '/big') {
        res.end('x'.repeat(1024 * 1024 + 10))
      } else if (url.pathname === '/hang') {
        // never answers
      } else res.writeHead(404).end('no')
    })
  })
}

beforeAll(async () => {
  listed = serve('listed')
  unlisted = serve('unlisted')
  for (const server of [listed, unlisted]) {
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
  }
  listedOrigin = `http://127.0.0.1:${(listed.address() as AddressInfo).port}`
  unlistedOrigin = `http://127.0.0.1:${(unlisted.address() as AddressInfo).port}`
})
afterAll(async () => {
  listed.closeAllConnections()
  unlisted.closeAllConnections()
  listed.close()
  unlisted.close()
  await runner.close()
})

/**
 * Runs `body` as a formula's function body on a service whose allow-list is `egress`. Runs that
 * must answer get a time limit no busy machine reaches; runs meant to end at their limit pass a
 * short one.
 */
async function react(body: string, egress?: string[], reactorTimeoutMs = 60_000): Promise<unknown> {
  const service = createService({
    store: memoryStore(),
    clock: manualClock(),
    runner: runner.get(),
    reactorTimeoutMs,
    ...(egress ? { reactorEgress: egress } : {}),
  })
  const tenant = await service.admin.createTenant({ name: 't' })
  const app = async (type: 'management' | 'private', permissions: typeof REACTOR) =>
    service.connect(
      (await service.admin.createApplication({ tenantId: tenant.id, name: type, type, permissions })).key,
    )
  const admin = await app('management', REACTOR)
  const client = await app('private', TOKEN)
  const code = `module.exports = async function (req) { ${body} }`
  const formula = await admin.reactorFormulas.create(
    formulaBody({ code, configuration: [], request_parameters: [] }),
  )
  const reactor = await admin.reactors.create({ name: 'r', formula_id: formula.id })
  return client.reactors.react(reactor.id, {})
}

const raw = async (body: string, egress?: string[], timeoutMs?: number) =>
  ((await react(body, egress, timeoutMs)) as { raw: unknown }).raw

describe('egress is off by default', () => {
  it('fetch and require("node-fetch") answer a clear error, and nothing connects', async () => {
    const before = hits.listed
    for (const call of [`fetch('${listedOrigin}/echo')`, `require('node-fetch')('${listedOrigin}/echo')`]) {
      const error = await failure(react(`await ${call}`))
      expect(error.message).toContain('fetch is not available')
    }
    expect(hits.listed).toBe(before)
  })

  it('the allow-list takes origins only', () => {
    for (const bad of ['ftp://example.com', 'https://example.com/path', 'https://u:p@example.com', 'nope']) {
      expect(() =>
        createService({ store: memoryStore(), clock: manualClock(), reactorEgress: [bad] }),
      ).toThrow(/egress/)
    }
  })
})

describe('egress to listed origins', () => {
  it('a listed loopback origin (listed by address) is reached by the host: method, headers, body, response', async () => {
    const answer = await raw(
      `const res = await fetch('${listedOrigin}/echo?q=1', { method: 'POST', headers: { Authorization: 'Bearer t', 'Content-Type': 'application/json' }, body: JSON.stringify({ a: 1 }) })
       return { raw: [res.status, res.ok, res.headers.get('X-Reply'), res.headers.get('content-type'), await res.json(), res instanceof Response] }`,
      [listedOrigin],
    )
    expect(answer).toEqual([
      201,
      true,
      'yes',
      'application/json',
      {
        method: 'POST',
        path: '/echo?q=1',
        auth: 'Bearer t',
        type: 'application/json',
        host: listedOrigin.slice('http://'.length),
        body: '{"a":1}',
      },
      true,
    ])
  })

  it('an origin not on the list is refused without connecting (loopback included)', async () => {
    const before = hits.unlisted
    const answer = await raw(
      `const out = []
       for (const url of ['${unlistedOrigin}/echo', 'http://localhost:${unlistedOrigin.split(':')[2]}/echo', 'http://169.254.169.254/latest/meta-data', 'http://10.0.0.1/', 'file:///etc/passwd']) {
         try { await fetch(url); out.push('reached ' + url) } catch (e) { out.push(e instanceof TypeError && /not on the egress allow-list/.test(e.message)) }
       }
       return { raw: out }`,
      [listedOrigin],
    )
    expect(answer).toEqual([true, true, true, true, true])
    expect(hits.unlisted).toBe(before)
  })

  it('a redirect to a listed origin is followed; one to an unlisted origin is refused before connecting', async () => {
    const before = hits.unlisted
    const answer = await raw(
      `const inside = await fetch('${listedOrigin}/redirect-in', { method: 'POST', body: 'x' })
       const body = await inside.json()
       let outside
       try { await fetch('${listedOrigin}/redirect-out'); outside = 'followed' } catch (e) { outside = e.message }
       return { raw: [inside.redirected, body.method, body.path, outside] }`,
      [listedOrigin],
    )
    expect(answer).toEqual([
      true,
      'GET',
      '/echo?after=redirect',
      expect.stringMatching(/redirect to http:\/\/127\.0\.0\.1:\d+ refused: not on the egress allow-list/),
    ])
    expect(hits.unlisted).toBe(before)
  })

  it('response and request bodies are bounded', async () => {
    const answer = await raw(
      `const out = []
       try { await fetch('${listedOrigin}/big'); out.push('read') } catch (e) { out.push(e.message) }
       try { await fetch('${listedOrigin}/echo', { method: 'POST', body: 'y'.repeat(1024 * 1024 + 1) }); out.push('sent') } catch (e) { out.push(e.message) }
       try { await fetch('${listedOrigin}/echo', { method: 'POST', body: { not: 'a string' } }); out.push('sent') } catch (e) { out.push(e.message) }
       try { await fetch('${listedOrigin}/echo', { headers: { Host: 'evil.example' } }); out.push('sent') } catch (e) { out.push(e.message) }
       return { raw: out }`,
      [listedOrigin],
    )
    expect(answer).toEqual([
      expect.stringContaining('response body is larger than 1048576 bytes'),
      expect.stringContaining('request body is larger than 1048576 bytes'),
      expect.stringContaining('string body'),
      expect.stringContaining('header host is set by the host'),
    ])
  })

  it('a request that never answers ends with the run at its time limit, and the next run is served', async () => {
    const error = await failure(
      react(`await fetch('${listedOrigin}/hang'); return { raw: 1 }`, [listedOrigin], 500),
    )
    expect({ status: error.status, message: error.message }).toEqual({
      status: 504,
      message: 'the reactor formula ran longer than 500 ms',
    })
    expect(await raw(`return { raw: (await fetch('${listedOrigin}/echo')).status }`, [listedOrigin])).toBe(
      201,
    )
  })

  it("what fetch answers is the engine's: no host object is reachable through it", async () => {
    const answer = await raw(
      `const res = await fetch('${listedOrigin}/echo')
       const reached = []
       for (const v of [res, res.headers, fetch, res.text, res.json()]) {
         try { if (v.constructor.constructor('return typeof process')() !== 'undefined') reached.push('process') } catch (e) { reached.push('threw') }
       }
       try { await fetch('${unlistedOrigin}') } catch (e) { if (e.constructor.constructor('return typeof process')() !== 'undefined') reached.push('error') }
       return { raw: reached }`,
      [listedOrigin],
    )
    expect(answer).toEqual([])
  })
})

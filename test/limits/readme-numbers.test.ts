/**
 * Every number the guide promises (docs/limits.md and the pages it links), pinned at its boundary with the literal number: the limit is
 * accepted, one past it is refused with the documented status. These tests never import the
 * constant they check.
 */
import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHttpHandler } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { failure, setup } from '../core/setup.js'
import { formulaBody, REACTOR, sharedRunner, TOKEN } from '../formulas/setup.js'

describe('HTTP: a request body is at most 1 MiB', () => {
  const MiB = 1024 * 1024
  /** A POST /tokens body of exactly `bytes` bytes (UTF-8), all of it JSON. */
  const bodyOf = (bytes: number) => {
    const shell = JSON.stringify({ type: 'token', data: '' })
    return JSON.stringify({ type: 'token', data: 'x'.repeat(bytes - shell.length) })
  }

  it('1 048 576 bytes are read; 1 048 577 answer 413 and store nothing', async () => {
    const { service, key } = await (async () => {
      const s = await setup()
      return { service: s.service, key: s.full.key }
    })()
    const handler = createHttpHandler(service)
    const post = (body: string) =>
      handler(
        new Request('http://vault.test/tokens', {
          method: 'POST',
          headers: { 'SVC-API-KEY': key, 'content-type': 'application/json' },
          body,
        }),
      )
    const at = bodyOf(MiB)
    expect(Buffer.byteLength(at)).toBe(1_048_576)
    const accepted = await post(at)
    expect(accepted.status).toBe(201)
    const past = bodyOf(MiB + 1)
    expect(Buffer.byteLength(past)).toBe(1_048_577)
    const refused = await post(past)
    expect(refused.status).toBe(413)
    const listed = await handler(
      new Request('http://vault.test/tokens?size=100', { headers: { 'SVC-API-KEY': key } }),
    )
    expect(((await listed.json()) as { pagination: { total_items: number } }).pagination.total_items).toBe(1)
  })
})

describe('search: at most 64 terms and 32 levels of nesting', () => {
  const search = async (query: string) => {
    const { client } = await setup()
    return client.tokens.search({ query })
  }

  it('64 terms are searched; 65 answer 400', async () => {
    const terms = (n: number) => Array.from({ length: n }, (_, i) => `id:t${i}`).join(' OR ')
    await expect(search(terms(64))).resolves.toMatchObject({ data: [] })
    const error = await failure(search(terms(65)))
    expect(error.code).toBe('validation_failed')
    expect(JSON.stringify(error.issues)).toContain('64 terms')
  })

  it('32 levels of parentheses are searched; 33 answer 400', async () => {
    const nested = (n: number) => `${'('.repeat(n)}type:card${')'.repeat(n)}`
    await expect(search(nested(32))).resolves.toMatchObject({ data: [] })
    const error = await failure(search(nested(33)))
    expect(error.code).toBe('validation_failed')
    expect(JSON.stringify(error.issues)).toContain('32 levels')
  })
})

describe('applications: at most 100 keys each', () => {
  it('the 100th key is made; the 101st answers 400 and makes nothing', async () => {
    const { keyFor, vault } = await setup()
    const admin = await keyFor('management', ['application:create', 'application:read'])
    const app = await vault.service.admin.createApplication({
      tenantId: vault.tenant.id,
      name: 'many keys',
      type: 'private',
      permissions: ['token:read'],
    })
    const keys = admin.client.applicationKeys
    let held = (await keys.list(app.application.id)).length
    expect(held).toBe(1)
    while (held < 100) {
      await keys.create(app.application.id)
      held++
    }
    expect(await keys.list(app.application.id)).toHaveLength(100)
    const error = await failure(keys.create(app.application.id))
    expect(error.code).toBe('validation_failed')
    expect(await keys.list(app.application.id)).toHaveLength(100)
  })
})

describe('formula network: at most 50 requests a run, at most 5 redirects', () => {
  const runner = sharedRunner()
  let server: Server
  let origin = ''
  let hits = 0
  beforeAll(async () => {
    server = createServer((req, res) => {
      hits++
      const url = new URL(req.url ?? '/', 'http://x')
      const hop = Number(url.searchParams.get('hops') ?? '0')
      if (url.pathname === '/hop' && hop > 0) res.writeHead(302, { location: `/hop?hops=${hop - 1}` }).end()
      else res.end('ok')
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    server.closeAllConnections()
    server.close()
    await runner.close()
  })

  async function run(body: string): Promise<unknown> {
    const service = createService({
      store: memoryStore(),
      clock: manualClock(),
      runner: runner.get(),
      reactorTimeoutMs: 20_000,
      reactorEgress: [origin],
    })
    const tenant = await service.admin.createTenant({ name: 't' })
    const connect = async (type: 'management' | 'private', permissions: typeof REACTOR) =>
      service.connect(
        (await service.admin.createApplication({ tenantId: tenant.id, name: type, type, permissions })).key,
      )
    const admin = await connect('management', REACTOR)
    const client = await connect('private', TOKEN)
    const formula = await admin.reactorFormulas.create(
      formulaBody({
        code: `module.exports = async function (req) { ${body} }`,
        configuration: [],
        request_parameters: [],
      }),
    )
    const reactor = await admin.reactors.create({ name: 'r', formula_id: formula.id })
    return ((await client.reactors.react(reactor.id, {})) as { raw: unknown }).raw
  }

  it('50 requests are made; the 51st is refused', async () => {
    hits = 0
    const raw = await run(`
      let made = 0; let refused = ''
      for (let i = 0; i < 51; i++) {
        try { await fetch('${origin}/n'); made++ } catch (e) { refused = String(e.message) }
      }
      return { raw: { made, refused } }`)
    expect(raw).toMatchObject({ made: 50 })
    expect((raw as { refused: string }).refused).toMatch(/50/)
    expect(hits).toBe(50)
  }, 30_000)

  it('5 redirects are followed; a 6th is refused', async () => {
    const raw = await run(`
      const five = await fetch('${origin}/hop?hops=5')
      let six = ''
      try { await fetch('${origin}/hop?hops=6'); six = 'followed' } catch (e) { six = String(e.message) }
      return { raw: { five: [five.status, five.redirected, await five.text()], six } }`)
    expect(raw).toMatchObject({ five: [200, true, 'ok'] })
    expect((raw as { six: string }).six).not.toBe('followed')
    expect((raw as { six: string }).six).toMatch(/redirect/i)
  }, 30_000)
})

/**
 * The framework recipes of docs/http-api.md, each mounted in the real framework on a real socket (Hono and
 * Next.js: their fetch shape): bodies of every size and content type reach the vault, bad bodies
 * are answered by it as problems, and `/openapi.json` names the prefix it is served under.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import express from 'express'
import Fastify from 'fastify'
import { Hono } from 'hono'
import Koa from 'koa'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createHttpHandler, toNodeErrorListener, toNodeListener } from '../../adapters/http/index.js'
import { setup } from './setup.js'

/** The test vaults made in this file: the Next.js route makes its own and exports only its methods. */
const made = vi.hoisted(() => [] as { keys: { private: string } }[])
vi.mock('tokenvault/testing', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../testing/index.js')>()
  const createTestVault: typeof real.createTestVault = async (...args) => {
    const vault = await real.createTestVault(...args)
    made.push(vault)
    return vault
  }
  return { ...real, createTestVault }
})

const closers: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const close of closers.splice(0)) await close()
})

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  closers.push(() => new Promise((resolve) => server.close(resolve)))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

type Fetch = (path: string, init?: RequestInit) => Promise<Response>
const BIG = 'x'.repeat(600_000)

/** What every mount must do: the vault answers every body itself, and its document names the prefix. */
async function exercise(call: Fetch, key: string, prefix: string, big = true) {
  const post = (body: string, type = 'application/json') =>
    call(`${prefix}/tokens`, { method: 'POST', headers: { 'SVC-API-KEY': key, 'content-type': type }, body })
  const created = await post(JSON.stringify({ id: 'fw', type: 'card', data: { number: '4242424242424242' } }))
  expect(created.status, await created.clone().text()).toBe(201)
  const patched = await call(`${prefix}/tokens/fw`, {
    method: 'PATCH',
    headers: { 'SVC-API-KEY': key, 'content-type': 'application/merge-patch+json' },
    body: JSON.stringify({ metadata: { via: 'patch' } }),
  })
  expect(patched.status, await patched.clone().text()).toBe(200)
  expect(await patched.json()).toMatchObject({ metadata: { via: 'patch' } })
  const vendor = await post(JSON.stringify({ type: 'token', data: 'v' }), 'application/vnd.api+json')
  expect(vendor.status, await vendor.clone().text()).toBe(201)
  const badJson = await post('{"type": "token", "data":')
  expect(badJson.status).toBe(400)
  expect(badJson.headers.get('content-type')).toBe('application/problem+json')
  expect(await badJson.json()).toMatchObject({ errors: { body: ['is not valid JSON'] } })
  const text = await post('hello', 'text/plain')
  expect(text.status).toBe(415)
  expect(text.headers.get('content-type')).toBe('application/problem+json')
  if (big) expect((await post(JSON.stringify({ type: 'token', data: BIG }))).status).toBe(201)
  const doc = (await (await call(`${prefix}/openapi.json`)).json()) as { servers: { url: string }[] }
  expect(doc.servers).toEqual([{ url: prefix }])
}

describe('mounted in frameworks', () => {
  it('Express, the vault mounted before express.json(): the stream reaches it untouched', async () => {
    const { service, keys } = await setup({ runner: null })
    const app = express()
    app.use('/vault', toNodeListener(createHttpHandler(service)))
    app.use(express.json())
    const base = await listen(createServer(app))
    await exercise((p, i) => fetch(`${base}${p}`, i), keys.full, '/vault')
  })

  it('Express, the vault mounted after express.json(): bad JSON and bodies too large for it are problems', async () => {
    const { service, keys } = await setup({ runner: null })
    const handler = createHttpHandler(service)
    const app = express()
    app.use(express.json())
    app.use('/vault', toNodeListener(handler), toNodeErrorListener(handler))
    const base = await listen(createServer(app))
    const call: Fetch = (p, i) => fetch(`${base}${p}`, i)
    await exercise(call, keys.full, '/vault', false)
    // Past express.json()'s 100 kb the body is gone before the vault: a problem says what to change.
    const big = await call('/vault/tokens', {
      method: 'POST',
      headers: { 'SVC-API-KEY': keys.full, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'token', data: BIG }),
    })
    expect(big.status).toBe(413)
    expect(big.headers.get('content-type')).toBe('application/problem+json')
    expect(((await big.json()) as { detail: string }).detail).toMatch(
      /mount the vault before express\.json\(\)/,
    )
    // With the parser's limit raised, the parsed body is used as given.
    const other = await setup({ runner: null })
    const otherHandler = createHttpHandler(other.service)
    const roomy = express()
    roomy.use(express.json({ limit: '2mb' }))
    roomy.use('/vault', toNodeListener(otherHandler), toNodeErrorListener(otherHandler))
    const base2 = await listen(createServer(roomy))
    await exercise((p, i) => fetch(`${base2}${p}`, i), other.keys.full, '/vault')
  })

  it('Fastify, its body parsers off for the vault: merge-patch and every content type reach it', async () => {
    const { service, keys } = await setup({ runner: null })
    const listener = toNodeListener(createHttpHandler(service, { basePath: '/vault' }))
    const app = Fastify()
    app.get('/elsewhere', async () => ({ ok: true }))
    await app.register(async (vault) => {
      vault.removeAllContentTypeParsers()
      vault.addContentTypeParser('*', (_request, _payload, done) => done(null))
      vault.all('/vault/*', (request, reply) => {
        reply.hijack()
        listener(request.raw, reply.raw)
      })
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    closers.push(() => app.close())
    const { port } = app.server.address() as AddressInfo
    const base = `http://127.0.0.1:${port}`
    await exercise((p, i) => fetch(`${base}${p}`, i), keys.full, '/vault')
    expect(await (await fetch(`${base}/elsewhere`)).json()).toEqual({ ok: true })
  })

  it('Koa, the raw request handed to the vault', async () => {
    const { service, keys } = await setup({ runner: null })
    const listener = toNodeListener(createHttpHandler(service, { basePath: '/vault' }))
    const app = new Koa()
    app.use(async (ctx, next) => {
      if (ctx.path !== '/vault' && !ctx.path.startsWith('/vault/')) return next()
      ctx.respond = false
      listener(ctx.req, ctx.res)
    })
    app.use((ctx) => {
      ctx.body = 'app'
    })
    const base = await listen(createServer(app.callback()))
    await exercise((p, i) => fetch(`${base}${p}`, i), keys.full, '/vault')
    expect(await (await fetch(`${base}/other`)).text()).toBe('app')
  })

  it('Hono, app.mount keeping the request, the handler under basePath', async () => {
    const { service, keys } = await setup({ runner: null })
    const app = new Hono()
    app.mount('/vault', createHttpHandler(service, { basePath: '/vault' }), { replaceRequest: false })
    await exercise((p, i) => Promise.resolve(app.request(p, i)), keys.full, '/vault')
  })

  it('a Next.js route handler (examples/next-route.ts): its exported GET and POST take a Request', async () => {
    const route = await import('../../examples/next-route.js')
    const call: Fetch = (p, i) => {
      const request = new Request(`http://app.test${p}`, i)
      const fn = route[request.method as 'GET' | 'POST' | 'PATCH']
      return fn(request)
    }
    await exercise(call, made.at(-1)!.keys.private, '/api/vault')
  })
})

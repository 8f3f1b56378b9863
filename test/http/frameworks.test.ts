import type { AddressInfo } from 'node:net'
import express from 'express'
import Fastify from 'fastify'
import { describe, expect, it } from 'vitest'
import { createHttpHandler, toNodeListener } from '../../adapters/http/index.js'
import { setup } from './setup.js'

/** Creates a token through `base` and reads it back, as a new user of a framework would. */
async function createAndRead(base: string, key: string) {
  const created = await fetch(`${base}/tokens`, {
    method: 'POST',
    headers: { 'SVC-API-KEY': key, 'content-type': 'application/json' },
    body: JSON.stringify({ id: 'fw', type: 'card', data: { number: '4242424242424242' } }),
  })
  expect(created.status, await created.clone().text()).toBe(201)
  const read = await fetch(`${base}/tokens/fw`, { headers: { 'SVC-API-KEY': key } })
  expect(read.status).toBe(200)
  expect(await read.json()).toMatchObject({ id: 'fw', type: 'card', data: { number: '4242424242424242' } })
  const bad = await fetch(`${base}/tokens`, {
    method: 'POST',
    headers: { 'SVC-API-KEY': key, 'content-type': 'application/json' },
    body: JSON.stringify({ tpye: 'card', data: 1 }),
  })
  expect(bad.status).toBe(400)
  expect(((await bad.json()) as { errors: unknown }).errors).toHaveProperty('type')
}

describe('mounted in frameworks', () => {
  it('Express with express.json() before the mount: the parsed body is used', async () => {
    const { service, keys } = await setup()
    const app = express()
    app.use(express.json())
    app.use('/vault', toNodeListener(createHttpHandler(service)))
    const server = app.listen(0, '127.0.0.1')
    await new Promise((resolve) => server.once('listening', resolve))
    try {
      const { port } = server.address() as AddressInfo
      // Express strips the mount prefix from req.url; the handler then serves at the root.
      await createAndRead(`http://127.0.0.1:${port}/vault`, keys.full)
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })

  it('Fastify, with its parsed body handed over on request.raw', async () => {
    const { service, keys } = await setup()
    const listener = toNodeListener(createHttpHandler(service, { basePath: '/vault' }))
    const app = Fastify()
    app.all('/vault/*', (request, reply) => {
      reply.hijack()
      listener(Object.assign(request.raw, { body: request.body }), reply.raw)
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    try {
      const { port } = app.server.address() as AddressInfo
      await createAndRead(`http://127.0.0.1:${port}/vault`, keys.full)
    } finally {
      await app.close()
    }
  })

  it('a Next.js-style route function calling the fetch handler', async () => {
    const { service, keys } = await setup()
    const handler = createHttpHandler(service, { basePath: '/api/vault' })
    // app/api/vault/[...path]/route.ts: export async function POST(request: Request) { ... }
    const route = {
      async POST(request: Request) {
        return handler(request)
      },
      async GET(request: Request) {
        return handler(request)
      },
    }
    const created = await route.POST(
      new Request('http://app.test/api/vault/tokens', {
        method: 'POST',
        headers: { 'SVC-API-KEY': keys.full, 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'nx', type: 'token', data: 'x' }),
      }),
    )
    expect(created.status).toBe(201)
    const read = await route.GET(
      new Request('http://app.test/api/vault/tokens/nx', { headers: { 'SVC-API-KEY': keys.full } }),
    )
    expect(read.status).toBe(200)
    expect(await read.json()).toMatchObject({ id: 'nx', data: 'x' })
  })
})

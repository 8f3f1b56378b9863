/**
 * Asynchronous react (developers.basistheory.com, docs/concepts/what-are-reactors, "Asynchronous
 * Reactors", and docs/api/reactors, "Invoke a Reactor": `callback_url`, `timeout_ms` 10000–210000):
 * checked up front, answered 202 with an empty body, the result or the error POSTed to the callback
 * by the host, only to an origin of the egress allow-list.
 */
import { once } from 'node:events'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { BasisTheory } from '@basis-theory/basis-theory-js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHttpHandler, toNodeListener } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { sandboxRunner } from '../../adapters/sandbox/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { failure, formulaBody, REACTOR, TOKEN } from '../formulas/setup.js'

// Runs are capped at 5 s by the runner, whatever `timeout_ms` asks (the documented minimum is 10 s):
// short enough for a hung run to end within its test, long enough that no run meant to answer
// reaches it on a busy machine (at 400 ms one did).
const runner = sandboxRunner({ poolSize: 1, timeoutMs: 5000 })
let receiver: Server
let other: Server
let origin = ''
let otherOrigin = ''
/** What the receiver got: path and JSON body of each POST. */
const received: { path: string; body: unknown; type: string | undefined }[] = []
let answerStatus = 200
let otherHits = 0
let openSockets = 0

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => resolve(Buffer.concat(chunks).toString()))
  })
}

beforeAll(async () => {
  receiver = createServer(async (req, res) => {
    const text = await readBody(req)
    received.push({ path: req.url ?? '', body: JSON.parse(text), type: req.headers['content-type'] })
    res.writeHead(answerStatus).end()
  })
  receiver.on('connection', (socket) => {
    openSockets++
    socket.on('close', () => openSockets--)
  })
  other = createServer((_req, res) => {
    otherHits++
    res.end()
  })
  for (const server of [receiver, other]) {
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
  }
  origin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`
  otherOrigin = `http://127.0.0.1:${(other.address() as AddressInfo).port}`
})
afterAll(async () => {
  receiver.close()
  other.close()
  await runner.close()
})

/**
 * Waits (bounded) until the receiver has `count` deliveries and every connection to it is closed
 * (the sender has read each answer, so a failed delivery is queued for its retry by then).
 */
async function deliveries(count: number) {
  // Up to a minute: a hung run's callback comes after the 5 s cap, later on a busy machine.
  for (let i = 0; i < 6000 && (received.length < count || openSockets > 0); i++)
    await new Promise((r) => setTimeout(r, 10))
  return received
}

async function vault(egress: string[] | undefined, code: string) {
  const clock = manualClock()
  const service = createService({
    store: memoryStore(),
    clock,
    runner: { check: (c) => runner.check(c), run: (c, r, o) => runner.run(c, r, o), close: async () => {} },
    ...(egress ? { reactorEgress: egress } : {}),
  })
  const tenant = await service.admin.createTenant({ name: 't' })
  const key = async (type: 'management' | 'private', permissions: typeof REACTOR) =>
    (await service.admin.createApplication({ tenantId: tenant.id, name: type, type, permissions })).key
  const admin = service.connect(await key('management', REACTOR))
  const privateKey = await key('private', TOKEN)
  const formula = await admin.reactorFormulas.create(
    formulaBody({ code, configuration: [], request_parameters: [{ name: 'n', type: 'number' }] }),
  )
  const reactor = await admin.reactors.create({ name: 'r', formula_id: formula.id })
  const http = createHttpHandler(service, { log: () => {} })
  const react = (body: unknown) =>
    http(
      new Request(`http://vault.test/reactors/${reactor.id}/react`, {
        method: 'POST',
        headers: { 'SVC-API-KEY': privateKey, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
    )
  return { service, clock, client: service.connect(privateKey), privateKey, reactor, react }
}

const ECHO = `module.exports = async function (req) {
  if (req.args.mode === 'sdk') { const { BadRequestError } = require('@basis-theory/basis-theory-reactor-formulas-sdk-js'); throw new BadRequestError('declined') }
  if (req.args.mode === 'hang') await new Promise(() => setInterval(() => {}, 5))
  return { raw: { doubled: req.args.n * 2 }, tokenize: { t: { type: 'token', data: 'secret' } } }
}`

describe('asynchronous react', () => {
  it('answers 202 with no body, then POSTs the result to the callback', async () => {
    received.length = 0
    const { react } = await vault([origin], ECHO)
    const response = await react({
      args: { n: '21' },
      callback_url: `${origin}/hooks/1?x=y`,
      timeout_ms: 60000,
    })
    expect(response.status).toBe(202)
    expect(await response.text()).toBe('')
    const [delivery] = await deliveries(1)
    expect(delivery).toEqual({
      path: '/hooks/1?x=y',
      type: 'application/json',
      body: {
        raw: { doubled: 42 },
        tokens: { t: expect.objectContaining({ type: 'token', id: expect.any(String) }) },
      },
    })
    expect(JSON.stringify(delivery?.body)).not.toContain('secret')
  })

  it('a callback outside the allow-list, or with no allow-list, is 400 at request time and nothing runs', async () => {
    received.length = 0
    for (const [egress, url] of [
      [[origin], `${otherOrigin}/hook`],
      [[origin], `http://localhost:${origin.split(':')[2]}/hook`],
      [[origin], 'http://169.254.169.254/latest'],
      [[origin], 'not a url'],
      [undefined, `${origin}/hook`],
    ] as const) {
      const { react } = await vault(egress ? [...egress] : undefined, ECHO)
      const response = await react({ args: { n: 1 }, callback_url: url })
      expect(response.status, url).toBe(400)
      expect(((await response.json()) as { errors: Record<string, string[]> }).errors).toHaveProperty(
        'callback_url',
      )
    }
    await new Promise((r) => setTimeout(r, 100))
    expect(received).toEqual([])
    expect(otherHits).toBe(0)
  })

  it('checks args and timeout_ms up front (400), as a react does', async () => {
    const { react } = await vault([origin], ECHO)
    for (const body of [
      { args: { n: 'not a number' }, callback_url: `${origin}/h` },
      { args: { n: 1 }, callback_url: `${origin}/h`, timeout_ms: 9999 },
      { args: { n: 1 }, callback_url: `${origin}/h`, timeout_ms: 210001 },
      { args: { n: 1 }, callback_url: 5 },
    ]) {
      expect((await react(body)).status, JSON.stringify(body)).toBe(400)
    }
  })

  it('an error, and a run past its time limit, are delivered as the documented error response', async () => {
    received.length = 0
    const { react } = await vault([origin], ECHO)
    expect((await react({ args: { n: 1, mode: 'sdk' }, callback_url: `${origin}/sdk` })).status).toBe(202)
    expect((await react({ args: { n: 1, mode: 'hang' }, callback_url: `${origin}/hang` })).status).toBe(202)
    const got = await deliveries(2)
    const byPath = Object.fromEntries(got.map((d) => [d.path, d.body]))
    expect(byPath).toEqual({
      '/sdk': { status: 400, detail: 'Bad Request', errors: { error: ['declined'] } },
      '/hang': {
        status: 500,
        detail: 'Reactor Runtime Error',
        errors: { error: ['the reactor formula ran longer than 10000 ms'] },
      },
    })
  }, 120_000)

  it('a failed delivery crashes nothing, and the service goes on', async () => {
    received.length = 0
    answerStatus = 500
    const { react } = await vault([origin, otherOrigin.replace(/:\d+$/, ':1')], ECHO)
    expect((await react({ args: { n: 1 }, callback_url: `${origin}/fails` })).status).toBe(202)
    // Port 1 on loopback: nothing listens; the connection is refused.
    expect(
      (await react({ args: { n: 1 }, callback_url: `${otherOrigin.replace(/:\d+$/, ':1')}/x` })).status,
    ).toBe(202)
    await deliveries(1)
    answerStatus = 200
    const ok = await react({ args: { n: 2 } })
    expect(ok.status).toBe(200)
    expect(((await ok.json()) as { raw: unknown }).raw).toEqual({ doubled: 4 })
  })

  it('a delivery not taken is retried with backoff on the service clock, from sweep, up to 10 times', async () => {
    received.length = 0
    answerStatus = 503
    const { react, service, clock } = await vault([origin], ECHO)
    expect((await react({ args: { n: 3 }, callback_url: `${origin}/retry` })).status).toBe(202)
    await deliveries(1)
    // Not due yet: nothing is sent again.
    clock.advance(9_000)
    await service.admin.sweep()
    await new Promise((r) => setTimeout(r, 50))
    expect(received).toHaveLength(1)
    // Due after 10 s, then 20 s, 40 s, … (doubling): each step advances the clock by its delay
    // (again, if the failed attempt was queued only after the clock moved) until it goes out.
    let wait = 10_000
    for (let attempt = 2; attempt <= 11; attempt++) {
      for (let i = 0; i < 50 && received.length < attempt; i++) {
        clock.advance(wait)
        await service.admin.sweep()
        for (let k = 0; k < 20 && (received.length < attempt || openSockets > 0); k++)
          await new Promise((r) => setTimeout(r, 10))
      }
      expect(received).toHaveLength(attempt)
      wait *= 2
    }
    for (let i = 0; i < 3; i++) {
      clock.advance(wait * 4)
      await service.admin.sweep()
      await new Promise((r) => setTimeout(r, 30))
    }
    expect(received).toHaveLength(11)
    expect(received[0]?.body).toMatchObject({ raw: { doubled: 6 } })
    expect(received.every((d) => JSON.stringify(d.body) === JSON.stringify(received[0]?.body))).toBe(true)
    answerStatus = 200
  })

  it('a retry that is taken ends the retries', async () => {
    received.length = 0
    answerStatus = 500
    const { react, service, clock } = await vault([origin], ECHO)
    expect((await react({ args: { n: 3 }, callback_url: `${origin}/once` })).status).toBe(202)
    await deliveries(1)
    answerStatus = 200
    for (let i = 0; i < 50 && received.length < 2; i++) {
      clock.advance(10_000)
      await service.admin.sweep()
      await new Promise((r) => setTimeout(r, 20))
    }
    await deliveries(2)
    clock.advance(1_000_000)
    await service.admin.sweep()
    await new Promise((r) => setTimeout(r, 50))
    expect(received).toHaveLength(2)
  })

  it('the legacy SDK (basis-theory-js 1.79.3) sends callbackUrl and timeoutMs and gets the 202', async () => {
    received.length = 0
    const { service, privateKey, reactor } = await vault([origin], ECHO)
    const server = createServer(
      toNodeListener(createHttpHandler(service, { headerPrefix: 'BT', log: () => {} })),
    )
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    try {
      const options = {
        apiBaseUrl: `http://localhost:${(server.address() as AddressInfo).port}`,
        disableTelemetry: true,
      }
      const bt = await new BasisTheory().init(privateKey, options)
      const answer = await bt.reactors.react(reactor.id, {
        args: { n: 4 },
        callbackUrl: `${origin}/sdk-hook`,
        timeoutMs: 60_000,
      })
      expect(answer).toBeFalsy()
      expect((await deliveries(1))[0]).toMatchObject({ path: '/sdk-hook', body: { raw: { doubled: 8 } } })
    } finally {
      server.close()
    }
  })

  it('in process: reactAsync resolves at once; react refuses a callback_url', async () => {
    received.length = 0
    const { client, reactor } = await vault([origin], ECHO)
    await client.reactors.reactAsync(reactor.id, { args: { n: 5 }, callback_url: `${origin}/in-process` })
    expect((await deliveries(1))[0]?.body).toMatchObject({ raw: { doubled: 10 } })
    const error = await failure(
      client.reactors.react(reactor.id, { args: { n: 5 }, callback_url: `${origin}/x` }),
    )
    expect(error.issues).toHaveProperty('callback_url')
    const refused = await failure(
      client.reactors.reactAsync(reactor.id, { args: { n: 5 }, callback_url: `${otherOrigin}/x` }),
    )
    expect(refused.issues).toHaveProperty('callback_url')
  })
})

/**
 * Admission on the request path: a tenant's requests past its share wait in its own line, unread
 * (or answer 429 past the line's bound), while another tenant's requests are admitted and answered.
 * The service's creates are held open by promises the test releases, so nothing here races time.
 */
import { once } from 'node:events'
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { connect } from 'node:net'
import { describe, expect, it } from 'vitest'
import { createHttpHandler, type HttpHandlerOptions, toNodeListener } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { type Client, createService, manualClock, type Service } from '../../entry/index.js'

/** A body stream of `text` that counts how many times it was pulled (0: never read). */
function countedBody(text: string) {
  const counter = { pulls: 0 }
  const bytes = new TextEncoder().encode(text)
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        counter.pulls++
        if (counter.pulls === 1) controller.enqueue(bytes)
        else controller.close()
      },
    },
    { highWaterMark: 0 },
  )
  return { stream, counter, length: bytes.byteLength }
}

/**
 * A service whose token creates by the keys in `held` wait until `release()` lets the oldest one
 * on; `arrived` lists the created tokens' types in the order their creates reached the service.
 */
function holding(service: Service, held: Set<string>) {
  const arrived: string[] = []
  const waiting: (() => void)[] = []
  let notify: (() => void) | undefined
  const wrap = (client: Client, key: string): Client =>
    ({
      get tokens() {
        const tokens = client.tokens
        return {
          ...tokens,
          create: async (body: { type: string }) => {
            arrived.push(body.type)
            notify?.()
            if (held.has(key)) await new Promise<void>((go) => waiting.push(go))
            return tokens.create(body as never)
          },
        }
      },
      withCall: (call: Parameters<Client['withCall']>[0]) => wrap(client.withCall(call), key),
    }) as unknown as Client
  const wrapped: Service = { ...service, connect: (key, options) => wrap(service.connect(key, options), key) }
  /** Resolves once `n` creates have reached the service. */
  const until = async (n: number) => {
    while (arrived.length < n) await new Promise<void>((go) => (notify = go))
  }
  const release = () => waiting.shift()?.()
  return { wrapped, arrived, until, release, held: () => waiting.length }
}

async function world(options: HttpHandlerOptions) {
  const service = await createService({ store: memoryStore(), clock: manualClock(), runner: null })
  const keyOf = async (name: string) => {
    const tenant = await service.admin.createTenant({ name })
    const made = await service.admin.createApplication({
      tenantId: tenant.id,
      name,
      type: 'private',
      permissions: ['token:create', 'token:read'],
    })
    return made.key
  }
  const a = await keyOf('a')
  const b = await keyOf('b')
  const hold = holding(service, new Set([a]))
  const handler = createHttpHandler(hold.wrapped, { log: () => {}, ...options })
  /** A create by `key` of a token of type `type`, its body counted. */
  const create = (key: string, type: string, headers: Record<string, string> = {}, size = 40) => {
    const body = countedBody(JSON.stringify({ type, data: 'x'.repeat(size) }))
    const answer = handler(
      new Request('http://vault.test/tokens', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': String(body.length),
          'svc-api-key': key,
          ...headers,
        },
        body: body.stream,
        duplex: 'half',
      } as RequestInit),
    )
    return { answer, reads: body.counter }
  }
  return { handler, a, b, create, ...hold }
}

describe('admission: one tenant at its bound does not hold back another', () => {
  it('A at 2 in flight: its third waits unread; B is admitted and answered meanwhile; then A3 runs', async () => {
    const w = await world({ maxInFlightPerTenant: 2 })
    const a1 = w.create(w.a, 'a1')
    const a2 = w.create(w.a, 'a2')
    await w.until(2)
    const a3 = w.create(w.a, 'a3')
    const b1 = w.create(w.b, 'b1')
    expect((await b1.answer).status).toBe(201)
    expect(w.arrived).toEqual(['a1', 'a2', 'b1'])
    expect(a3.reads.pulls).toBe(0)
    w.release()
    expect((await a1.answer).status).toBe(201)
    await w.until(4)
    expect(a3.reads.pulls).toBeGreaterThan(0)
    w.release()
    w.release()
    expect((await a2.answer).status).toBe(201)
    expect((await a3.answer).status).toBe(201)
    expect(w.arrived).toEqual(['a1', 'a2', 'b1', 'a3'])
  })

  it('past its line (1 in flight, 1 waiting) A answers 429 with Retry-After, its body unread; B goes on', async () => {
    const w = await world({ maxInFlightPerTenant: 1, maxQueuedPerTenant: 1 })
    const a1 = w.create(w.a, 'a1')
    await w.until(1)
    const a2 = w.create(w.a, 'a2')
    const a3 = w.create(w.a, 'a3')
    const refused = await a3.answer
    expect(refused.status).toBe(429)
    expect(refused.headers.get('retry-after')).toBe('1')
    expect(refused.headers.get('content-type')).toBe('application/problem+json')
    expect(a3.reads.pulls).toBe(0)
    expect((await w.create(w.b, 'b1').answer).status).toBe(201)
    w.release()
    await w.until(3)
    w.release()
    expect([(await a1.answer).status, (await a2.answer).status]).toEqual([201, 201])
    expect(w.arrived).toEqual(['a1', 'b1', 'a2'])
  })

  it('body bytes: past 150 bytes in flight A waits; a lone body larger than the bound is still admitted', async () => {
    const w = await world({ maxInFlightBytesPerTenant: 150 })
    // Each body is 73 bytes: two fit in 150, a third does not.
    const a1 = w.create(w.a, 'a1')
    const a2 = w.create(w.a, 'a2')
    await w.until(2)
    const a3 = w.create(w.a, 'a3')
    expect((await w.create(w.b, 'b1').answer).status).toBe(201)
    expect(a3.reads.pulls).toBe(0)
    w.release()
    await w.until(4)
    w.release()
    w.release()
    for (const r of [a1, a2, a3]) expect((await r.answer).status).toBe(201)

    const lone = await world({ maxInFlightBytesPerTenant: 72 })
    const big = lone.create(lone.a, 'big')
    await lone.until(1)
    lone.release()
    expect((await big.answer).status).toBe(201)
  })

  it('with the handler full (1 in flight in all), waiting tenants are served in turns, not first come', async () => {
    const w = await world({ maxInFlight: 1 })
    // B's key is known to the handler first (its first request checks the key in a lane apart).
    expect((await w.create(w.b, 'b0').answer).status).toBe(201)
    const a1 = w.create(w.a, 'a1')
    await w.until(2)
    const a2 = w.create(w.a, 'a2')
    const a3 = w.create(w.a, 'a3')
    // B's request is not held by the service; it waits only for its turn.
    const b1 = w.create(w.b, 'b1')
    w.release()
    await w.until(3)
    w.release()
    expect((await b1.answer).status).toBe(201)
    await w.until(5)
    w.release()
    for (const r of [a1, a2, a3]) expect((await r.answer).status).toBe(201)
    expect(w.arrived).toEqual(['b0', 'a1', 'a2', 'b1', 'a3'])
  })
})

describe('admission: the default bounds, at their numbers', () => {
  it('32 requests of a tenant in flight; the 33rd waits unread; 128 wait, the 129th answers 429', async () => {
    const clock = { ms: 0 }
    const w = await world({ now: () => clock.ms })
    const inFlight = Array.from({ length: 32 }, (_, i) => w.create(w.a, `a${i}`))
    await w.until(32)
    const waiting = Array.from({ length: 128 }, (_, i) => w.create(w.a, `w${i}`))
    const refused = w.create(w.a, 'refused')
    expect((await refused.answer).status).toBe(429)
    expect((await w.create(w.b, 'b').answer).status).toBe(201)
    // B quiet for over a second: A has its whole share again (not the 2 of a contended tenant).
    clock.ms = 1001
    expect(waiting.every((r) => r.reads.pulls === 0)).toBe(true)
    expect(w.arrived).toHaveLength(33)
    for (let i = 0; i < 160; i++) {
      w.release()
      await w.until(Math.min(33 + i + 1, 33 + 128))
    }
    for (const r of [...inFlight, ...waiting]) expect((await r.answer).status).toBe(201)
  })

  it('2 MiB of a tenant body bytes in flight: three bodies of 699 050 bytes run, a fourth waits', async () => {
    const clock = { ms: 0 }
    const w = await world({ now: () => clock.ms })
    // {"type":"aN","data":"…"} is 23 bytes around the data.
    const size = 699_050 - 23
    const running = [1, 2, 3].map((i) => w.create(w.a, `a${i}`, {}, size))
    await w.until(3)
    const fourth = w.create(w.a, 'a4', {}, size)
    expect((await w.create(w.b, 'b').answer).status).toBe(201)
    clock.ms = 1001
    expect(fourth.reads.pulls).toBe(0)
    w.release()
    await w.until(5)
    w.release()
    w.release()
    w.release()
    for (const r of [...running, fourth]) expect((await r.answer).status).toBe(201)
  })
})

describe('admission: a tenant’s share while another is active, over the handler', () => {
  it('B answered within the last second: A has 2 creates in flight, its third waits unread; later, 32', async () => {
    const clock = { ms: 0 }
    const w = await world({ now: () => clock.ms })
    expect((await w.create(w.b, 'b').answer).status).toBe(201)
    clock.ms = 1000
    const running = [w.create(w.a, 'a1'), w.create(w.a, 'a2')]
    await w.until(3)
    const third = w.create(w.a, 'a3')
    expect((await w.create(w.b, 'b2').answer).status).toBe(201)
    expect(third.reads.pulls).toBe(0)
    expect(w.arrived).toEqual(['b', 'a1', 'a2', 'b2'])
    w.release()
    await w.until(5)
    w.release()
    w.release()
    for (const r of [...running, third]) expect((await r.answer).status).toBe(201)
    // Over a second after B's last answer: A alone has its 32 again.
    clock.ms = 2001
    const alone = Array.from({ length: 33 }, (_, i) => w.create(w.a, `c${i}`))
    await w.until(5 + 32)
    expect(alone[32]!.reads.pulls).toBe(0)
    for (let i = 0; i < 33; i++) w.release()
    await w.until(5 + 33)
    w.release()
    for (const r of alone) expect((await r.answer).status).toBe(201)
  })
})

describe('admission: requests without a valid key', () => {
  it('answer 401 without their body being read', async () => {
    const w = await world({})
    for (const key of ['', 'key_not_a_real_key_0000000000', 'x'.repeat(300)]) {
      const bad = w.create(key, 'bad')
      const answer = await bad.answer
      expect(answer.status).toBe(401)
      expect(answer.headers.get('www-authenticate')).toContain('SVC-API-KEY')
      expect(bad.reads.pulls).toBe(0)
    }
    expect(w.arrived).toEqual([])
  })

  it('are checked in a lane of their own: a flood of them stuck in lookup does not hold back a tenant', async () => {
    const service = await createService({ store: memoryStore(), clock: manualClock(), runner: null })
    const tenant = await service.admin.createTenant({ name: 'b' })
    const { key } = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'b',
      type: 'private',
      permissions: ['token:create'],
    })
    const stuck: (() => void)[] = []
    const slow: Service = {
      ...service,
      tenantOf: async (apiKey) => {
        if (apiKey !== key) await new Promise<void>((go) => stuck.push(go))
        return service.tenantOf(apiKey)
      },
    }
    const handler = createHttpHandler(slow, { maxInFlightPerTenant: 2, maxQueuedPerTenant: 1, log: () => {} })
    const post = (apiKey: string) =>
      handler(
        new Request('http://vault.test/tokens', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'svc-api-key': apiKey },
          body: JSON.stringify({ type: 'b', data: 1 }),
        }),
      )
    expect((await post(key)).status).toBe(201)
    const flood = [1, 2, 3].map((i) => post(`key_bad_${i}_000000000000000000000000`))
    const fourth = await post('key_bad_4_000000000000000000000000')
    expect(fourth.status).toBe(429)
    expect(stuck).toHaveLength(2)
    expect((await post(key)).status).toBe(201)
    while (stuck.length) stuck.shift()!()
    await new Promise<void>((go) => setImmediate(go))
    while (stuck.length) stuck.shift()!()
    expect((await Promise.all(flood)).map((r) => r.status)).toEqual([401, 401, 401])
  })
})

describe('admission bounds', () => {
  it('refuse a bound that is not a whole number >= 1 when the handler is made', async () => {
    const service = await createService({ store: memoryStore(), clock: manualClock(), runner: null })
    expect(() => createHttpHandler(service, { maxInFlightPerTenant: 0 })).toThrow(
      'maxInFlightPerTenant must be a whole number >= 1',
    )
    expect(() => createHttpHandler(service, { maxQueued: 1.5 })).toThrow(RangeError)
    expect(() => createHttpHandler(service, { maxInFlightPerTenant: 1 })).not.toThrow()
  })
})

describe('admission over node:http', () => {
  it('a request whose client left while it waited is answered when its turn comes, and frees its place', async () => {
    const service = await createService({ store: memoryStore(), clock: manualClock(), runner: null })
    const tenant = await service.admin.createTenant({ name: 'a' })
    const { key } = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'a',
      type: 'private',
      permissions: ['token:create'],
    })
    const handler = createHttpHandler(service, { maxInFlightPerTenant: 1, log: () => {} })
    const server = createServer(toNodeListener(handler)).listen(0, '127.0.0.1')
    await once(server, 'listening')
    const { port } = server.address() as AddressInfo
    const body = JSON.stringify({ type: 'x', data: 'y' })
    const begin = async () => {
      const socket = connect(port, '127.0.0.1')
      await once(socket, 'connect')
      socket.write(
        `POST /tokens HTTP/1.1\r\nhost: vault\r\ncontent-type: application/json\r\n` +
          `content-length: ${body.length}\r\nsvc-api-key: ${key}\r\n\r\n${body.slice(0, 5)}`,
      )
      return socket
    }
    try {
      const requests: IncomingMessage[] = []
      server.on('request', (request: IncomingMessage) => requests.push(request))
      const first = await begin()
      const gone = await begin()
      // The server has both (the second waiting for its turn behind the first) before its client goes.
      while (requests.length < 2) await once(server, 'request')
      const closed = new Promise((resolve) => requests[1]!.on('close', resolve))
      gone.destroy()
      await closed
      const answered = once(first, 'data')
      first.end(body.slice(5))
      expect(String((await answered)[0])).toMatch(/^HTTP\/1\.1 201/)
      const next = await fetch(`http://127.0.0.1:${port}/tokens`, {
        method: 'POST',
        headers: { 'svc-api-key': key, 'content-type': 'application/json' },
        body,
      })
      expect(next.status).toBe(201)
    } finally {
      server.closeAllConnections()
      server.close()
      await service.close()
    }
    // A server on a real socket: a busy machine may take many seconds to start and answer it.
  }, 120_000)
})

/**
 * The node egress client ends a request when its signal aborts, at every stage, driven by what the
 * destination saw (no timer): before anything is sent, while the destination holds the request
 * unanswered, and while it is sending its answer. Each rejects with an `EgressError`, the
 * destination sees its connection closed, and a later request on the same origin is answered.
 */
import { once } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { type AddressInfo, createServer as createNetServer, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { egressFetch } from '../../adapters/egress/index.js'
import { EgressError } from '../../src/reactors/egress.js'

/** Requests the destination holds, by path; `/ok` is answered at once. */
const held: { req: IncomingMessage; res: ServerResponse }[] = []
let arrived: (() => void) | null = null
const server = createServer((req, res) => {
  if (req.url === '/ok') {
    res.end('fine')
    return
  }
  if (req.url === '/partial') {
    res.writeHead(200, { 'content-length': '100' })
    res.write('first part')
  }
  held.push({ req, res })
  arrived?.()
})
let origin = ''
beforeAll(async () => {
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => {
  server.closeAllConnections()
  server.close()
})

const limits = (signal: AbortSignal) => ({
  timeoutMs: 60_000,
  maxRequestBytes: 1024,
  maxResponseBytes: 1024,
  signal,
})
const call = (path: string, signal: AbortSignal) =>
  egressFetch([origin], { url: `${origin}${path}`, method: 'POST', headers: {}, body: 'x' }, limits(signal))

/** Calls `path`, aborts once the destination holds it (headers only, or a part of its answer sent). */
async function abortedWhileHeld(path: string) {
  const controller = new AbortController()
  const reached = new Promise<void>((resolve) => {
    arrived = resolve
  })
  const answer = call(path, controller.signal).catch((error: unknown) => error)
  await reached
  const { req } = held.at(-1)!
  // Not `once`: it rejects on the socket's 'error' (a reset is how the destination sees the abort).
  const closed = new Promise((resolve) => req.socket.on('close', resolve))
  controller.abort(new EgressError('given up'))
  const error = await answer
  await closed
  return error
}

describe('node egress client: abort', () => {
  it('a signal aborted before the call sends nothing', async () => {
    const before = held.length
    const error = await call('/hold', AbortSignal.abort(new EgressError('gone'))).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(EgressError)
    expect(held.length).toBe(before)
  })

  it('aborted while the destination holds the request unanswered: rejected, its connection closed', async () => {
    const error = await abortedWhileHeld('/hold')
    expect(error).toBeInstanceOf(EgressError)
    expect((error as Error).message).toBe('given up')
  })

  it('aborted while the destination is sending its answer: rejected, its connection closed', async () => {
    const error = await abortedWhileHeld('/partial')
    expect(error).toBeInstanceOf(EgressError)
    expect((error as Error).message).toBe('given up')
  })

  it('after aborted requests, the next one to the same origin is answered', async () => {
    const answer = await call('/ok', new AbortController().signal)
    expect(answer.status).toBe(200)
    expect(answer.body).toBe('fine')
  })
})

describe('a destination whose status is outside 200–599', () => {
  it('is refused with an EgressError (a 502 to a proxy caller), never handed on', async () => {
    const odd = createNetServer((socket) => {
      socket.once('data', () => socket.end('HTTP/1.1 099 Odd\r\ncontent-length: 2\r\n\r\nok'))
    })
    odd.listen(0, '127.0.0.1')
    await once(odd, 'listening')
    const to = `http://127.0.0.1:${(odd.address() as AddressInfo).port}`
    try {
      const refused = await egressFetch(
        [to],
        { url: `${to}/x`, method: 'GET', headers: {} },
        limits(new AbortController().signal),
      ).catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(EgressError)
      expect(String((refused as Error).message)).toContain('status 99')
    } finally {
      odd.close()
    }
  })
})

describe('a destination that answers 101 (Switching Protocols)', () => {
  it('is refused with an EgressError at once, its connection closed', async () => {
    const sockets: Socket[] = []
    const switching = createNetServer((socket) => {
      sockets.push(socket)
      socket.once('data', () =>
        socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n'),
      )
    })
    switching.listen(0, '127.0.0.1')
    await once(switching, 'listening')
    const to = `http://127.0.0.1:${(switching.address() as AddressInfo).port}`
    try {
      const closed = () => Promise.all(sockets.map((s) => (s.destroyed ? null : once(s, 'close'))))
      const refused = await egressFetch(
        [to],
        { url: `${to}/x`, method: 'POST', headers: {}, body: 'x' },
        limits(new AbortController().signal),
      ).catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(EgressError)
      expect(String((refused as Error).message)).toContain('101')
      await closed()
      expect(sockets.every((s) => s.destroyed)).toBe(true)
    } finally {
      for (const s of sockets) s.destroy()
      switching.close()
    }
  })
})

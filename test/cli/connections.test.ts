/**
 * What clients can hold of `serve`'s listener before any key is checked (bin/connections.ts):
 * connections at once, requests pipelined on one, the time to send headers, and answers a client
 * stops reading. Real sockets on loopback; the stalled-answer check is driven by hand.
 */
import { once } from 'node:events'
import type { AddressInfo, Socket } from 'node:net'
import { connect } from 'node:net'
import { afterEach, expect, it } from 'vitest'
import { DEFAULT_CONNECTION_LIMITS, type Held, resetStalled } from '../../bin/connections.js'
import { drainingServer } from '../../bin/drain.js'

const servers: { close(): void }[] = []
afterEach(() => {
  for (const s of servers.splice(0)) s.close()
})

/** A draining server on a free port answering `ok` after `delayMs`, with `limits` over the defaults. */
async function serve(limits: Partial<typeof DEFAULT_CONNECTION_LIMITS>, delayMs = 0) {
  const { server } = drainingServer(
    (_req, res) => {
      setTimeout(() => res.end('ok'), delayMs)
    },
    { ...DEFAULT_CONNECTION_LIMITS, ...limits },
  )
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  servers.push({
    close: () => {
      server.closeAllConnections()
      server.close()
    },
  })
  return { server, port: (server.address() as AddressInfo).port }
}

/** A socket to `port`, with what it read and whether it closed. */
async function open(port: number) {
  const socket = connect(port, '127.0.0.1')
  const seen = { data: '', closed: false }
  socket.on('data', (d) => {
    seen.data += d
  })
  socket.on('error', () => {})
  socket.on('close', () => {
    seen.closed = true
  })
  await once(socket, 'connect')
  return { socket, seen }
}

const settle = (ms = 200) => new Promise((resolve) => setTimeout(resolve, ms))
const GET = 'GET / HTTP/1.1\r\nHost: x\r\n\r\n'
const answers = (text: string) => text.split('HTTP/1.1 200').length - 1

it('keeps 3 connections open at maxConnections 3; a 4th is closed as it is accepted', async () => {
  const { port } = await serve({ maxConnections: 3 })
  const held: Socket[] = []
  for (let i = 0; i < 3; i++) held.push((await open(port)).socket)
  const fourth = await open(port)
  await settle()
  expect(fourth.seen.closed).toBe(true)
  // The third is served.
  const third = held[2]!
  let data = ''
  third.on('data', (d) => {
    data += d
  })
  third.write(GET)
  await settle()
  expect(answers(data)).toBe(1)
  for (const s of held) s.destroy()
})

it('answers 16 requests pipelined on one connection; a 17th unanswered resets it', async () => {
  const { port } = await serve({}, 300)
  const ok = await open(port)
  ok.socket.write(GET.repeat(16))
  for (let i = 0; i < 40 && answers(ok.seen.data) < 16; i++) await settle(100)
  expect(answers(ok.seen.data)).toBe(16)
  expect(ok.seen.closed).toBe(false)
  ok.socket.destroy()
  const over = await open(port)
  over.socket.write(GET.repeat(17))
  await settle(1_000)
  expect(over.seen.closed).toBe(true)
  expect(answers(over.seen.data)).toBe(0)
})

it('gives a client 20 s to send its headers, by default', async () => {
  const { server } = await serve({})
  expect(server.headersTimeout).toBe(20_000)
  expect(server.maxConnections).toBe(4096)
})

it('resets a connection whose queued answer has not moved for 30 000 ms, not one that moves or has none queued', () => {
  const resets: string[] = []
  const socket = (name: string, queued: number, sent: number) =>
    ({
      name,
      writableLength: queued,
      bytesWritten: sent + queued,
      resetAndDestroy: () => resets.push(name),
    }) as unknown as Socket
  const stalled = socket('stalled', 4096, 1000)
  const moving = socket('moving', 4096, 1000)
  const idle = socket('idle', 0, 1000)
  const held = new Map<Socket, Held>([
    [stalled, { unanswered: 1, written: 1000, since: 0 }],
    [moving, { unanswered: 1, written: 1000, since: 0 }],
    [idle, { unanswered: 0, written: 1000, since: 0 }],
  ])
  resetStalled(held, 30_000, 29_999)
  expect(resets).toEqual([])
  ;(moving as unknown as { bytesWritten: number }).bytesWritten += 10
  resetStalled(held, 30_000, 30_000)
  expect(resets).toEqual(['stalled'])
  held.delete(stalled) // as its 'close' does
  // The one that moved counts again from when it did.
  resetStalled(held, 30_000, 59_999)
  expect(resets).toEqual(['stalled'])
})

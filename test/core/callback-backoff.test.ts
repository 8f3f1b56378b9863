/**
 * docs/reactors.md: a callback delivery the receiver does not take is retried up to 10 times with
 * exponential backoff, 10 s, 20 s, 40 s, … on the service's clock. Pinned with the literal delays:
 * each retry is not sent 1 ms before it is due, and is sent exactly when it is due.
 */
import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { egressFetch } from '../../adapters/egress/index.js'
import { manualClock } from '../../entry/index.js'
import { CallbackQueue } from '../../src/reactors/callback.js'

let receiver: Server
let origin = ''
let hits = 0

beforeAll(async () => {
  receiver = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      hits++
      res.writeHead(503).end()
    })
  })
  receiver.listen(0, '127.0.0.1')
  await once(receiver, 'listening')
  origin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`
})
afterAll(() => {
  receiver.closeAllConnections()
  receiver.close()
})

it('retries at 10 s, 20 s, 40 s, … 5 120 s after each failed attempt, 11 attempts in all, then stops', async () => {
  const clock = manualClock('2030-01-01T00:00:00.000Z')
  const queue = new CallbackQueue(clock, egressFetch)
  await queue.reserve('t').send([origin], `${origin}/hook`, { raw: 1, tokens: {} })
  expect(hits).toBe(1)
  const delays = [10_000, 20_000, 40_000, 80_000, 160_000, 320_000, 640_000, 1_280_000, 2_560_000, 5_120_000]
  for (const [i, delay] of delays.entries()) {
    clock.advance(delay - 1)
    expect(await queue.retryDue(), `retry ${i + 1} 1 ms early`).toBe(0)
    expect(hits).toBe(i + 1)
    clock.advance(1)
    expect(await queue.retryDue(), `retry ${i + 1} when due`).toBe(1)
    expect(hits).toBe(i + 2)
  }
  expect(queue.size).toBe(0)
  expect(queue.outstanding('t')).toBe(0)
  clock.advance(100_000_000)
  expect(await queue.retryDue()).toBe(0)
  expect(hits).toBe(11)
})

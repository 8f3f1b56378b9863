/**
 * A receiver's 2xx is a delivery, whatever body it answers: the body is not read (`statusOnly`).
 * A 200 whose body passed the egress client's answer bound was recorded as "the response was cut
 * off" and retried for good. Through the node client on a real socket, and routed in process.
 */
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { egressFetch } from '../../adapters/egress/index.js'
import { createTestVault } from '../../testing/index.js'

const BIG = 3 * 1024 * 1024

describe('a receiver answering a large body', () => {
  it('the node client answers its status without reading the body when only the status is wanted', async () => {
    const server = createServer((req, res) => {
      req.resume()
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.end(Buffer.alloc(BIG, 0x61))
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const limits = { timeoutMs: 10_000, maxRequestBytes: 1024, maxResponseBytes: 1024 * 1024 }
    const request = { url: `${origin}/in`, method: 'POST', headers: {}, body: '{}' }
    const answered = await egressFetch([origin], request, { ...limits, statusOnly: true })
    expect(answered.status).toBe(200)
    expect(answered.body).toBe('')
    await expect(egressFetch([origin], request, limits)).rejects.toThrow('larger than 1048576 bytes')
    server.closeAllConnections()
    server.close()
  })

  it('a webhook delivery answered 200 with 3 MiB is delivered on its first attempt', async () => {
    const receiver = 'https://hooks.example.test'
    const v = await createTestVault({
      destinations: { [receiver]: () => new Response(new Uint8Array(BIG), { status: 200 }) },
    })
    await v
      .client('management')
      .webhooks.create({ name: 'h', url: `${receiver}/in`, events: ['token.created'] })
    await v.client().tokens.create({ type: 'token', data: 'x' })
    await v.webhooks.deliverDue()
    const [delivery] = await v.webhooks.deliveries()
    expect(delivery!.state).toBe('delivered')
    expect(delivery!.attempts.map((a) => a.status)).toEqual([200])
    await v.close()
  })
})

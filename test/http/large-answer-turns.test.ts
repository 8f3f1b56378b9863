/**
 * Answers over 64 KiB leave `toNodeListener` in pieces, a turn of the event loop between two, and
 * arrive whole: multi-byte characters cut between pieces, the length as declared.
 */
import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import { toNodeListener } from '../../adapters/http/index.js'
import { REVEAL_ALL, setup } from './setup.js'

const servers: Server[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
})

describe('large answers over node:http', () => {
  it('a 300 000-byte token body (é is 2 bytes) is written in turns and reads back whole, twice on one connection', async () => {
    const { handler, keyFor } = await setup({ runner: null })
    const key = await keyFor('private', ['token:create', 'token:read'], REVEAL_ALL)
    const server = createServer(toNodeListener(handler))
    servers.push(server)
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const { port } = server.address() as { port: number }
    const base = `http://127.0.0.1:${port}`
    const headers = { 'svc-api-key': key, 'content-type': 'application/json' }
    const data = `a${'é'.repeat(150_000)}`
    const created = await fetch(`${base}/tokens`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ type: 'token', data }),
    })
    expect(created.status).toBe(201)
    const { id } = (await created.json()) as { id: string }
    for (let i = 0; i < 2; i++) {
      const got = await fetch(`${base}/tokens/${id}`, { headers })
      const text = await got.text()
      expect(Number(got.headers.get('content-length'))).toBe(Buffer.byteLength(text))
      expect((JSON.parse(text) as { data: string }).data).toBe(data)
    }
  }, 60_000)
})

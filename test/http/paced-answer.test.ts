/**
 * A text answer over 65 536 characters is handed on as a stream of pieces, each read in a turn of
 * its own, and keeps its place in its tenant's admission lane until its last piece is taken (or its
 * reader cancels); the handler-wide count frees when the answer is handed on.
 */
import { once } from 'node:events'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { connect } from 'node:net'
import { describe, expect, it } from 'vitest'
import { toNodeListener } from '../../adapters/http/index.js'
import { pacedAnswer, pacedText } from '../../adapters/http/paced-answer.js'
import { REVEAL_ALL, setup } from './setup.js'

const answer = (body: string) => ({ status: 200, headers: { 'content-type': 'application/json' }, body })

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array[]> {
  const pieces: Uint8Array[] = []
  for await (const piece of stream) pieces.push(piece)
  return pieces
}

const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise<void>((go) => setImmediate(go))
}

describe('paced answers', () => {
  it('65 536 characters are handed on as they are; 65 537 become a stream with their byte length', () => {
    let done = 0
    expect(pacedAnswer(answer('a'.repeat(65_536)), () => done++)).toBeNull()
    const paced = pacedAnswer(answer(`é${'a'.repeat(65_536)}`), () => done++)
    expect(paced?.body).toBeInstanceOf(ReadableStream)
    expect(paced?.headers['content-length']).toBe('65538')
    expect(paced?.headers['content-type']).toBe('application/json')
    expect(done).toBe(0)
  })

  it('pieces hold at most 65 536 characters, never half a surrogate pair, and read back whole', async () => {
    // The pair's first half is the 65 536th character: the first piece ends before it.
    const text = `${'a'.repeat(65_535)}😀${'é'.repeat(70_000)}😀`
    let done = 0
    const paced = pacedAnswer(answer(text), () => done++)!
    const pieces = await readAll(paced.body as ReadableStream<Uint8Array>)
    const decoded = pieces.map((p) => new TextDecoder('utf-8', { fatal: true }).decode(p))
    expect(decoded[0]).toBe('a'.repeat(65_535))
    expect(decoded.every((p) => p.length <= 65_536)).toBe(true)
    expect(decoded.join('')).toBe(text)
    expect(pieces.reduce((n, p) => n + p.byteLength, 0)).toBe(Number(paced.headers['content-length']))
    expect(done).toBe(1)
  })

  it('parts are drawn into pieces of at most 65 536 characters, across parts, never half a pair', async () => {
    const parts = ['{', '', 'a'.repeat(40_000), ',', `${'b'.repeat(25_534)}😀c`, 'é'.repeat(70_000), '}']
    let done = 0
    const pieces = await readAll(pacedText(parts, () => done++))
    const decoded = pieces.map((p) => new TextDecoder('utf-8', { fatal: true }).decode(p))
    // The first piece takes '{', the a's, ',' and the b's: the pair would be its 65 536th character.
    expect(decoded[0]).toBe(`{${'a'.repeat(40_000)},${'b'.repeat(25_534)}`)
    expect(decoded.every((p) => p.length <= 65_536)).toBe(true)
    expect(decoded.join('')).toBe(parts.join(''))
    expect(pieces).toHaveLength(3)
    expect(done).toBe(1)
  })

  it('done is called once when the reader cancels, and not before', async () => {
    let done = 0
    const paced = pacedAnswer(answer('x'.repeat(200_000)), () => done++)!
    const reader = (paced.body as ReadableStream<Uint8Array>).getReader()
    await reader.read()
    expect(done).toBe(0)
    await reader.cancel()
    await reader.cancel()
    expect(done).toBe(1)
  })
})

describe('a paced answer in admission', () => {
  async function vaultWithLargeToken() {
    // One request of a tenant in flight, one in the whole handler: what holds which shows at once.
    const s = await setup({ runner: null, maxInFlightPerTenant: 1, maxInFlight: 1 })
    const aKey = await s.keyFor('private', ['token:create', 'token:read'], REVEAL_ALL)
    const other = await s.service.admin.createTenant({ name: 'other' })
    const bKey = await s.keyFor('private', ['token:create', 'token:read'], REVEAL_ALL, other.id)
    const created = await s.call('POST', '/tokens', {
      key: aKey,
      body: { type: 'token', data: 'y'.repeat(70_000) },
    })
    expect(created.status).toBe(201)
    const { id } = (await created.json()) as { id: string }
    return { ...s, aKey, bKey, id }
  }

  it('holds its tenant’s place until read; another tenant passes meanwhile', async () => {
    const s = await vaultWithLargeToken()
    const first = await s.call('GET', `/tokens/${s.id}`, { key: s.aKey })
    let second: Response | undefined
    void s.call('GET', `/tokens/${s.id}`, { key: s.aKey }).then((r) => (second = r))
    await turns(20)
    expect(second).toBeUndefined()
    // The handler-wide place was freed when the first answer was handed on: B is admitted.
    const b = await s.call('GET', '/tokens', { key: s.bKey })
    expect(b.status).toBe(200)
    const text = await first.text()
    expect(first.headers.get('content-length')).toBe(String(Buffer.byteLength(text)))
    expect((JSON.parse(text) as { data: string }).data).toBe('y'.repeat(70_000))
    await turns(20)
    expect(second?.status).toBe(200)
    await second?.text()
  })

  it('a HEAD of a large answer ends its admission without reading it', async () => {
    const s = await vaultWithLargeToken()
    const head = await s.call('HEAD', `/tokens/${s.id}`, { key: s.aKey })
    expect(head.status).toBe(200)
    const again = await s.call('GET', `/tokens/${s.id}`, { key: s.aKey })
    expect(again.status).toBe(200)
    await again.body?.cancel()
    const third = await s.call('GET', `/tokens/${s.id}`, { key: s.aKey })
    expect(third.status).toBe(200)
    await third.text()
  })

  it('over node:http, waiting for a slow reader leaves no listener behind on the answer', async () => {
    // A page of 2.7 MB to a client that reads a little at a time: the writer waits for the socket
    // to drain again and again, and each wait's listeners go once it is over.
    const s = await setup({ runner: null })
    for (let i = 0; i < 3; i++) {
      const made = await s.call('POST', '/tokens', {
        key: s.keys.full,
        body: { type: 'token', data: 'y'.repeat(900_000) },
      })
      expect(made.status).toBe(201)
    }
    let res!: ServerResponse
    let most = 0
    const listener = toNodeListener(s.handler)
    const server = createServer((req, r) => {
      res = r
      listener(req, r)
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    try {
      const { port } = server.address() as AddressInfo
      const socket = connect(port, '127.0.0.1')
      await once(socket, 'connect')
      socket.write(
        `GET /v2/tokens?size=10 HTTP/1.1\r\nHost: x\r\nSVC-API-KEY: ${s.keys.full}\r\nConnection: close\r\n\r\n`,
      )
      let read = 0
      socket.on('data', (chunk: Buffer) => {
        read += chunk.length
        most = Math.max(most, res.listenerCount('close'), res.listenerCount('drain'))
        socket.pause()
        setTimeout(() => socket.resume(), 1)
      })
      await once(socket, 'end')
      expect(read).toBeGreaterThan(2_700_000)
      expect(most).toBeLessThanOrEqual(2)
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })

  it('over node:http, a client that leaves midway cancels the answer’s stream (which ends a paced answer’s admission)', async () => {
    let cancelled!: () => void
    const cancel = new Promise<void>((resolve) => (cancelled = resolve))
    // An answer that never ends on its own: 64 KiB pieces as long as they are read.
    const endless = () =>
      new Response(
        new ReadableStream<Uint8Array>(
          { pull: (c) => c.enqueue(new Uint8Array(65_536)), cancel: () => cancelled() },
          { highWaterMark: 0 },
        ),
      )
    const server = createServer(toNodeListener(endless))
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    try {
      const { port } = server.address() as AddressInfo
      const socket = connect(port, '127.0.0.1')
      await once(socket, 'connect')
      socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n')
      const [first] = (await once(socket, 'data')) as [Buffer]
      expect(first.toString('latin1')).toMatch(/^HTTP\/1\.1 200/)
      socket.destroy()
      await cancel
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })
})

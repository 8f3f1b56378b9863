import { once } from 'node:events'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/** What the loopback destination received. */
export interface Seen {
  method: string
  url: string
  headers: IncomingMessage['headers']
  body: string
}

/**
 * A destination on a real loopback socket that answers what it received as JSON
 * (`{ method, url, headers, body }`), and keeps it; `/slow` never answers, `/big/<n>` answers n bytes.
 */
export async function loopbackDestination(): Promise<{
  origin: string
  seen: Seen[]
  server: Server
  close(): Promise<void>
}> {
  const seen: Seen[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const entry = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      }
      seen.push(entry)
      if (req.url === '/slow') return
      const big = /^\/big\/(\d+)$/.exec(req.url ?? '')
      if (big) {
        res.writeHead(200, { 'content-type': 'text/plain' })
        res.end('x'.repeat(Number(big[1])))
      } else {
        res.writeHead(201, { 'content-type': 'application/json', 'x-destination': 'yes' })
        res.end(JSON.stringify(entry))
      }
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    origin,
    seen,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

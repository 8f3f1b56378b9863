import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { start } from './spawn.js'

/** `--reactor-egress` (and `TOKENVAULT_REACTOR_EGRESS`) reach the service: formula fetch and callbacks. */
describe('tokenvault serve --reactor-egress', () => {
  it('formula fetch reaches a listed origin only; a callback on it is delivered', async () => {
    const hits: string[] = []
    const server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        hits.push(`${req.method} ${req.url} ${Buffer.concat(chunks).toString()}`)
        res.end('pong')
      })
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const listed = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const cli = start(['serve', '--port', '0', '--store', 'memory', '--log', 'none'], undefined, {
      TOKENVAULT_REACTOR_EGRESS: `https://api.example.com, ${listed}`,
    })
    try {
      const url = (await cli.line(1)).slice('listening on '.length)
      const management = (await cli.line(2)).slice('management key: '.length)
      const call = async (key: string, method: string, path: string, body?: unknown) =>
        fetch(`${url}${path}`, {
          method,
          headers: { 'SVC-API-KEY': key, 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        })
      const formula = (await (
        await call(management, 'POST', '/reactor-formulas', {
          name: 'pinger',
          type: 'private',
          code: 'module.exports = async (req) => ({ raw: await (await fetch(req.args.url)).text() })',
          configuration: [],
          request_parameters: [],
        })
      ).json()) as { id: string }
      const reactor = (await (
        await call(management, 'POST', '/reactors', { name: 'p', formula: { id: formula.id } })
      ).json()) as { id: string }
      const app = (await (
        await call(management, 'POST', '/applications', {
          name: 'user',
          type: 'private',
          permissions: ['token:use'],
        })
      ).json()) as { key: string }
      const ok = await call(app.key, 'POST', `/reactors/${reactor.id}/react`, {
        args: { url: `${listed}/ping` },
      })
      expect(await ok.json()).toEqual({ raw: 'pong', tokens: {} })
      const refused = await call(app.key, 'POST', `/reactors/${reactor.id}/react`, {
        args: { url: `${url}/healthz` },
      })
      expect(refused.status).toBe(500)
      expect(((await refused.json()) as { detail: string }).detail).toContain('not on the egress allow-list')
      const accepted = await call(app.key, 'POST', `/reactors/${reactor.id}/react`, {
        args: { url: `${listed}/ping` },
        callback_url: `${listed}/hook`,
      })
      expect(accepted.status).toBe(202)
      for (let i = 0; i < 500 && !hits.some((h) => h.startsWith('POST /hook')); i++)
        await new Promise((r) => setTimeout(r, 10))
      expect(hits.find((h) => h.startsWith('POST /hook'))).toBe('POST /hook {"raw":"pong","tokens":{}}')
    } finally {
      cli.child.kill('SIGTERM')
      await cli.exited
      server.close()
    }
    // A CLI start and its sandbox warm-up: many seconds on a busy machine.
  }, 90_000)
})

/**
 * The shutdown grace by default, as callers get it with no option: once the listener stopped,
 * requests in flight get 5 000 ms, then their connections are closed and the server says so —
 * for the CLI on SIGTERM (no `--shutdown-grace-ms`) and for `serve()` (no `shutdownGraceMs`).
 * The request is held past the grace by a test-mode fault delay (60 s); the test waits for the
 * process's exit or `close()`, never on a timer of its own, and reads the grace the server used
 * from its line.
 */
import { request } from 'node:http'
import { expect, it } from 'vitest'
import { serve } from '../../bin/serve.js'
import { start } from './spawn.js'

const ADMIN = 'admin-token-for-shutdown-grace-01'
const GRACE_LINE = 'shutdown: 1 request(s) still unanswered after the 5000 ms grace were closed'

/** Holds a GET of `url` in flight (a 60 s fault delay); resolves once the fault is taken, with how the GET ends. */
async function holdRequest(url: string) {
  const added = await fetch(`${url}/_test/faults`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ method: 'GET', path: '/tokens/{id}', delay_ms: 60_000 }),
  })
  expect(added.status).toBe(201)
  const ended = new Promise<string>((resolve) => {
    const req = request(`${url}/tokens/held`, { agent: false }, (res) => {
      res.resume()
      res.on('end', () => resolve(`answered ${res.statusCode}`))
      res.on('error', () => resolve('closed'))
    })
    req.on('error', () => resolve('closed'))
    req.end()
  })
  // In flight once it has taken the one-time fault (the list is then empty).
  const faults = async () =>
    (
      (await (
        await fetch(`${url}/_test/faults`, { headers: { authorization: `Bearer ${ADMIN}` } })
      ).json()) as { data: unknown[] }
    ).data.length
  while ((await faults()) > 0) await new Promise((resolve) => setImmediate(resolve))
  return { ended }
}

it('the CLI on SIGTERM gives a request in flight the 5 000 ms grace, then closes it and says so', async () => {
  const cli = start(['serve', '--port', '0', '--store', 'memory', '--test-mode', '--admin-token', ADMIN])
  const url = (await cli.line(1)).slice('listening on '.length)
  const { ended } = await holdRequest(url)
  cli.child.kill('SIGTERM')
  expect(await ended).toBe('closed')
  const [code] = await cli.exited
  expect(code).toBe(0)
  expect(cli.stderr()).toContain(GRACE_LINE)
}, 120_000)

it('serve() without shutdownGraceMs gives a request in flight the 5 000 ms grace on close()', async () => {
  const lines: string[] = []
  const server = await serve({
    port: 0,
    host: '127.0.0.1',
    store: 'memory',
    testMode: true,
    adminToken: ADMIN,
    print: () => {},
    log: (line) => lines.push(line),
  })
  const { ended } = await holdRequest(server.url)
  await server.close()
  expect(await ended).toBe('closed')
  expect(lines).toContain(GRACE_LINE)
}, 120_000)

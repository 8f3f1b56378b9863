/**
 * SIGTERM drains: /readyz answers 503 during the shutdown delay, an idle keep-alive connection closes, the request in
 * flight is answered (with Connection: close), and the process exits. A request is kept in flight by
 * a fault with a delay (test mode). That it exits as soon as the request is answered, well before
 * the 5 s grace, is a wall-clock claim: test/cli/shutdown.slow.test.ts.
 */
import { Agent, request } from 'node:http'
import { expect, it, vi } from 'vitest'
import { start } from './spawn.js'

const ADMIN = 'admin-token-for-shutdown-0123'

/** A GET through `agent`, answering its status, headers and body. */
function get(url: string, agent?: Agent) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: string }>(
    (resolve, reject) => {
      const req = request(url, { agent: agent ?? false }, (res) => {
        let body = ''
        res.on('data', (d) => {
          body += d
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
      })
      req.on('error', reject)
      req.end()
    },
  )
}

it('on SIGTERM with a 2 s shutdown delay: /readyz 503, idle keep-alive closed, the request in flight answered, exit right after', async () => {
  const cli = start([
    'serve',
    '--port',
    '0',
    '--store',
    'memory',
    '--log',
    'none',
    '--test-mode',
    '--admin-token',
    ADMIN,
    '--shutdown-delay-ms',
    '2000',
  ])
  const url = (await cli.line(1)).slice('listening on '.length)
  const added = await fetch(`${url}/_test/faults`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ method: 'GET', path: '/tokens/{id}', delay_ms: 3000 }),
  })
  expect(added.status).toBe(201)

  const idleAgent = new Agent({ keepAlive: true, maxSockets: 1 })
  expect((await get(`${url}/healthz`, idleAgent)).status).toBe(200)
  const idleSocket = Object.values(idleAgent.freeSockets)[0]![0]!
  const idleClosed = new Promise((resolve) => idleSocket.once('close', resolve))

  const busyAgent = new Agent({ keepAlive: true, maxSockets: 1 })
  const inFlight = get(`${url}/tokens/slow`, busyAgent)
  // The request is in flight once it has taken the one-time delay fault (the list is then empty).
  const faults = async () =>
    (
      (await (
        await fetch(`${url}/_test/faults`, { headers: { authorization: `Bearer ${ADMIN}` } })
      ).json()) as { data: unknown[] }
    ).data.length
  for (let i = 0; i < 500 && (await faults()) > 0; i++) await new Promise((resolve) => setImmediate(resolve))
  expect(await faults()).toBe(0)
  cli.child.kill('SIGTERM')
  // A signal reaches the child when its loop next turns: the line it writes on taking the signal
  // says shutdown has begun (draining is set in the same turn), so /readyz is asked only after.
  await vi.waitFor(() => expect(cli.stderr()).toContain('SIGTERM: shutting down'), {
    timeout: 60_000,
    interval: 5,
  })
  // Within the shutdown delay the listener still serves; the idle connection closes at its end.
  const ready = await get(`${url}/readyz`)
  expect(ready.status).toBe(503)
  expect(ready.headers['connection']).toBe('close')
  await idleClosed

  const answer = await inFlight
  expect(answer.status).toBe(401) // answered by the vault (no key), not reset
  expect(answer.headers['connection']).toBe('close')
  const [code] = await cli.exited
  expect(code).toBe(0)
  idleAgent.destroy()
  busyAgent.destroy()
  // Starting the CLI alone took most of the 20 s default on a busy machine.
}, 120_000)

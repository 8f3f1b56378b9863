/**
 * SIGTERM with a request in flight: the process exits as soon as the request is answered, well
 * before the 5 s grace. The grace is a wall-clock timer, so this is timed, here in the slow suite
 * (one file at a time) rather than beside the drain's other promises (test/cli/shutdown.test.ts):
 * with a 1 s request left, an exit after the grace would come 5 s after the signal or later.
 */
import { request } from 'node:http'
import { expect, it } from 'vitest'
import { start } from './spawn.js'

const ADMIN = 'admin-token-for-shutdown-0123'

/** The status of a GET answered over its own connection. */
function status(url: string) {
  return new Promise<number>((resolve, reject) => {
    const req = request(url, { agent: false }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    req.end()
  })
}

it('on SIGTERM with a request in flight, the process exits once it is answered, before the 5 s grace', async () => {
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
  ])
  const url = (await cli.line(1)).slice('listening on '.length)
  const added = await fetch(`${url}/_test/faults`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ method: 'GET', path: '/tokens/{id}', delay_ms: 1000 }),
  })
  expect(added.status).toBe(201)
  const inFlight = status(`${url}/tokens/slow`)
  const faults = async () =>
    (
      (await (
        await fetch(`${url}/_test/faults`, { headers: { authorization: `Bearer ${ADMIN}` } })
      ).json()) as { data: unknown[] }
    ).data.length
  for (let i = 0; i < 500 && (await faults()) > 0; i++) await new Promise((resolve) => setImmediate(resolve))
  expect(await faults()).toBe(0)
  const signalled = performance.now()
  cli.child.kill('SIGTERM')
  expect(await inFlight).toBe(401)
  const [code] = await cli.exited
  expect(code).toBe(0)
  // At most 1 s of the request was left: exiting at the grace would take 5 s or more.
  expect(performance.now() - signalled).toBeLessThan(4500)
}, 60_000)

/**
 * An accepted asynchronous react survives SIGKILL: `npm start` on a file store accepts a react
 * (202 with its request id) and is killed while the run is under way; the restarted process runs it
 * once its claim ends (the run's 10 s limit + 5 s) and its result is then read by the request id.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { start } from '../cli/spawn.js'

/** A run long enough (2 s of the sandbox's time) that the kill lands while it is under way. */
const SLOW = `module.exports = async function (req) {
  const end = Date.now() + 2000
  while (Date.now() < end) {}
  return { raw: { sum: req.args.a + req.args.b } }
}`

it('SIGKILL right after a react-async is accepted: after restart the react runs and its result is read', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tv-async-react-'))
  const args = ['serve', '--port', '0', '--store', `file:${join(dir, 'store')}`, '--log', 'none']
  const first = start(args, dir)
  const url = (await first.line(1)).slice('listening on '.length)
  const management = (await first.line(2)).slice('management key: '.length)
  const call = async (key: string, method: string, path: string, body?: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { 'SVC-API-KEY': key, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    return {
      status: response.status,
      body: (await response.json().catch(() => null)) as Record<string, string>,
    }
  }
  const reactor = (await call(management, 'POST', '/reactors', { name: 'slow', code: SLOW })).body
  const app = (
    await call(management, 'POST', '/applications', {
      name: 'u',
      type: 'private',
      permissions: ['token:use'],
    })
  ).body
  const accepted = await call(app.key!, 'POST', `/reactors/${reactor.id}/react-async`, {
    args: { a: 2, b: 3 },
  })
  expect(accepted.status).toBe(202)
  const requestId = accepted.body.asyncReactorRequestId!
  first.child.kill('SIGKILL')
  await first.exited
  const second = start(args, dir)
  const url2 = (await second.line(1)).slice('listening on '.length)
  let result: { status: number; body: unknown } = { status: 0, body: null }
  for (const end = Date.now() + 90_000; Date.now() < end; ) {
    const response = await fetch(`${url2}/reactors/${reactor.id}/results/${requestId}`, {
      headers: { 'SVC-API-KEY': app.key! },
    })
    result = { status: response.status, body: await response.json().catch(() => null) }
    if (result.status !== 409) break
    await new Promise((r) => setTimeout(r, 250))
  }
  expect(result).toEqual({ status: 200, body: { raw: { sum: 5 }, tokens: {} } })
  second.child.kill('SIGTERM')
  await second.exited
}, 120_000)

/**
 * The CLI's test destinations: `serve --test-mode --test-destination ORIGIN=echo` answers that
 * origin in the process (no network), puts it on the egress list, and `GET /_test/proxy` shows what
 * it received (the plaintext a processor would have seen) until `POST /_test/reset`. Without
 * `--test-mode` the flag is refused. A server start takes seconds on a busy machine: 120 s each.
 */
import { expect, it } from 'vitest'
import { serve } from '../../bin/serve.js'
import { start } from '../cli/spawn.js'

const ADMIN = 'admin-token-for-proxy-tests-0123'
const STRIPE = 'https://api.stripe.test'
const SLOW = 120_000

it(
  'serve with a test destination: the proxy reaches it in process, GET /_test/proxy lists what it received, reset clears it',
  async () => {
    const lines: string[] = []
    const s = await serve({
      port: 0,
      host: '127.0.0.1',
      store: 'memory',
      print: (line) => lines.push(line),
      log: () => {},
      testMode: true,
      adminToken: ADMIN,
      testDestinations: [STRIPE],
    })
    try {
      const management = lines.find((l) => l.startsWith('management key: '))!.slice('management key: '.length)
      const api = (path: string, key: string, init: RequestInit = {}) =>
        fetch(`${s.url}${path}`, {
          ...init,
          headers: { 'svc-api-key': key, 'content-type': 'application/json', ...init.headers },
        })
      const made = await api('/applications', management, {
        method: 'POST',
        body: JSON.stringify({ name: 'b', type: 'private', permissions: ['token:create', 'token:use'] }),
      })
      const key = ((await made.json()) as { key: string }).key
      const token = (await (
        await api('/tokens', key, {
          method: 'POST',
          body: JSON.stringify({ type: 'token', data: 'pan-cli-1' }),
        })
      ).json()) as { id: string }
      const proxied = await api('/proxy/v1/charges', key, {
        method: 'POST',
        headers: { 'svc-proxy-url': STRIPE },
        body: JSON.stringify({ n: `{{ ${token.id} }}` }),
      })
      expect(proxied.status).toBe(200)
      expect(((await proxied.json()) as { body: unknown }).body).toEqual({ n: 'pan-cli-1' })
      const control = (method: string, path: string) =>
        fetch(`${s.url}${path}`, { method, headers: { authorization: `Bearer ${ADMIN}` } })
      const received = (await (await control('GET', '/_test/proxy')).json()) as {
        origins: string[]
        data: { origin: string; url: string; body: string }[]
      }
      expect(received.origins).toEqual([STRIPE])
      expect(received.data).toHaveLength(1)
      expect(received.data[0]).toMatchObject({ origin: STRIPE, url: `${STRIPE}/v1/charges` })
      expect(JSON.parse(received.data[0]!.body)).toEqual({ n: 'pan-cli-1' })
      expect((await control('GET', '/_test/proxy')).status).toBe(200)
      expect((await control('POST', '/_test/reset')).status).toBe(204)
      expect(((await (await control('GET', '/_test/proxy')).json()) as { data: unknown[] }).data).toEqual([])
      expect((await fetch(`${s.url}/_test/proxy`)).status).toBe(401)
    } finally {
      await s.close()
    }
  },
  SLOW,
)

it(
  '--test-destination needs --test-mode and the form ORIGIN=echo',
  async () => {
    const without = start([
      'serve',
      '--port',
      '0',
      '--store',
      'memory',
      '--test-destination',
      `${STRIPE}=echo`,
    ])
    expect((await without.exited)[0]).not.toBe(0)
    expect(without.stderr()).toContain('--test-destination needs --test-mode')
    const malformed = start([
      'serve',
      '--port',
      '0',
      '--store',
      'memory',
      '--test-mode',
      '--test-destination',
      STRIPE,
    ])
    expect((await malformed.exited)[0]).not.toBe(0)
    expect(malformed.stderr()).toContain('--test-destination must be ORIGIN=echo')
  },
  SLOW,
)

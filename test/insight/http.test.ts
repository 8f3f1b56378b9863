/**
 * Leak checks, exposure and used access over the control plane (`tokenvault serve --test-mode`),
 * from TypeScript and from a Python script (standard library only) as a suite in another language.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { serve } from '../../bin/serve.js'

const ADMIN = 'admin-token-for-insight-0123456789'
const CARD = '4242424242424242'
const closing: (() => Promise<void>)[] = []
afterEach(async () => {
  await Promise.all(closing.splice(0).map((close) => close()))
})

async function server() {
  const printed: string[] = []
  const s = await serve({
    port: 0,
    host: '127.0.0.1',
    store: 'memory',
    headerPrefix: 'SVC',
    print: (l) => printed.push(l),
    log: () => {},
    testMode: true,
    adminToken: ADMIN,
  })
  closing.push(() => s.close())
  const management = printed.find((l) => l.startsWith('management key: '))!.slice('management key: '.length)
  const call = async (
    method: string,
    path: string,
    options: { key?: string; body?: unknown; text?: string } = {},
  ) => {
    const headers: Record<string, string> = { authorization: `Bearer ${ADMIN}` }
    if (options.key) headers['SVC-API-KEY'] = options.key
    let body: string | undefined
    if (options.text !== undefined) {
      headers['content-type'] = 'text/plain'
      body = options.text
    } else if (options.body !== undefined) {
      headers['content-type'] = 'application/json'
      body = JSON.stringify(options.body)
    }
    const r = await fetch(`${s.url}${path}`, { method, headers, ...(body === undefined ? {} : { body }) })
    const text = await r.text()
    return { status: r.status, text, body: text ? JSON.parse(text) : undefined }
  }
  return { url: s.url, management, call }
}

const reveal = [
  {
    description: 'all',
    priority: 1,
    container: '/',
    transform: 'reveal',
    permissions: ['token:create', 'token:read'],
  },
]

describe('/_test/leaks, /_test/exposure, /_test/used-access', () => {
  it('check a captured value, count what left the vault, and list what was used', async () => {
    const { call, management } = await server()
    const app = (
      await call('POST', '/applications', {
        key: management,
        body: { name: 'checkout-api', type: 'private', rules: reveal },
      })
    ).body
    const token = (await call('POST', '/tokens', { key: app.key, body: { type: 'card_number', data: CARD } }))
      .body
    await call('GET', `/tokens/${token.id}`, { key: app.key })
    const found = await call('POST', '/_test/leaks', { body: { value: { rows: [{ pan: `x${CARD}` }] } } })
    expect(found.status).toBe(200)
    expect(found.body).toEqual({
      leaked: true,
      findings: [{ token_id: token.id, canary: false, encoding: 'digits', path: '$.rows[0].pan', offset: 1 }],
    })
    expect(found.text).not.toContain(CARD)
    expect((await call('POST', '/_test/leaks', { text: 'nothing held here' })).body).toEqual({
      leaked: false,
      findings: [],
    })
    const exposure = (await call('GET', '/_test/exposure')).body
    expect(exposure).toMatchObject({
      total: 1,
      by_application: { 'checkout-api': 1 },
      by_operation: { 'token.get': 1 },
    })
    const used = (await call('GET', '/_test/used-access')).body
    expect(used.fixture).toEqual([
      expect.objectContaining({ type: 'management', permissions: ['application:create'] }),
      {
        name: 'checkout-api',
        type: 'private',
        permissions: [],
        rules: [
          expect.objectContaining({
            container: '/pci/high/',
            transform: 'reveal',
            permissions: ['token:create', 'token:read'],
          }),
        ],
      },
    ])
  })

  it('refuses a body without a value, and needs the admin token', async () => {
    const { call, url } = await server()
    const bad = await call('POST', '/_test/leaks', { body: { nothing: 1 } })
    expect(bad.status).toBe(400)
    expect(bad.body.errors).toEqual({ value: ['required'] })
    expect((await fetch(`${url}/_test/exposure`)).status).toBe(401)
  })

  it('a Python script uses the HTTP form of leak checks and exposure', async () => {
    const { url, management } = await server()
    const script = fileURLToPath(new URL('./leaks_check.py', import.meta.url))
    // Asynchronous: the server answers the script from this same process.
    const child = spawn('python3', [script, url, ADMIN, management])
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
    expect(out.trim()).toBe('ok')
    expect(code).toBe(0)
  })
})

import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { serve } from '../../bin/serve.js'
import { tempDir } from '../file/helpers.js'
import { start } from './spawn.js'

const ADMIN = 'admin-token-for-tests-0123456789'

async function server(testMode: boolean) {
  const printed: string[] = []
  const s = await serve({
    port: 0,
    host: '127.0.0.1',
    store: 'memory',
    headerPrefix: 'SVC',
    print: (l) => printed.push(l),
    log: () => {},
    ...(testMode ? { testMode, adminToken: ADMIN } : {}),
  })
  const management = printed.find((l) => l.startsWith('management key: '))!.slice('management key: '.length)
  const call = async (method: string, path: string, key?: string, body?: unknown, admin = false) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' }
    if (key) headers['SVC-API-KEY'] = key
    if (admin) headers['authorization'] = `Bearer ${ADMIN}`
    const r = await fetch(`${s.url}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    const text = await r.text()
    return { status: r.status, body: text ? JSON.parse(text) : undefined }
  }
  const control = (method: string, path: string, body?: unknown) =>
    call(method, `/_test/${path}`, undefined, body, true)
  return { s, management, call, control, printed }
}

const perms = ['token:create', 'token:read']
const reveal = [{ description: 'all', priority: 1, container: '/', transform: 'reveal', permissions: perms }]

describe('tokenvault serve --test-mode: the control plane', () => {
  it('is 404 without test mode, and nothing else changes', async () => {
    const { s, call } = await server(false)
    try {
      expect((await call('GET', '/_test/clock', undefined, undefined, true)).status).toBe(404)
      expect((await call('POST', '/_test/reset', undefined, undefined, true)).status).toBe(404)
    } finally {
      await s.close()
    }
  })

  it('needs the admin token; moves the clock and expires a session as time would', async () => {
    const { s, management, call, control } = await server(true)
    try {
      expect((await call('GET', '/_test/clock')).status).toBe(401)
      expect((await call('GET', '/_test/clock', undefined, undefined, false)).body.title).toBe('Unauthorized')
      const now = (await control('GET', 'clock')).body.now as string
      expect(Math.abs(Date.parse(now) - Date.now())).toBeLessThan(60_000)
      const pub = await call('POST', '/applications', management, {
        name: 'web',
        type: 'public',
        permissions: ['token:create'],
      })
      const session = await call('POST', '/sessions', pub.body.key)
      expect(session.status).toBe(201)
      expect(
        (await call('POST', '/tokens', session.body.session_key, { type: 'token', data: 'x' })).status,
      ).toBe(403)
      const moved = await control('POST', 'clock', { advance_ms: 4 * 60_000 })
      expect(moved.status).toBe(200)
      expect(Date.parse(moved.body.now) - Date.parse(now)).toBeGreaterThanOrEqual(4 * 60_000)
      expect(moved.body.swept.sessions).toBe(1)
      expect(
        (await call('POST', '/tokens', session.body.session_key, { type: 'token', data: 'x' })).status,
      ).toBe(401)
      expect((await control('POST', 'clock', { set: '2031-05-01T00:00:00.000Z' })).body.now).toBe(
        '2031-05-01T00:00:00.000Z',
      )
      const bad = await control('POST', 'clock', { advance: 5 })
      expect(bad.status).toBe(400)
      expect((await control('GET', 'clock')).body.now).toBe('2031-05-01T00:00:00.000Z')
    } finally {
      await s.close()
    }
  })

  it('resets to the state after start, snapshots and restores, loads fixtures, and shows the journal', async () => {
    const { s, management, call, control } = await server(true)
    try {
      const priv = await call('POST', '/applications', management, {
        name: 'srv',
        type: 'private',
        permissions: perms,
        rules: reveal,
      })
      const token = await call('POST', '/tokens', priv.body.key, { type: 'token', data: 'kept' })
      const snapshot = (await control('POST', 'snapshot')).body
      expect(snapshot.format).toBe('tokenvault.snapshot')
      await call('POST', '/tokens', priv.body.key, { id: 'extra', type: 'token', data: 'extra' })
      expect((await control('POST', 'restore', snapshot)).status).toBe(204)
      expect((await call('GET', '/tokens/extra', priv.body.key)).status).toBe(404)
      expect((await call('GET', `/tokens/${token.body.id}`, priv.body.key)).body.data).toBe('kept')
      expect((await control('POST', 'snapshot')).body).toEqual(snapshot)
      expect((await control('POST', 'restore', { format: 'nope' })).status).toBe(400)

      const journal = await control('GET', 'journal?operation=token.create')
      expect(journal.body.data.map((e: { outcome: { ok: boolean } }) => e.outcome.ok)).toEqual([true, true])
      expect(JSON.stringify(journal.body)).not.toContain('kept')

      const fixture = {
        tenants: [
          {
            name: 'fixed',
            applications: [
              {
                name: 'f',
                type: 'private',
                key: 'key_fixture_0123456789abcdefghij',
                permissions: perms,
                rules: reveal,
              },
            ],
            tokens: [{ id: 'fixed-token', type: 'token', data: 'from a fixture' }],
          },
        ],
      }
      expect((await control('POST', 'fixture', fixture)).status).toBe(201)
      expect((await call('GET', '/tokens/fixed-token', 'key_fixture_0123456789abcdefghij')).body.data).toBe(
        'from a fixture',
      )
      const badFixture = await control('POST', 'fixture', {
        tenants: [{ name: 'x', tokens: [{ type: 'nope' }] }],
      })
      expect(badFixture.status).toBe(400)
      expect(
        Object.keys(badFixture.body.errors).some((k: string) => k.startsWith('tenants.0.tokens.0')),
      ).toBe(true)

      expect((await control('POST', 'reset')).status).toBe(204)
      expect((await call('GET', '/tokens/fixed-token', 'key_fixture_0123456789abcdefghij')).status).toBe(401)
      expect((await call('GET', '/applications', management)).status).toBe(200)
      expect((await call('GET', '/applications', management)).body.data).toHaveLength(1)
    } finally {
      await s.close()
    }
  })
})

describe('tokenvault serve --seed', () => {
  it('loads a fixture on an empty store at start; --admin-token without --test-mode exits 2', async () => {
    const dir = await tempDir()
    const seed = join(dir, 'seed.json')
    await writeFile(
      seed,
      JSON.stringify({
        tenants: [
          {
            name: 'seeded',
            applications: [
              {
                name: 's',
                type: 'private',
                key: 'key_seeded_0123456789abcdefghijk',
                permissions: perms,
                rules: reveal,
              },
            ],
            tokens: [{ id: 'seeded-token', type: 'token', data: 'seeded' }],
          },
        ],
      }),
    )
    const cli = start(['serve', '--port', '0', '--store', 'memory', '--seed', seed])
    const listening = (await cli.line(1)).slice('listening on '.length)
    const answer = await fetch(`${listening.replace('127.0.0.1', 'localhost')}/tokens/seeded-token`, {
      headers: { 'SVC-API-KEY': 'key_seeded_0123456789abcdefghijk' },
    })
    expect(await answer.json()).toMatchObject({ id: 'seeded-token', data: 'seeded' })
    cli.child.kill('SIGTERM')
    await cli.exited
    const refused = start(['serve', '--port', '0', '--store', 'memory', '--admin-token', ADMIN])
    const [code] = await refused.exited
    expect(code).toBe(2)
    expect(refused.stderr()).toMatch(/--admin-token needs --test-mode/)
  }, 120_000)
})

describe('TOKENVAULT_TEST_MODE=1', () => {
  it('turns test mode on from the environment and prints the admin token it generated', async () => {
    const cli = start(['serve', '--port', '0', '--store', 'memory'], undefined, { TOKENVAULT_TEST_MODE: '1' })
    const listening = (await cli.line(1)).slice('listening on '.length)
    await cli.line(3)
    const printed = cli.lines.find((l) => l.startsWith('admin token: '))
    expect(printed).toMatch(/^admin token: adm_[A-Za-z0-9_-]{32}$/)
    const token = printed!.slice('admin token: '.length)
    const clock = (auth?: string) =>
      fetch(`${listening}/_test/clock`, auth ? { headers: { authorization: `Bearer ${auth}` } } : {})
    expect((await clock()).status).toBe(401)
    const answer = await clock(token)
    expect(answer.status).toBe(200)
    expect(Math.abs(Date.parse(((await answer.json()) as { now: string }).now) - Date.now())).toBeLessThan(
      60_000,
    )
    cli.child.kill('SIGTERM')
    await cli.exited
  }, 30_000)
})

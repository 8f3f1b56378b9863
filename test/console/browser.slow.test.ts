/**
 * Drives the test console in headless Chromium (Debian's `chromium`, through `playwright-core`):
 * `tokenvault serve --test-mode` from source, tokens made over HTTP, and the page as a user sees
 * it. Without a browser the test is skipped, except under CI (`.ci/run` installs one), where it
 * fails. `CONSOLE_SCREENSHOT=docs/console.png` also saves a screenshot of the tenant view.
 */
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { type Browser, chromium, type Page } from 'playwright-core'

/** The page's session storage, as far as the test reads it. */
interface Storage {
  length: number
}

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { root, start } from '../cli/spawn.js'

const ADMIN = 'adm_console_browser_0123456789'
const KEY = 'key_console_backend_0123456789abcdef'
const HOSTILE = '<img src=x onerror="window.__pwned=1">'

/** Debian's chromium, or the one `CHROMIUM_PATH` names. */
const executablePath = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find(
  (path): path is string => path !== undefined && path !== '' && existsSync(path),
)

if (executablePath === undefined && process.env.CI) {
  it('has a browser to drive the console', () => {
    throw new Error('no chromium (set CHROMIUM_PATH, or `apt-get install -y chromium`, as .ci/run does)')
  })
}

describe.skipIf(executablePath === undefined)('the test console in a browser', () => {
  let browser: Browser
  let dir: string
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: executablePath!, args: ['--no-sandbox'] })
    dir = await mkdtemp(join(tmpdir(), 'tokenvault-console-'))
  })
  afterAll(async () => {
    await browser?.close()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  it('lists tokens masked, follows the journal live, expires a token with the clock, and renders hostile metadata as text', async () => {
    const cli = start(
      ['serve', '--port', '0', '--store', 'memory', '--log', 'none', '--test-mode', '--admin-token', ADMIN],
      dir,
    )
    const url = (await cli.line(1)).slice('listening on '.length)
    const admin = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }
    const post = async (path: string, body: unknown, headers: Record<string, string>) => {
      const answer = await fetch(`${url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) })
      expect(answer.status, `${path}: ${await answer.clone().text()}`).toBeLessThan(300)
      return (await answer.json()) as Record<string, unknown>
    }
    const backend = { 'SVC-API-KEY': KEY, 'content-type': 'application/json' }
    await post(
      '/_test/fixture',
      {
        tenants: [
          {
            id: 'acme',
            name: 'Acme',
            applications: [
              {
                name: 'backend',
                type: 'private',
                key: KEY,
                permissions: ['token:create', 'token:read', 'token:update', 'token:delete'],
              },
            ],
          },
        ],
      },
      admin,
    )
    const now = Date.parse(
      ((await (await fetch(`${url}/_test/clock`, { headers: admin })).json()) as { now: string }).now,
    )
    await post(
      '/tokens',
      {
        id: 'card-1',
        type: 'card',
        data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 },
        metadata: { customer: 'alice' },
      },
      backend,
    )
    await post(
      '/tokens',
      {
        id: 'short-lived',
        type: 'token',
        data: 'secret-short-lived',
        mask: '{{ data | reveal_last: 4 }}',
        expires_at: new Date(now + 3_600_000).toISOString(),
      },
      backend,
    )
    await post(
      '/tokens',
      { id: 'hostile', type: 'token', data: 'secret-hostile', metadata: { note: HOSTILE } },
      backend,
    )

    const page: Page = await browser.newPage()
    const problems: string[] = []
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text())
    })
    page.on('pageerror', (e) => problems.push(e.message))
    const requested: string[] = []
    page.on('request', (r) => requested.push(r.url()))
    try {
      await page.goto(`${url}/_console/`)
      // The page asks for the token; the API answers nothing without it.
      await page.getByLabel('Admin token').fill(ADMIN)
      await page.getByRole('button', { name: 'Open' }).click()
      await page.getByRole('button', { name: 'Journal' }).click()
      const journal = page.locator('#journal-rows')
      await expect.poll(() => journal.locator('tr[data-seq]').count()).toBeGreaterThan(3)
      await expect.poll(() => journal.textContent()).toContain('token.create')

      // A create made now shows up in the journal without a reload.
      await post('/tokens', { id: 'live-one', type: 'token', data: 'secret-live' }, backend)
      await expect
        .poll(() => journal.locator('tr', { hasText: 'live-one' }).count(), { timeout: 10_000 })
        .toBe(1)
      const line = journal.locator('tr', { hasText: 'live-one' })
      expect(await line.locator('td').allTextContents()).toEqual([
        expect.stringMatching(/^\d+$/),
        expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        'Acme (acme)',
        expect.stringMatching(/\S/),
        'token.create',
        'ok',
        '2xx',
        'live-one',
      ])
      // Filters: by outcome (only failures: none yet) and by operation.
      await page.selectOption('#filter-outcome', 'failed')
      expect(await journal.locator('tr[data-seq]').count()).toBe(0)
      await page.selectOption('#filter-outcome', '')
      await page.selectOption('#filter-operation', 'tenant.create')
      expect(await journal.locator('tr[data-seq]').count()).toBe(2) // the default tenant, and acme
      await page.selectOption('#filter-tenant', 'acme')
      expect(await journal.locator('tr[data-seq]').count()).toBe(1)
      await page.selectOption('#filter-operation', '')
      await page.selectOption('#filter-tenant', '')

      // Tenants → tokens, masked.
      await page.getByRole('button', { name: 'Tenants' }).click()
      await page.selectOption('#tenant-select', 'acme')
      const tokens = page.locator('#token-rows')
      await expect.poll(() => tokens.locator('tr[data-token]').count()).toBe(4)
      const card = tokens.locator('tr[data-token="card-1"]')
      expect(await card.locator('td.masked').textContent()).toBe(
        'numberXXXXXXXXXXXX4242expiration_month12expiration_year2031',
      )
      expect(await tokens.locator('tr[data-token="short-lived"] td.masked').textContent()).toMatch(
        /^[X-]+ived$/,
      )
      expect(await tokens.locator('tr[data-token="hostile"] td.masked').textContent()).toBe('•••• (no mask)')
      // A link and an open transaction's lock show once made (the view follows the journal).
      expect(
        (await fetch(`${url}/tokens/card-1/children/live-one`, { method: 'POST', headers: backend })).status,
      ).toBe(204)
      const tx = (await post('/transactions', {}, backend)).id as string
      const locked = await fetch(`${url}/tokens/hostile`, {
        method: 'PATCH',
        headers: { ...backend, 'content-type': 'application/merge-patch+json', 'SVC-TRANSACTION-ID': tx },
        body: JSON.stringify({ metadata: { note: HOSTILE, step: 'staged' } }),
      })
      expect(locked.status).toBe(200)
      await expect.poll(() => tokens.locator('tr[data-token="hostile"] td').last().textContent()).toBe(tx)
      expect(await card.locator('td').nth(7).textContent()).toBe('↓ live-one')
      expect(await tokens.locator('tr[data-token="live-one"] td').nth(7).textContent()).toBe('↑ card-1')
      const open = page.locator('#transaction-rows tr', { hasText: tx })
      expect(await open.locator('td').last().textContent()).toBe('hostile')

      const body = (await page.textContent('body')) ?? ''
      expect(body).not.toMatch(/secret-|4242424242424242/)
      expect(body).toContain('alice')

      // The hostile metadata is text: no element made of it, nothing run.
      const note = tokens.locator('tr[data-token="hostile"] .pair')
      expect(await note.textContent()).toBe(`note${HOSTILE}`)
      expect(await page.locator('img').count()).toBe(0)
      expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined()

      if (process.env.CONSOLE_SCREENSHOT) {
        await page.setViewportSize({ width: 1400, height: 820 })
        await page.screenshot({ path: resolve(root, process.env.CONSOLE_SCREENSHOT), fullPage: false })
      }

      // A day later the short-lived token is swept: gone from the list.
      await page.getByRole('button', { name: 'Time' }).click()
      await page.getByRole('button', { name: '+1 day' }).click()
      const sweep = page.locator('#sweep-rows tr').first()
      await expect.poll(() => sweep.locator('td').nth(4).textContent()).toBe('1')
      await page.getByRole('button', { name: 'Tenants' }).click()
      await expect.poll(() => tokens.locator('tr[data-token]').count()).toBe(3)
      expect(await tokens.locator('tr[data-token="short-lived"]').count()).toBe(0)

      // Time moved by a test suite (not the page) shows too: the view is read again, no click.
      const later = Date.parse((await post('/_test/clock', { advance_ms: 0 }, admin)).now as string)
      await post(
        '/tokens',
        { id: 'brief', type: 'token', data: 'x', expires_at: new Date(later + 60_000).toISOString() },
        backend,
      )
      await expect.poll(() => tokens.locator('tr[data-token="brief"]').count()).toBe(1)
      await post('/_test/clock', { advance_ms: 120_000 }, admin)
      await expect.poll(() => tokens.locator('tr[data-token="brief"]').count(), { timeout: 10_000 }).toBe(0)

      // The token never went into a URL, and the page broke no rule of its policy.
      expect(requested.length).toBeGreaterThan(5)
      for (const r of requested) expect(r).not.toContain(ADMIN)
      expect(page.url()).not.toContain(ADMIN)
      expect(problems).toEqual([])
    } finally {
      await page.close()
    }
  })

  it('refuses a wrong token; sets the clock; takes, restores and resets snapshots', async () => {
    const cli = start(
      ['serve', '--port', '0', '--store', 'memory', '--log', 'none', '--test-mode', '--admin-token', ADMIN],
      dir,
    )
    const url = (await cli.line(1)).slice('listening on '.length)
    const fixture = (id: string) =>
      fetch(`${url}/_test/fixture`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ tenants: [{ id, name: id }] }),
      })
    const page = await browser.newPage()
    try {
      await page.goto(`${url}/_console/`)
      await page.getByLabel('Admin token').fill(`${ADMIN}-wrong`)
      await page.getByRole('button', { name: 'Open' }).click()
      await expect.poll(() => page.locator('#login-error').textContent()).toBe('That is not the admin token.')
      expect(await page.locator('#app').isHidden()).toBe(true)
      expect(
        await page.evaluate(
          () => (globalThis as unknown as { sessionStorage: Storage }).sessionStorage.length,
        ),
      ).toBe(0)

      await page.getByLabel('Admin token').fill(ADMIN)
      await page.getByRole('button', { name: 'Open' }).click()
      await page.getByRole('button', { name: 'Time' }).click()
      await page.getByLabel('Set the clock to').fill('2031-02-03T04:05:06Z')
      await page.getByRole('button', { name: 'Set', exact: true }).click()
      await expect.poll(() => page.locator('#clock-badge').textContent()).toBe('2031-02-03T04:05:06.000Z')

      expect((await fixture('before')).status).toBe(201)
      await page.getByRole('button', { name: 'Snapshots' }).click()
      await page.getByLabel('Snapshot label').fill('with before')
      await page.getByRole('button', { name: 'Take a snapshot' }).click()
      const row = page.locator('#snapshot-rows tr', { hasText: 'with before' })
      await expect.poll(() => row.count()).toBe(1)
      expect(await row.locator('td').nth(3).textContent()).toBe('2') // the default tenant and `before`
      expect((await fixture('after')).status).toBe(201)
      const tenants = () =>
        page.evaluate(async () => {
          const storage = (globalThis as unknown as { sessionStorage: { getItem(k: string): string } })
            .sessionStorage
          const answer = await fetch('api/tenants', {
            headers: { authorization: `Bearer ${storage.getItem('tokenvault.admin-token')}` },
          })
          return ((await answer.json()) as { data: { id: string }[] }).data.map((t) => t.id)
        })
      expect(await tenants()).toContain('after')
      await row.getByRole('button', { name: 'Restore' }).click()
      await expect.poll(() => page.locator('#status').textContent()).toMatch(/restored/)
      expect(await tenants()).toContain('before')
      expect(await tenants()).not.toContain('after')
      await page.getByRole('button', { name: 'Reset to the start' }).click()
      await expect.poll(() => page.locator('#status').textContent()).toMatch(/right after start/)
      expect(await tenants()).not.toContain('before')
      expect(await tenants()).toHaveLength(1)
    } finally {
      await page.close()
    }
  })

  it('explains a failing flow: the refusing rule of a 403, the field of a 400, the fault of a 503, a 401 with no tenant; hostile text stays text', async () => {
    const cli = start(
      ['serve', '--port', '0', '--store', 'memory', '--log', 'none', '--test-mode', '--admin-token', ADMIN],
      dir,
    )
    const url = (await cli.line(1)).slice('listening on '.length)
    await expect.poll(() => cli.lines.some((l) => l === `console: ${url}/_console/`)).toBe(true)
    const admin = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }
    const backend = { 'SVC-API-KEY': KEY, 'content-type': 'application/json' }
    const send = (method: string, path: string, body: unknown, headers: Record<string, string>) =>
      fetch(`${url}${path}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
    const rules = [
      {
        description: 'writes anywhere',
        priority: 1,
        container: '/',
        transform: 'reveal',
        permissions: ['token:create'],
      },
      {
        description: `cards ${HOSTILE}`,
        priority: 2,
        container: '/cards/',
        transform: 'mask',
        permissions: ['token:read'],
      },
      {
        description: 'open reads',
        priority: 3,
        container: '/open/',
        transform: 'reveal',
        permissions: ['token:read'],
      },
    ]
    const app = {
      name: `checkout ${HOSTILE}`,
      type: 'private',
      key: KEY,
      permissions: ['token:create', 'token:read'],
      rules,
    }
    const fixture = { tenants: [{ id: 'acme', name: `Acme ${HOSTILE}`, applications: [app] }] }
    expect((await send('POST', '/_test/fixture', fixture, admin)).status).toBe(201)
    expect((await send('POST', '/_test/mark', { name: `checkout test ${HOSTILE}` }, admin)).status).toBe(201)
    const make = (id: string, containers: string[]) =>
      send('POST', '/tokens', { id, type: 'token', data: `secret-${id}`, mask: 'XXXX', containers }, backend)
    expect((await make('vault-secret', ['/secret/'])).status).toBe(201)
    expect((await make('card-2', ['/cards/'])).status).toBe(201)
    const refused = await send('GET', '/tokens/vault-secret', undefined, backend)
    const masked = await send('GET', '/tokens/card-2', undefined, backend)
    const invalid = await send('POST', '/tokens', { type: 'token' }, backend)
    expect(
      (await send('POST', '/_test/faults', { method: 'GET', path: '/tokens/{id}', status: 503 }, admin))
        .status,
    ).toBe(201)
    const faulted = await send('GET', '/tokens/card-2?secret-query=q', undefined, backend)
    const unknown = await send('GET', '/tokens/card-2', undefined, {
      'SVC-API-KEY': 'key_not_a_key_0123456789',
    })
    expect([refused.status, masked.status, invalid.status, faulted.status, unknown.status]).toEqual([
      403, 200, 400, 503, 401,
    ])

    const page: Page = await browser.newPage()
    await page.setViewportSize({ width: 1400, height: 900 })
    const problems: string[] = []
    page.on('pageerror', (e) => problems.push(e.message))
    try {
      const served = await page.goto(`${url}/_console/`)
      const csp = served?.headers()['content-security-policy'] ?? ''
      expect(csp).toContain("script-src 'self'")
      expect(csp).not.toContain('unsafe')
      await page.getByLabel('Admin token').fill(ADMIN)
      await page.getByRole('button', { name: 'Open' }).click()
      const rows = page.locator('#request-rows')
      const row = (status: string, path: string) =>
        rows
          .locator('tr[data-request]')
          .filter({ has: page.locator('td.num', { hasText: new RegExp(`^${status}$`) }) })
          .filter({ hasText: path })
          .first()
      await expect.poll(() => row('401', '/tokens/card-2').count(), { timeout: 20_000 }).toBe(1)
      // Live: a request made now appears without a reload (server-sent events).
      await send('GET', '/tokens/live-missing', undefined, backend)
      await expect.poll(() => row('404', '/tokens/live-missing').count(), { timeout: 20_000 }).toBe(1)

      await row('403', '/tokens/vault-secret').click()
      const trace = page.locator('#detail-trace')
      await expect.poll(() => trace.textContent()).toContain('does not cover')
      expect(await trace.textContent()).toContain(`cards ${HOSTILE}`)
      expect(await trace.textContent()).toContain('token:read on vault-secret → refused')
      expect(await page.locator('#detail-journal').textContent()).toContain('token.get forbidden')
      expect(await page.locator('#detail-fields').textContent()).toContain(`checkout ${HOSTILE}`)
      const shots = process.env.CONSOLE_SCREENSHOTS
      if (shots) {
        await page.screenshot({ path: resolve(root, shots, 'console-request-detail.png') })
        await page.locator('#detail-trace').screenshot({ path: resolve(root, shots, 'console-trace.png') })
      }

      await row('200', '/tokens/card-2').click()
      await expect.poll(() => trace.textContent()).toContain('token:read on card-2 → mask')

      await row('400', '/tokens').click()
      await expect.poll(() => page.locator('#detail-problem dt').allTextContents()).toContain('data')

      await row('503', '/tokens/card-2').click()
      await expect
        .poll(() => page.locator('#detail-fields').textContent())
        .toMatch(/Injected fault#\d+: GET \/tokens\/\{id\} → 503/)

      await row('401', '/tokens/card-2').click()
      await expect
        .poll(() => page.locator('#detail-fields').textContent())
        .toContain('none (the key did not authenticate)')

      // Search by token id finds the rows that touched it.
      await page.getByLabel('Search requests').fill('vault-secret')
      await expect.poll(() => rows.locator('tr[data-request]').count()).toBe(2)
      await page.getByLabel('Search requests').fill('')

      const body = (await page.textContent('body')) ?? ''
      expect(body).not.toMatch(/secret-vault|secret-card|key_not_a_key|secret-query=q/)
      expect(await page.locator('img').count()).toBe(0)
      expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined()
      expect(problems).toEqual([])
    } finally {
      await page.close()
      cli.child.kill()
    }
  }, 120_000)
})

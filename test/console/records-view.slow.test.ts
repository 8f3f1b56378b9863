/**
 * The console's Audit log and Webhooks views in headless Chromium (Debian's `chromium`, as
 * `browser.slow.test.ts` drives it): a token made with hostile metadata over HTTP, a webhook to a
 * test destination that first answers 500; the log lists the create, filters by the token, and
 * verifies its chain; the deliveries list the event with its failed attempt, "Deliver now" and
 * "Deliver again" send it, and hostile text stays text under the console's CSP. Skipped without a
 * browser.
 */
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Browser, chromium } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { start } from '../cli/spawn.js'

const ADMIN = 'adm_console_records_view_0123456789'
const KEY = 'key_console_records_view_0123456789ab'
const MANAGEMENT_KEY = 'key_console_records_view_management_01'
const HOSTILE = '<img src=x onerror="window.__pwned=1">'
const ORIGIN = 'https://hooks.records.test'

/** Polls for up to 15 s: the browser and the server share two cores with the other tests. */
const WAIT = { timeout: 15_000 }

const executablePath = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find(
  (path): path is string => path !== undefined && path !== '' && existsSync(path),
)

describe.skipIf(executablePath === undefined)('the console’s Audit log and Webhooks views', () => {
  let browser: Browser
  let dir: string
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: executablePath!, args: ['--no-sandbox'] })
    dir = await mkdtemp(join(tmpdir(), 'tokenvault-records-view-'))
  })
  afterAll(async () => {
    await browser?.close()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  it('lists, filters and verifies the log; lists, delivers and delivers again; hostile text as text', async () => {
    const cli = start(
      ['serve', '--port', '0', '--store', 'memory', '--log', 'none', '--test-mode', '--admin-token', ADMIN],
      dir,
    )
    const url = (await cli.line(1)).slice('listening on '.length)
    const admin = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }
    const app = { 'SVC-API-KEY': KEY, 'content-type': 'application/json' }
    const management = { 'SVC-API-KEY': MANAGEMENT_KEY, 'content-type': 'application/json' }
    const post = async (path: string, body: unknown, headers: Record<string, string>) => {
      const answer = await fetch(`${url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) })
      expect(answer.status, `${path}: ${await answer.clone().text()}`).toBeLessThan(300)
      return (await answer.json()) as { id: string }
    }
    const applications = [
      { name: 'shop', type: 'private', key: KEY, permissions: ['token:create', 'token:read'] },
      { name: 'ops', type: 'management', key: MANAGEMENT_KEY, permissions: ['webhook:create'] },
    ]
    await post('/_test/fixture', { tenants: [{ id: 'acme', name: 'Acme', applications }] }, admin)
    await post('/_test/proxy/destinations', { origin: ORIGIN, respond: { status: 500 } }, admin)
    await post('/webhooks', { name: 'hook', url: `${ORIGIN}/in`, events: ['token.created'] }, management)
    const token = await post(
      '/tokens',
      { type: 'token', data: 'secret-data', metadata: { note: HOSTILE } },
      app,
    )

    const page = await browser.newPage()
    try {
      await page.goto(`${url}/_console/`)
      await page.getByLabel('Admin token').fill(ADMIN)
      await page.getByRole('button', { name: 'Open' }).click()

      await page.getByRole('button', { name: 'Audit log' }).click()
      const logRows = page.locator('#log-rows')
      // The default tenant may come first (tenants are listed by id).
      await expect.poll(() => page.locator('#log-tenant option').count(), WAIT).toBe(2)
      await page.locator('#log-tenant').selectOption('acme')
      await expect.poll(() => logRows.textContent(), WAIT).toContain(`token ${token.id}`)
      await page.getByLabel('Entity type').fill('token')
      await page.getByLabel('Entity id').fill(token.id)
      await page.getByRole('button', { name: 'Show', exact: true }).click()
      await expect.poll(() => logRows.locator('tr').count(), WAIT).toBe(1)
      expect(await logRows.locator('tr td').nth(3).textContent()).toBe('create')
      // From a day to come: nothing yet.
      await page.getByLabel('From').fill('2100-01-01')
      await page.getByRole('button', { name: 'Show', exact: true }).click()
      await expect.poll(() => logRows.textContent(), WAIT).toBe('No entry.')
      await page.getByLabel('From').fill('')
      await page.getByRole('button', { name: 'Verify the chain' }).click()
      await expect
        .poll(() => page.locator('#log-verdict').textContent(), WAIT)
        .toMatch(/^The chain holds: \d+ entries/)
      expect(await page.locator('#logs').textContent()).not.toContain('secret-data')

      await page.getByRole('button', { name: 'Webhooks' }).click()
      await page.locator('#delivery-tenant').selectOption('acme')
      const rows = page.locator('#delivery-rows tr')
      await expect.poll(() => rows.count(), WAIT).toBe(1)
      const cells = rows.first().locator('td')
      expect(await cells.nth(1).textContent()).toBe('webhook')
      expect(await cells.nth(2).textContent()).toBe('token.created')
      // The event carries the token's metadata: shown as text, never made into markup.
      expect(await cells.nth(8).textContent()).toContain(JSON.stringify(HOSTILE).slice(1, -1))
      // The create's write started the first attempt; Refresh reads the list again until it is there.
      const refreshed = async () => {
        await page.getByRole('button', { name: 'Refresh' }).click()
        return cells.nth(7).textContent()
      }
      await expect.poll(refreshed, WAIT).toContain('failed 500')
      await post('/_test/proxy/destinations', { origin: ORIGIN, respond: { status: 204 } }, admin)
      await page.getByRole('button', { name: 'Deliver now' }).click()
      await expect.poll(() => cells.nth(4).textContent(), WAIT).toBe('delivered')
      await page.getByRole('button', { name: 'Deliver again' }).click()
      await expect
        .poll(async () => (await cells.nth(7).locator('.chip').allTextContents()).length, WAIT)
        .toBeGreaterThanOrEqual(3)
      expect(await page.locator('#delivery-note').textContent()).toMatch(/sent again: delivered/)
      expect(await page.locator('#signing-key').textContent()).toContain('BEGIN PUBLIC KEY')

      expect(await page.locator('img').count()).toBe(0)
      expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined()
    } finally {
      await page.close()
    }
  }, 120_000)
})

/**
 * The console's Proxy view in headless Chromium (Debian's `chromium`, as `browser.slow.test.ts`
 * drives it): a destination registered at run time (`POST /_test/proxy/destinations`) with a
 * hostile canned answer, a proxied request with a hostile body, and the view listing both as text
 * under the console's CSP (no markup made, no script run). Skipped without a browser.
 */
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Browser, chromium } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { start } from '../cli/spawn.js'

const ADMIN = 'adm_console_proxy_view_0123456789'
const KEY = 'key_console_proxy_view_0123456789abcd'
const HOSTILE = '<img src=x onerror="window.__pwned=1">'
const ORIGIN = 'https://api.hostile.test'

const executablePath = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find(
  (path): path is string => path !== undefined && path !== '' && existsSync(path),
)

describe.skipIf(executablePath === undefined)('the console’s Proxy view', () => {
  let browser: Browser
  let dir: string
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: executablePath!, args: ['--no-sandbox'] })
    dir = await mkdtemp(join(tmpdir(), 'tokenvault-proxy-view-'))
  })
  afterAll(async () => {
    await browser?.close()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  it('lists a destination registered at run time and what it received, hostile text as text', async () => {
    const cli = start(
      ['serve', '--port', '0', '--store', 'memory', '--log', 'none', '--test-mode', '--admin-token', ADMIN],
      dir,
    )
    const url = (await cli.line(1)).slice('listening on '.length)
    const admin = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }
    const post = async (path: string, body: unknown, headers: Record<string, string>) => {
      const answer = await fetch(`${url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) })
      expect(answer.status, `${path}: ${await answer.clone().text()}`).toBeLessThan(300)
      return answer
    }
    await post(
      '/_test/fixture',
      {
        tenants: [
          {
            id: 'acme',
            name: 'Acme',
            applications: [{ name: 'shop', type: 'private', key: KEY, permissions: ['token:use'] }],
          },
        ],
      },
      admin,
    )
    await post(
      '/_test/proxy/destinations',
      { origin: ORIGIN, respond: { status: 201, headers: { 'x-note': HOSTILE }, body: { note: HOSTILE } } },
      admin,
    )
    await post(
      '/proxy/charges',
      { note: HOSTILE },
      {
        'SVC-API-KEY': KEY,
        'SVC-PROXY-URL': ORIGIN,
        'content-type': 'application/json',
        'x-hostile': HOSTILE,
      },
    )

    const page = await browser.newPage()
    try {
      await page.goto(`${url}/_console/`)
      await page.getByLabel('Admin token').fill(ADMIN)
      await page.getByRole('button', { name: 'Open' }).click()
      await page.getByRole('button', { name: 'Proxy' }).click()
      const destinations = page.locator('#destination-rows')
      await expect.poll(() => destinations.textContent()).toContain(ORIGIN)
      expect(await destinations.textContent()).toContain(JSON.stringify({ note: HOSTILE }))
      const received = page.locator('#received-rows')
      await expect.poll(() => received.locator('tr').count()).toBe(1)
      const cells = await received.locator('tr td').allTextContents()
      expect(cells.slice(0, 4)).toEqual(['1', ORIGIN, 'POST', `${ORIGIN}/charges`])
      expect(cells[4]).toContain(`x-hostile${HOSTILE}`)
      expect(cells[5]).toBe(JSON.stringify({ note: HOSTILE }))
      // Text, never markup: no element was made of it, and nothing ran.
      expect(await page.locator('#proxy img').count()).toBe(0)
      expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined()
      // Forgetting what was received empties the list.
      await page.getByRole('button', { name: 'Forget what was received' }).click()
      await expect.poll(() => received.textContent()).toBe('Nothing received.')
    } finally {
      await page.close()
    }
  }, 120_000)
})

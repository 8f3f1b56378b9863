import { describe, expect, it } from 'vitest'
import { statusOfOutcome } from '../../adapters/http/console.js'
import { testControlHandler } from '../../adapters/http/test-control.js'
import { serve } from '../../bin/serve.js'
import type { FormulaRunner } from '../../src/kernel/runner.js'
import { createTestVault } from '../../testing/vault.js'

const ADMIN = 'admin-token-for-console-0123456789'

/** A runner that compiles anything and answers `{ raw: 'ran' }` (no sandbox needed here). */
const fakeRunner: FormulaRunner = {
  check: async () => null,
  run: async () => ({ ok: true, value: { raw: 'ran' }, logs: [] }),
  close: async () => {},
}

async function console_() {
  const vault = await createTestVault({ runner: fakeRunner })
  const handler = testControlHandler(vault.service, {
    clock: vault.clock,
    adminToken: ADMIN,
    initial: await vault.snapshot(),
  })
  const raw = (method: string, path: string, body?: unknown, token: string | null = ADMIN) =>
    handler(
      new Request(`http://vault.test${path}`, {
        method,
        headers: {
          ...(token === null ? {} : { authorization: `Bearer ${token}` }),
          'content-type': 'application/json',
        },
        ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      }),
    )
  const get = async (path: string) => {
    const answer = await raw('GET', `/_console/api/${path}`)
    const text = await answer.text()
    return { status: answer.status, text, body: text ? JSON.parse(text) : undefined }
  }
  const tenant = encodeURIComponent(vault.tenant.id)
  return { vault, raw, get, tenant }
}

describe('the console in the CLI server', () => {
  it('is 404 without test mode, the page and its API alike, even with the admin token', async () => {
    const s = await serve({
      port: 0,
      host: '127.0.0.1',
      store: 'memory',
      headerPrefix: 'SVC',
      print: () => {},
      log: () => {},
    })
    try {
      for (const path of ['/_console/', '/_console/console.js', '/_console/api/tenants', '/_console']) {
        const answer = await fetch(`${s.url}${path}`, { headers: { authorization: `Bearer ${ADMIN}` } })
        expect(answer.status, path).toBe(404)
      }
    } finally {
      await s.close()
    }
  })

  it('in test mode serves the page under a strict policy, and its API only with the admin token', async () => {
    const s = await serve({
      port: 0,
      host: '127.0.0.1',
      store: 'memory',
      headerPrefix: 'SVC',
      print: () => {},
      log: () => {},
      testMode: true,
      adminToken: ADMIN,
    })
    try {
      const page = await fetch(`${s.url}/_console/`)
      expect(page.status).toBe(200)
      const csp = page.headers.get('content-security-policy')!
      expect(csp).toContain("script-src 'self'")
      expect(csp).toContain("style-src 'self'")
      expect(csp).toContain("frame-ancestors 'none'")
      expect(csp).toContain("require-trusted-types-for 'script'")
      expect(csp).not.toContain('unsafe-inline')
      const html = await page.text()
      expect(html).toContain('<script type="module" src="console.js"></script>')
      // No inline script or style: every <script> has a src, and no style attribute or element.
      expect(html.match(/<script(?![^>]*\ssrc=)[^>]*>/g)).toBeNull()
      expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i)
      const script = await fetch(`${s.url}/_console/console.js`)
      expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
      expect(await script.text()).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/)
      expect((await fetch(`${s.url}/_console`, { redirect: 'manual' })).headers.get('location')).toBe(
        '/_console/',
      )
      const none = await fetch(`${s.url}/_console/api/tenants`)
      expect(none.status).toBe(401)
      expect(none.headers.get('www-authenticate')).toBe('Bearer')
      const wrong = await fetch(`${s.url}/_console/api/tenants`, {
        headers: { authorization: `Bearer ${ADMIN.replace(/.$/, 'X')}` },
      })
      expect(wrong.status).toBe(401)
      const right = await fetch(`${s.url}/_console/api/tenants`, {
        headers: { authorization: `Bearer ${ADMIN}` },
      })
      expect(right.status).toBe(200)
      expect(((await right.json()) as { data: unknown[] }).data).toHaveLength(1)
    } finally {
      await s.close()
    }
  })
})

describe('the console API', () => {
  it('lists tokens masked, page by page in id order, never their data', async () => {
    const { vault, get, tenant } = await console_()
    const client = vault.client()
    for (let i = 0; i < 45; i++) {
      const id = `t${String(i).padStart(2, '0')}`
      await client.tokens.create({ id, type: 'token', data: `secret-${i}`, ...(i % 2 ? { mask: 'XX' } : {}) })
    }
    await client.tokens.create({
      id: 'card',
      type: 'card',
      data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 },
    })
    const seen: string[] = []
    let start: string | undefined
    let pages = 0
    do {
      const page = await get(`tenants/${tenant}/tokens?size=20${start ? `&start=${start}` : ''}`)
      expect(page.status).toBe(200)
      expect(page.text).not.toMatch(/secret-|4242424242424242/)
      seen.push(...page.body.data.map((t: { id: string }) => t.id))
      start = page.body.next
      pages++
    } while (start)
    expect(pages).toBe(3)
    expect(seen).toEqual([...seen].sort())
    expect(new Set(seen).size).toBe(46)
    const first = await get(`tenants/${tenant}/tokens?size=100`)
    const byId = new Map(first.body.data.map((t: { id: string }) => [t.id, t]))
    expect(byId.get('t01')).toMatchObject({ masked: 'XX', type: 'token', containers: ['/general/high/'] })
    expect(byId.get('t00')).not.toHaveProperty('masked')
    expect(byId.get('card')).toMatchObject({ masked: { number: 'XXXXXXXXXXXX4242' } })
    expect(byId.get('card')).toHaveProperty('fingerprint')
  })

  it('goes on after the cursor when tokens before it come and go between pages', async () => {
    const { vault, get, tenant } = await console_()
    const client = vault.client()
    for (const id of ['b', 'd', 'f', 'h', 'j']) await client.tokens.create({ id, type: 'token', data: id })
    const one = await get(`tenants/${tenant}/tokens?size=2`)
    expect(one.body.data.map((t: { id: string }) => t.id)).toEqual(['b', 'd'])
    // The page's last token is deleted, and one sorting before it is made: positions shift by one.
    await client.tokens.delete('d')
    await client.tokens.create({ id: 'a', type: 'token', data: 'a' })
    await client.tokens.create({ id: 'a2', type: 'token', data: 'a' })
    const two = await get(`tenants/${tenant}/tokens?size=2&start=${one.body.next}`)
    expect(two.body.data.map((t: { id: string }) => t.id)).toEqual(['f', 'h'])
    const three = await get(`tenants/${tenant}/tokens?size=2&start=${two.body.next}`)
    expect(three.body.data.map((t: { id: string }) => t.id)).toEqual(['j'])
    expect(three.body.next).toBeUndefined()
  })

  it('answers 20 tokens a page by default', async () => {
    const { vault, get, tenant } = await console_()
    for (let i = 0; i < 21; i++) await vault.client().tokens.create({ id: `d${i}`, type: 'token', data: 'x' })
    const first = await get(`tenants/${tenant}/tokens`)
    expect(first.body.data).toHaveLength(20)
    const second = await get(`tenants/${tenant}/tokens?start=${first.body.next}`)
    expect(second.body.data).toHaveLength(1)
    expect(second.body.next).toBeUndefined()
  })

  it('takes 1 to 100 tokens a page and refuses a cursor it did not answer, with 400', async () => {
    const { get, tenant } = await console_()
    expect((await get(`tenants/${tenant}/tokens?size=100`)).status).toBe(200)
    expect((await get(`tenants/${tenant}/tokens?size=1`)).status).toBe(200)
    expect((await get(`tenants/${tenant}/tokens?size=101`)).status).toBe(400)
    expect((await get(`tenants/${tenant}/tokens?size=0`)).status).toBe(400)
    expect((await get(`tenants/${tenant}/tokens?size=-1`)).status).toBe(400)
    expect(
      (await get(`tenants/${tenant}/tokens?start=${Buffer.from('x').toString('base64url')}`)).status,
    ).toBe(400)
    expect((await get(`tenants/${tenant}/tokens?start=%3Cscript%3E`)).status).toBe(400)
    expect((await get('tenants/nope/tokens')).status).toBe(404)
    expect((await get('tenants/%E0%A4%A/tokens')).status).toBe(400)
    expect((await get('nothing-here')).status).toBe(404)
  })

  it('shows open transactions with the tokens they lock, and the lock on each token', async () => {
    const { vault, get, tenant } = await console_()
    await vault.client().tokens.create({ id: 'locked', type: 'token', data: 'x' })
    const tx = await vault.client().transactions.create()
    await vault.client('private', { transactionId: tx.id }).tokens.update('locked', { metadata: { a: 'b' } })
    const open = await get(`tenants/${tenant}/transactions`)
    expect(open.body).toMatchObject({ truncated: false, data: [{ id: tx.id, locks: ['locked'], staged: 1 }] })
    const tokens = await get(`tenants/${tenant}/tokens`)
    expect(tokens.body.data).toMatchObject([{ id: 'locked', locked_by: tx.id }])
    await vault.client().transactions.commit(tx.id)
    expect((await get(`tenants/${tenant}/transactions`)).body.data).toEqual([])
  })

  it('reads at most 1000 open transactions: 999 are all there, 1000 may not be', async () => {
    const { vault, get, tenant } = await console_()
    const client = vault.client()
    for (let i = 0; i < 999; i++) await client.transactions.create()
    const under = await get(`tenants/${tenant}/transactions`)
    expect(under.body.data).toHaveLength(999)
    expect(under.body.truncated).toBe(false)
    await client.transactions.create()
    const at = await get(`tenants/${tenant}/transactions`)
    expect(at.body.data).toHaveLength(1000)
    expect(at.body.truncated).toBe(true)
  })

  it('shows applications with permissions and rules but no key, and reactors without configuration values', async () => {
    const { vault, get, tenant } = await console_()
    const apps = await get(`tenants/${tenant}/applications`)
    expect(apps.body.total).toBe(3)
    expect(apps.text).not.toMatch(/key_hash|"keys"|"key"/)
    for (const key of Object.values(vault.keys)) expect(apps.text).not.toContain(key)
    const priv = apps.body.data.find((a: { type: string }) => a.type === 'private')
    expect(priv.permissions).toContain('token:read')
    expect(priv.rules[0]).toMatchObject({ container: '/', transform: 'reveal' })

    const management = vault.client('management')
    const reactor = await management.reactors.create({
      name: '<b>hostile</b>',
      code: 'module.exports = async () => ({ raw: 1 })',
      configuration: { API_SECRET: 'sk_live_do_not_show' },
    })
    await vault.client().reactors.react(reactor.id, { args: {} })
    const reactors = await get(`tenants/${tenant}/reactors`)
    expect(reactors.text).not.toContain('sk_live_do_not_show')
    expect(reactors.body.data).toMatchObject([
      { id: reactor.id, name: '<b>hostile</b>', formula: null, configuration_keys: ['API_SECRET'] },
    ])
    expect(reactors.body.data[0].runs).toMatchObject([{ outcome: 'ok' }])
    for (let i = 0; i < 4; i++) await vault.client().reactors.react(reactor.id, { args: {} })
    expect((await get(`tenants/${tenant}/reactors`)).body.data[0].runs).toHaveLength(5)
    await expect(vault.client('public').reactors.react(reactor.id, { args: {} })).rejects.toMatchObject({
      code: 'forbidden',
    })
    const runs = (await get(`tenants/${tenant}/reactors`)).body.data[0].runs
    expect(runs).toHaveLength(5)
    expect(runs[0].outcome).toBe('forbidden') // the newest first
  })

  it('answers journal entries after a sequence number, with the status of each outcome and no token data', async () => {
    const { vault, get } = await console_()
    const before = (await get('journal')).body.last as number
    await vault.client().tokens.create({ id: 'j', type: 'token', data: 'secret-journal' })
    await expect(vault.client().tokens.get('missing')).rejects.toMatchObject({ code: 'not_found' })
    const after = await get(`journal?after=${before}`)
    expect(after.text).not.toContain('secret-journal')
    expect(after.body.data).toMatchObject([
      { seq: before + 1, operation: 'token.create', outcome: 'ok', status: null, ids: ['j'] },
      { seq: before + 2, operation: 'token.get', outcome: 'not_found', status: 404 },
    ])
    expect(after.body.last).toBe(before + 2)
    expect((await get(`journal?after=${before + 2}`)).body).toEqual({ data: [], last: before + 2 })
    expect((await get('journal?after=x')).status).toBe(400)
  })

  it('answers at most the newest 500 journal entries after the sequence number given', async () => {
    const { vault, get } = await console_()
    const before = (await get('journal')).body.last as number
    for (let i = 0; i < 501; i++)
      await vault
        .client()
        .tokens.get('missing')
        .catch(() => {})
    const all = await get(`journal?after=${before}`)
    expect(all.body.data).toHaveLength(500)
    expect(all.body.data[0].seq).toBe(before + 2)
    expect(all.body.last).toBe(before + 501)
    const exactly = await get(`journal?after=${before + 1}`)
    expect(exactly.body.data).toHaveLength(500)
    expect(exactly.body.data[0].seq).toBe(before + 2)
  })

  it('takes snapshots it keeps (never sending their data), restores one, and keeps the newest 20', async () => {
    const { vault, raw, get } = await console_()
    await vault.client().tokens.create({ id: 'kept', type: 'token', data: 'secret-snapshot' })
    const taken = await raw('POST', '/_console/api/snapshots', { label: 'x'.repeat(200) })
    expect(taken.status).toBe(201)
    const held = (await taken.json()) as { id: string; counts: { tokens: number } }
    expect(held.counts.tokens).toBe(1)
    expect(JSON.stringify(held)).not.toContain('secret-snapshot')
    expect((await raw('POST', '/_console/api/snapshots', { label: 'x'.repeat(201) })).status).toBe(400)
    expect((await raw('POST', '/_console/api/snapshots', '{"label": 5}')).status).toBe(400)
    expect((await raw('POST', '/_console/api/snapshots', 'not json')).status).toBe(400)
    await vault.client().tokens.delete('kept')
    expect((await raw('POST', `/_console/api/snapshots/${held.id}/restore`)).status).toBe(204)
    expect((await vault.client().tokens.get('kept')).data).toBe('secret-snapshot')
    expect((await raw('POST', '/_console/api/snapshots/snap_999/restore')).status).toBe(404)
    for (let i = 0; i < 20; i++) await raw('POST', '/_console/api/snapshots')
    const list = await get('snapshots')
    expect(list.body.data).toHaveLength(20)
    expect(list.body.data[0].id).not.toBe(held.id)
    expect(list.text).not.toContain('secret-snapshot')
  })
})

describe('statusOfOutcome', () => {
  it('answers the status the HTTP API gives each outcome', () => {
    expect(statusOfOutcome({ ok: true })).toBeNull()
    expect(statusOfOutcome({ ok: false, code: 'validation_failed' })).toBe(400)
    expect(statusOfOutcome({ ok: false, code: 'conflict' })).toBe(409)
    expect(statusOfOutcome({ ok: false, code: 'store_unavailable' })).toBe(503)
    expect(statusOfOutcome({ ok: false, code: 'store_corrupt' })).toBe(500)
    expect(statusOfOutcome({ ok: false, code: 'internal' })).toBe(500)
    expect(statusOfOutcome({ ok: false, code: 'store_toString' })).toBe(500)
    expect(statusOfOutcome({ ok: false, code: 'constructor' })).toBe(500)
  })
})

/**
 * The console's audit log and webhook views, through its API (`/_console/api/tenants/{id}/logs…`,
 * `…/deliveries…`): pages newest first (the log) and oldest first (deliveries), filters, cursors,
 * the chain's verification, deliver now and deliver again, and what is never shown.
 */
import { describe, expect, it } from 'vitest'
import { testControlHandler } from '../../adapters/http/test-control.js'
import type { OutboxEntry } from '../../src/kernel/index.js'
import { deliveryView } from '../../src/service/index.js'
import { createTestVault } from '../../testing/vault.js'

const ADMIN = 'admin-token-for-console-records-0123'
const RECEIVER = 'https://hooks.console.test'
const CANARY = 'canary-4111-1111-1111-1111'

async function consoleOf(status: () => number = () => 204) {
  const vault = await createTestVault({
    destinations: { [RECEIVER]: () => new Response(null, { status: status() }) },
  })
  const handler = testControlHandler(vault.service, {
    clock: vault.clock,
    adminToken: ADMIN,
    initial: await vault.snapshot(),
  })
  const call = async (method: string, path: string) => {
    const answer = await handler(
      new Request(`http://vault.test/_console/api/${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN}` },
      }),
    )
    const text = await answer.text()
    return { status: answer.status, text, body: text ? JSON.parse(text) : undefined }
  }
  const tenant = encodeURIComponent(vault.tenant.id)
  return { vault, call, tenant }
}

describe('the console API: audit log', () => {
  it('pages the log newest first by its cursor, filters by entity, and never holds token data', async () => {
    const { vault, call, tenant } = await consoleOf()
    const client = vault.client()
    const a = await client.tokens.create({ type: 'token', data: CANARY })
    vault.clock.advance(1000)
    const b = await client.tokens.create({ type: 'token', data: CANARY })
    vault.clock.advance(1000)
    await client.tokens.get(a.id)

    const first = await call('GET', `tenants/${tenant}/logs?size=2`)
    expect(first.status).toBe(200)
    expect(
      first.body.data.map((e: { operation: string; entity_id: string }) => [e.operation, e.entity_id]),
    ).toEqual([
      ['read', a.id],
      ['create', b.id],
    ])
    expect(first.body.next).toEqual(expect.any(String))
    const second = await call('GET', `tenants/${tenant}/logs?size=2&start=${first.body.next}`)
    expect(second.body.data[0]).toMatchObject({ operation: 'create', entity_id: a.id })
    for (const e of [...first.body.data, ...second.body.data]) {
      expect(Object.keys(e)).not.toContain('mac')
      expect(Object.keys(e)).not.toContain('lane')
    }

    const onlyA = await call('GET', `tenants/${tenant}/logs?entity_type=token&entity_id=${a.id}`)
    expect(onlyA.body.data.map((e: { operation: string }) => e.operation)).toEqual(['read', 'create'])
    expect(onlyA.body.next).toBeUndefined()

    const all = await call('GET', `tenants/${tenant}/logs?size=100`)
    expect(all.text).not.toContain(CANARY)
  })

  it('filters by date: entries from start_date to end_date, both inclusive; a bad date is 400', async () => {
    const { vault, call, tenant } = await consoleOf()
    const made: string[] = []
    for (let i = 0; i < 3; i++) {
      made.push((await vault.client().tokens.create({ type: 'token', data: `x${i}` })).id)
      vault.clock.advance(60_000)
    }
    // The creates were at 00:00, 00:01 and 00:02 of the test clock's day.
    const at = (minute: number) => `2030-01-01T00:0${minute}:00.000Z`
    const between = await call(
      'GET',
      `tenants/${tenant}/logs?entity_type=token&start_date=${at(1)}&end_date=${at(2)}`,
    )
    expect(between.body.data.map((e: { entity_id: string }) => e.entity_id)).toEqual([made[2], made[1]])
    const before = await call('GET', `tenants/${tenant}/logs?entity_type=token&end_date=${at(0)}`)
    expect(before.body.data.map((e: { entity_id: string }) => e.entity_id)).toEqual([made[0]])
    expect((await call('GET', `tenants/${tenant}/logs?start_date=yesterday`)).status).toBe(400)
  })

  it('takes 1 to 100 entries a page and refuses a bad cursor, an entity id alone or an unknown tenant', async () => {
    const { call, tenant } = await consoleOf()
    expect((await call('GET', `tenants/${tenant}/logs?size=100`)).status).toBe(200)
    expect((await call('GET', `tenants/${tenant}/logs?size=1`)).status).toBe(200)
    expect((await call('GET', `tenants/${tenant}/logs?size=101`)).status).toBe(400)
    expect((await call('GET', `tenants/${tenant}/logs?size=0`)).status).toBe(400)
    expect((await call('GET', `tenants/${tenant}/logs?start=not-a-cursor`)).status).toBe(400)
    const forged = Buffer.from('2030-01-01T00:00:00.000Z|x', 'utf8').toString('base64url')
    expect((await call('GET', `tenants/${tenant}/logs?start=${forged}`)).status).toBe(400)
    // Shaped as a cursor, but naming no time a store keeps, or an id with U+0000: 400, never a store's error.
    for (const position of ['yesterday\u0001x', '2030-01-01T00:00:00.000Z\u0001a\u0000b']) {
      const cursor = Buffer.from(position, 'utf8').toString('base64url')
      expect((await call('GET', `tenants/${tenant}/logs?start=${cursor}`)).status, position).toBe(400)
    }
    expect((await call('GET', `tenants/${tenant}/logs?entity_id=abc`)).status).toBe(400)
    expect((await call('GET', `tenants/${tenant}/logs?entity_type=${'t'.repeat(100)}`)).status).toBe(200)
    expect((await call('GET', `tenants/${tenant}/logs?entity_type=${'t'.repeat(101)}`)).status).toBe(400)
    expect((await call('GET', 'tenants/no-such-tenant/logs')).status).toBe(404)
    expect((await call('GET', 'tenants/no-such-tenant/logs/verify')).status).toBe(404)
  })

  it('verifies the chain: every entry the pages list is checked', async () => {
    const { vault, call, tenant } = await consoleOf()
    for (let i = 0; i < 5; i++) await vault.client().tokens.create({ type: 'token', data: `x${i}` })
    const listed = (await call('GET', `tenants/${tenant}/logs?size=100`)).body.data.length
    const verified = await call('GET', `tenants/${tenant}/logs/verify`)
    expect(verified.status).toBe(200)
    expect(verified.body).toMatchObject({ ok: true, entries: listed })
    expect(listed).toBeGreaterThanOrEqual(5)
  })
})

describe('the console API: deliveries', () => {
  it('lists deliveries with each attempt, delivers now past the back-off, and delivers again', async () => {
    let answer = 500
    const { vault, call, tenant } = await consoleOf(() => answer)
    await vault
      .client('management')
      .webhooks.create({ name: 'hook', url: `${RECEIVER}/in`, events: ['token.created'] })
    const token = await vault.client().tokens.create({ type: 'token', data: CANARY })

    // The create's write started its first attempt (the receiver answered 500): now it waits out its back-off.
    const attempts = async () =>
      (await call('GET', `tenants/${tenant}/deliveries`)).body.data[0]?.attempts.length
    await expect.poll(attempts).toBe(1)
    const deliver = await call('POST', `tenants/${tenant}/deliveries/deliver`)
    expect(deliver.body).toEqual({ attempted: 1 })
    let page = await call('GET', `tenants/${tenant}/deliveries`)
    expect(page.body.data).toHaveLength(1)
    const [d] = page.body.data
    expect(d).toMatchObject({
      kind: 'webhook',
      event_type: 'token.created',
      url: `${RECEIVER}/in`,
      state: 'pending',
    })
    expect(d.due_at > vault.clock.now().toISOString()).toBe(true)
    expect(d.attempts).toEqual([
      expect.objectContaining({ ok: false, status: 500 }),
      expect.objectContaining({ ok: false, status: 500 }),
    ])
    expect(JSON.parse(d.body).data.token.id).toBe(token.id)
    expect(page.text).not.toContain(CANARY)

    answer = 204
    expect((await call('POST', `tenants/${tenant}/deliveries/deliver`)).body).toEqual({ attempted: 1 })
    page = await call('GET', `tenants/${tenant}/deliveries`)
    expect(page.body.data[0].state).toBe('delivered')
    const again = await call('POST', `tenants/${tenant}/deliveries/${encodeURIComponent(d.id)}/redeliver`)
    expect(again.status).toBe(200)
    expect(again.body.attempts).toHaveLength(4)
    expect(vault.proxy.received(RECEIVER)).toHaveLength(4)
    expect((await call('POST', `tenants/${tenant}/deliveries/no-such/redeliver`)).status).toBe(404)
  })

  it('pages deliveries oldest first, 1 to 100 a page', async () => {
    const { vault, call, tenant } = await consoleOf()
    await vault
      .client('management')
      .webhooks.create({ name: 'hook', url: `${RECEIVER}/in`, events: ['token.created'] })
    for (let i = 0; i < 3; i++) await vault.client().tokens.create({ type: 'token', data: `x${i}` })
    const first = await call('GET', `tenants/${tenant}/deliveries?size=2`)
    expect(first.body.data).toHaveLength(2)
    const second = await call(
      'GET',
      `tenants/${tenant}/deliveries?size=2&after=${encodeURIComponent(first.body.next)}`,
    )
    expect(second.body.data).toHaveLength(1)
    expect(second.body.next).toBeUndefined()
    const ids = [...first.body.data, ...second.body.data].map((d: { id: string }) => d.id)
    expect(ids).toEqual([...ids].sort())
    expect((await call('GET', `tenants/${tenant}/deliveries?size=100`)).status).toBe(200)
    expect((await call('GET', `tenants/${tenant}/deliveries?size=101`)).status).toBe(400)
    expect((await call('GET', 'tenants/no-such-tenant/deliveries')).status).toBe(404)
  })

  it("withholds a callback's and a react's body and result, giving their length", () => {
    const entry: OutboxEntry = {
      tenant_id: 't',
      id: '0001',
      kind: 'react',
      reactor_id: 'r',
      url: 'https://cb.example.test/done',
      body: JSON.stringify({ raw: CANARY }),
      result: JSON.stringify({ ok: true, result: { raw: CANARY } }),
      created_at: '2030-01-01T00:00:00.000Z',
      state: 'delivered',
      attempts: [{ at: '2030-01-01T00:00:00.000Z', ok: true, status: 200 }],
    }
    for (const kind of ['react', 'callback'] as const) {
      const shown = deliveryView({ ...entry, kind })
      expect(JSON.stringify(shown)).not.toContain(CANARY)
      expect(shown).toMatchObject({ body_chars: entry.body.length, result_chars: entry.result!.length })
    }
    expect(deliveryView({ ...entry, kind: 'webhook' }).body).toBe(entry.body)
  })
})

describe('the audit log in the control plane and the test kit', () => {
  it('GET /_test/logs pages and filters the log, /_test/logs/verify checks it; a tenant is required', async () => {
    const vault = await createTestVault()
    const handler = testControlHandler(vault.service, {
      clock: vault.clock,
      adminToken: ADMIN,
      initial: await vault.snapshot(),
    })
    const get = async (path: string) => {
      const answer = await handler(
        new Request(`http://vault.test${path}`, { headers: { authorization: `Bearer ${ADMIN}` } }),
      )
      return {
        status: answer.status,
        body: (await answer.json()) as { data: { id: string; operation: string }[]; next?: string },
      }
    }
    const token = await vault.client().tokens.create({ type: 'token', data: CANARY })
    await vault.client().tokens.get(token.id)
    const tenant = encodeURIComponent(vault.tenant.id)
    const page = await get(`/_test/logs?tenant=${tenant}&entity_type=token&entity_id=${token.id}`)
    expect(page.status).toBe(200)
    expect(page.body.data.map((e: { operation: string }) => e.operation)).toEqual(['read', 'create'])
    expect(JSON.stringify(page.body)).not.toContain(CANARY)
    const one = await get(`/_test/logs?tenant=${tenant}&size=1`)
    expect(one.body.data).toHaveLength(1)
    const next = await get(`/_test/logs?tenant=${tenant}&size=1&start=${one.body.next}`)
    expect(next.body.data[0]?.id).toEqual(expect.any(String))
    expect(next.body.data[0]?.id).not.toBe(one.body.data[0]?.id)
    expect((await get(`/_test/logs/verify?tenant=${tenant}`)).body).toMatchObject({ ok: true })
    expect((await get('/_test/logs')).status).toBe(400)
    expect((await get('/_test/logs/verify')).status).toBe(400)
    expect((await get('/_test/logs?tenant=no-such-tenant')).status).toBe(404)
    expect((await get('/_test/logs/verify?tenant=no-such-tenant')).status).toBe(404)
  })

  it('vault.logs lists the tenant’s entries newest first and verifies them, with no log:read key', async () => {
    const vault = await createTestVault()
    const a = await vault.client().tokens.create({ type: 'token', data: 'a' })
    await vault.client().tokens.delete(a.id)
    const page = await vault.logs.list({ entity_type: 'token', entity_id: a.id })
    expect(page.data.map((e) => e.operation)).toEqual(['delete', 'create'])
    expect(page.next).toBeUndefined()
    const verified = await vault.logs.verify()
    expect(verified.ok).toBe(true)
    expect(verified.entries).toBeGreaterThanOrEqual(2)
  })
})

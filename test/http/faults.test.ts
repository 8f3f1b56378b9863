import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { faultRegistry, withFaults } from '../../adapters/http/faults.js'
import { exchangeHandlerOf } from '../../adapters/http/handler.js'
import { createHttpHandler, toNodeListener } from '../../adapters/http/index.js'
import { isTestControlPath, testControlHandler } from '../../adapters/http/test-control.js'
import { createTestVault } from '../../testing/vault.js'

const ADMIN = 'admin-token-for-tests-0123456789'
const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const close of closers.splice(0)) await close()
})

/** A test vault served as the server's test mode serves it: the control plane and the API with faults. */
async function served() {
  const vault = await createTestVault()
  const faults = faultRegistry()
  const api = withFaults(toNodeListener(vault.http), faults)
  const control = toNodeListener(
    testControlHandler(vault.service, {
      clock: vault.clock,
      adminToken: ADMIN,
      initial: await vault.snapshot(),
      faults,
    }),
  )
  const server = createServer((req, res) =>
    (isTestControlPath((req.url ?? '').split('?')[0]!) ? control : api)(req, res),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  closers.push(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
    await vault.close()
  })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const ctl = (method: string, path: string, body?: unknown) =>
    fetch(`${url}/_test/${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
  const api_ = (method: string, path: string, body?: unknown) =>
    fetch(`${url}${path}`, {
      method,
      headers: { 'SVC-API-KEY': vault.keys.private, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
  return { vault, ctl, api: api_ }
}

describe('fault injection (/_test/faults)', () => {
  it('answers the next matching request with the status as a problem, Retry-After on 503, then serves again', async () => {
    const { ctl, api } = await served()
    const added = await ctl('POST', 'faults', {
      method: 'POST',
      path: '/tokens',
      status: 503,
      times: 1,
      delay_ms: 0,
    })
    expect(added.status).toBe(201)
    expect(await added.json()).toMatchObject({ method: 'POST', path: '/tokens', status: 503, times_left: 1 })
    expect((await api('GET', '/tokens/none')).status).toBe(404) // another method: untouched
    const failed = await api('POST', '/tokens', { type: 'token', data: 'x' })
    expect(failed.status).toBe(503)
    expect(failed.headers.get('content-type')).toBe('application/problem+json')
    expect(failed.headers.get('retry-after')).toBe('1')
    expect(await failed.json()).toMatchObject({ status: 503, title: 'Service Unavailable' })
    expect((await api('POST', '/tokens', { type: 'token', data: 'x' })).status).toBe(201)
    expect(await (await ctl('GET', 'faults')).json()).toEqual({ data: [] })
  })

  it('matches a route pattern or an exact path, counts times, and lists and clears what is left', async () => {
    const { ctl, api } = await served()
    await ctl('POST', 'faults', { method: 'GET', path: '/tokens/{id}', status: 429, times: 2 })
    await ctl('POST', 'faults', { path: '/tokens/exact', status: 418, times: 5 })
    const first = await api('GET', '/tokens/a')
    expect([first.status, first.headers.get('retry-after')]).toEqual([429, '1'])
    expect((await api('GET', '/tokens/b/')).status).toBe(429)
    const exact = await api('DELETE', '/tokens/exact')
    expect([exact.status, exact.headers.get('retry-after')]).toEqual([418, null])
    expect((await api('DELETE', '/tokens/other')).status).toBe(404)
    const listed = (await (await ctl('GET', 'faults')).json()) as {
      data: { path: string; times_left: number }[]
    }
    expect(listed.data).toEqual([
      expect.objectContaining({ path: '/tokens/exact', times_left: 4, method: '*' }),
    ])
    expect((await ctl('DELETE', 'faults')).status).toBe(204)
    expect((await api('GET', '/tokens/exact')).status).toBe(404)
  })

  it('delays a request by delay_ms, then serves it as usual', async () => {
    const { ctl, api } = await served()
    await ctl('POST', 'faults', { method: 'GET', path: '/tokens/{id}', delay_ms: 300 })
    const started = performance.now()
    const answer = await api('GET', '/tokens/slow')
    expect(answer.status).toBe(404)
    expect(performance.now() - started).toBeGreaterThanOrEqual(290)
  })

  it('refuses bad faults with a 400 naming the field, and accepts each limit exactly', async () => {
    const { ctl } = await served()
    const bad: [unknown, string][] = [
      [{ path: '/tokens', status: 399 }, 'status'],
      [{ path: '/tokens', status: 600 }, 'status'],
      [{ path: '/tokens', status: 200 }, 'status'],
      [{ path: '/tokens' }, 'status'],
      [{ path: 'tokens', status: 500 }, 'path'],
      [{ status: 500 }, 'path'],
      [{ path: '/tokens', status: 500, times: 0 }, 'times'],
      [{ path: '/tokens', status: 500, times: 1_000_001 }, 'times'],
      [{ path: '/tokens', status: 500, delay_ms: -1 }, 'delay_ms'],
      [{ path: '/tokens', status: 500, delay_ms: 60_001 }, 'delay_ms'],
      [{ path: '/tokens', status: 500, method: 'PO ST' }, 'method'],
      [{ path: '/tokens', status: 500, extra: 1 }, 'extra'],
      [[], 'body'],
    ]
    for (const [body, field] of bad) {
      const answer = await ctl('POST', 'faults', body)
      expect(answer.status, JSON.stringify(body)).toBe(400)
      expect(((await answer.json()) as { errors: object }).errors).toHaveProperty(field)
    }
    expect(await (await ctl('GET', 'faults')).json()).toEqual({ data: [] })
    for (const fault of [
      { path: '/a', status: 400 },
      { path: '/a', status: 599, times: 1_000_000 },
      { path: '/a', delay_ms: 60_000 },
    ])
      expect((await ctl('POST', 'faults', fault)).status).toBe(201)
    for (let i = 3; i < 100; i++)
      expect((await ctl('POST', 'faults', { path: '/a', status: 500 })).status).toBe(201)
    const over = await ctl('POST', 'faults', { path: '/a', status: 500 })
    expect(over.status).toBe(400)
  })
})

describe('reset and the journal', () => {
  it('reset clears the journal and the faults; ?journal=keep keeps the journal; another value is a 400', async () => {
    const { vault, ctl, api } = await served()
    await api('POST', '/tokens', { id: 'j', type: 'token', data: 'x' })
    await ctl('POST', 'faults', { path: '/nowhere', status: 500 })
    const operations = async () =>
      ((await (await ctl('GET', 'journal')).json()) as { data: { operation: string }[] }).data.map(
        (e) => e.operation,
      )
    expect(await operations()).toContain('token.create')
    expect((await ctl('POST', 'reset?journal=keep')).status).toBe(204)
    expect(await operations()).toContain('token.create')
    expect(await (await ctl('GET', 'faults')).json()).toEqual({ data: [] })
    expect((await ctl('POST', 'reset?journal=maybe')).status).toBe(400)
    expect((await ctl('POST', 'reset')).status).toBe(204)
    expect(await operations()).toEqual([])
    expect(vault.service.journal.query()).toEqual([])
  })

  it('journals the writes a fixture makes', async () => {
    const { ctl } = await served()
    const fixture = {
      tenants: [
        {
          name: 'fx',
          tokens: [
            { id: 'fixed', type: 'token', data: 'x' },
            { id: 'child', type: 'token', data: 'y' },
          ],
          associations: [{ parent_id: 'fixed', child_id: 'child' }],
        },
      ],
    }
    expect((await ctl('POST', 'fixture', fixture)).status).toBe(201)
    const journal = (await (await ctl('GET', 'journal?operation=token.create')).json()) as {
      data: { ids: string[]; actor: { kind: string } }[]
    }
    expect(journal.data.flatMap((e) => e.ids)).toEqual(expect.arrayContaining(['fixed', 'child']))
    expect(journal.data.every((e) => e.actor.kind === 'admin')).toBe(true)
    const links = (await (await ctl('GET', 'journal?operation=token.child.link')).json()) as {
      data: unknown[]
    }
    expect(links.data).toHaveLength(1)
  })
})

describe('the OpenAPI document', () => {
  it('is answered as the same bytes each time: no copy of 150 KB per request for an unread connection to hold', async () => {
    const vault = await createTestVault()
    const exchange = exchangeHandlerOf(createHttpHandler(vault.service))!
    const incoming = {
      method: 'GET',
      target: '/openapi.json',
      header: () => null,
      readBody: async () => null,
    }
    const first = await exchange(incoming)
    const second = await exchange(incoming)
    expect(first.body).toBeInstanceOf(Uint8Array)
    expect((first.body as Uint8Array).byteLength).toBeGreaterThan(100_000)
    expect(second.body).toBe(first.body)
    expect(JSON.parse(new TextDecoder().decode(first.body as Uint8Array))).toHaveProperty('paths')
  })
})

describe('the OpenAPI document in test mode', () => {
  it('describes /_test/* with the admin bearer scheme when asked, and not otherwise', async () => {
    const vault = await createTestVault()
    const doc = async (documentTestControl: boolean) =>
      (await (
        await createHttpHandler(vault.service, { documentTestControl })(new Request('http://v/openapi.json'))
      ).json()) as { paths: Record<string, Record<string, unknown>>; components: { securitySchemes: object } }
    const on = await doc(true)
    expect(Object.keys(on.paths['/_test/faults']!)).toEqual(['post', 'get', 'delete'])
    for (const path of ['clock', 'reset', 'snapshot', 'restore', 'fixture', 'journal'])
      expect(on.paths).toHaveProperty(`/_test/${path}`)
    expect(on.components.securitySchemes).toHaveProperty(
      'AdminToken',
      expect.objectContaining({ scheme: 'bearer' }),
    )
    const off = await doc(false)
    expect(Object.keys(off.paths).filter((p) => p.startsWith('/_test'))).toEqual([])
    await vault.close()
  })
})

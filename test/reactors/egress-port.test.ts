/**
 * Egress is a port: the service makes its requests (a formula's `fetch`, an asynchronous react's
 * callback) through the `EgressClient` it is given. `routedEgress` answers listed origins with
 * in-process handlers: these origins do not resolve, so every answer here proves the request went
 * through the port, from the sandbox worker to the runner's host side and on to the client, and
 * never to the network. The egress policy (allow-list, redirects, request checks) still applies.
 */

import { routedEgress } from 'tokenvault/adapters/egress'
import { afterAll, describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, type EgressClient, manualClock } from '../../entry/index.js'
import { formulaBody, REACTOR, sharedRunner, TOKEN } from '../formulas/setup.js'

const runner = sharedRunner({ poolSize: 1 })
afterAll(() => runner.get().close())

const API = 'https://api.partner.invalid'
const HOOKS = 'https://hooks.partner.invalid'

/** A tenant's private client and a reactor running `code`, on a service whose egress is `egress`. */
async function reactorWith(code: string, egress: EgressClient, origins: string[]) {
  const service = createService({
    store: memoryStore(),
    clock: manualClock(),
    runner: runner.get(),
    reactorTimeoutMs: 60_000,
    reactorEgress: origins,
    egressClient: egress,
  })
  const tenant = await service.admin.createTenant({ name: 't' })
  const key = async (type: 'management' | 'private', permissions: typeof REACTOR) =>
    (await service.admin.createApplication({ tenantId: tenant.id, name: type, type, permissions })).key
  const admin = service.connect(await key('management', REACTOR))
  const client = service.connect(await key('private', TOKEN))
  const formula = await admin.reactorFormulas.create(
    formulaBody({ code, configuration: [], request_parameters: [] }),
  )
  const reactor = await admin.reactors.create({ name: 'r', formula_id: formula.id })
  return { client, reactor }
}

describe('an in-process egress client (routedEgress)', () => {
  it("receives a formula's fetch: method, headers, body; the formula reads its answer", async () => {
    const seen: { url: string; method: string; auth: string | null; body: string }[] = []
    const egress = routedEgress({
      [API]: async (request) => {
        seen.push({
          url: request.url,
          method: request.method,
          auth: request.headers.get('authorization'),
          body: await request.text(),
        })
        return Response.json({ card: 'ok' }, { status: 201, headers: { 'x-reply': 'yes' } })
      },
    })
    const code = `module.exports = async function () {
      const r = await fetch('${API}/cards?x=1', { method: 'POST', headers: { authorization: 'Bearer k' }, body: '{"n":1}' })
      return { raw: { status: r.status, reply: r.headers.get('x-reply'), body: await r.json() } }
    }`
    const { client, reactor } = await reactorWith(code, egress, [API])
    const result = await client.reactors.react(reactor.id, {})
    expect(result.raw).toEqual({ status: 201, reply: 'yes', body: { card: 'ok' } })
    expect(seen).toEqual([{ url: `${API}/cards?x=1`, method: 'POST', auth: 'Bearer k', body: '{"n":1}' }])
  })

  it("receives an asynchronous react's callback with the react's result", async () => {
    let delivered: (body: unknown) => void = () => {}
    const callback = new Promise<unknown>((resolve) => {
      delivered = resolve
    })
    const egress = routedEgress({
      [HOOKS]: async (request) => {
        delivered({ path: new URL(request.url).pathname, body: await request.json() })
        return new Response(null, { status: 204 })
      },
    })
    const code = 'module.exports = async function () { return { raw: { done: 42 } } }'
    const { client, reactor } = await reactorWith(code, egress, [HOOKS])
    await client.reactors.reactAsync(reactor.id, { args: {}, callback_url: `${HOOKS}/done` })
    expect(await callback).toEqual({ path: '/done', body: { raw: { done: 42 }, tokens: {} } })
  })

  it('keeps the policy: an unlisted origin is refused though it has a route, a listed one without a route fails', async () => {
    let unlisted = 0
    const egress = routedEgress({
      [API]: () => Response.redirect(`${HOOKS}/elsewhere`, 302),
      [HOOKS]: () => {
        unlisted++
        return new Response('no')
      },
    })
    const limits = { timeoutMs: 5000, maxRequestBytes: 1024, maxResponseBytes: 1024 }
    const get = (url: string, origins: string[]) =>
      egress(origins, { url, method: 'GET', headers: {} }, limits).catch((e: Error) => e.message)
    expect(await get(`${HOOKS}/x`, [API])).toBe(`${HOOKS} is not on the egress allow-list`)
    expect(await get(`${API}/x`, [API])).toBe(`redirect to ${HOOKS} refused: not on the egress allow-list`)
    expect(await get('https://other.invalid/', ['https://other.invalid'])).toBe(
      'https://other.invalid: connection failed (ECONNREFUSED)',
    )
    expect(unlisted).toBe(0)
    await expect(egress([API], { url: `${API}/`, method: 'TRACE', headers: {} }, limits)).rejects.toThrow(
      'method "TRACE" is not allowed',
    )
  })
})

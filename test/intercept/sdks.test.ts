/**
 * `tokenvault/intercept`: the SDKs exactly as production code builds them — no `baseUrl`, no
 * `apiBaseUrl` — answered by an in-process vault. Legacy `@basis-theory/basis-theory-js@1.79.3` and
 * basis-theory-js 4.x send through axios (`http.request`), `@basis-theory/node-sdk` 5 through the
 * global `fetch`.
 */
import { BasisTheory as Legacy } from '@basis-theory/basis-theory-js'
import { BasisTheory as Js4 } from '@basis-theory/basis-theory-js4'
import { BasisTheoryClient, BasisTheoryEnvironment } from '@basis-theory/node-sdk'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { type Interception, intercept } from '../../entry/intercept.js'
import { createTestVault, type TestVault } from '../../testing/index.js'

let vault: TestVault
let interception: Interception
beforeEach(async () => {
  vault = await createTestVault()
  interception = intercept(vault)
})
afterEach(async () => {
  interception.close()
  await vault.close()
})

/** The status of a failed SDK call (node-sdk: `statusCode`; basis-theory-js: `status`). */
async function failedStatus(promise: Promise<unknown>): Promise<number> {
  const error = (await promise.then(
    () => {
      throw new Error('expected the call to fail')
    },
    (e: unknown) => e,
  )) as { statusCode?: number; status?: number }
  const status = error.statusCode ?? error.status
  if (typeof status !== 'number') throw error
  return status
}

describe('intercept(vault): the SDKs with no base URL reach the in-process vault', () => {
  it('node-sdk 5 (`new BasisTheoryClient({ apiKey })`, global fetch): create, get, detokenize, delete', async () => {
    const bt = new BasisTheoryClient({ apiKey: vault.keys.private })
    const token = await bt.tokens.create({ type: 'token', data: { secret: 'node' } })
    expect((await vault.client().tokens.get(token.id!)).data).toEqual({ secret: 'node' })
    expect((await bt.tokens.get(token.id!)).data).toEqual({ secret: 'node' })
    expect(await bt.tokens.detokenize({ s: `{{ ${token.id} }}` })).toEqual({ s: { secret: 'node' } })
    await bt.tokens.delete(token.id!)
    expect(await failedStatus(bt.tokens.get(token.id!))).toBe(404)
    expect(
      await failedStatus(new BasisTheoryClient({ apiKey: 'key_unknown', maxRetries: 0 }).tokens.get('x')),
    ).toBe(401)
  })

  it("node-sdk 5 on the test tenants' host (`environment: BasisTheoryEnvironment.Test`)", async () => {
    const bt = new BasisTheoryClient({
      apiKey: vault.keys.management,
      environment: BasisTheoryEnvironment.Test,
    })
    const app = await bt.applications.create({
      name: 'from test env',
      type: 'private',
      permissions: ['token:read'],
    })
    const listed = await vault.client('management').applications.list({})
    expect(listed.data.map((a) => a.id)).toContain(app.id)
  })

  it('legacy basis-theory-js 1.79.3 (`new BasisTheory().init(key)`, axios over http): tokens and applications', async () => {
    const bt = await new Legacy().init(vault.keys.private)
    const token = await bt.tokens.create({ type: 'token', data: 'legacy' })
    expect((await vault.client().tokens.get(token.id)).data).toBe('legacy')
    expect((await bt.tokens.retrieve(token.id)).data).toBe('legacy')
    const admin = await new Legacy().init(vault.keys.management)
    const app = await admin.applications.create({
      name: 'legacy app',
      type: 'private',
      permissions: ['token:read'],
    })
    expect((await admin.applications.retrieve(app.id)).name).toBe('legacy app')
    expect(await failedStatus(bt.tokens.retrieve('00000000-0000-4000-8000-000000000000'))).toBe(404)
  })

  it('basis-theory-js 4.x (`new BasisTheory().init(key)`, axios over http): tokens, tokenize, reactors list', async () => {
    const bt = await new Js4().init(vault.keys.private)
    const token = await bt.tokens.create({ type: 'token', data: { n: 4 } })
    expect((await bt.tokens.retrieve(token.id)).data).toEqual({ n: 4 })
    const made = (await bt.tokenize({ type: 'token', data: 'four' } as never)) as { id: string }
    expect((await vault.client().tokens.get(made.id)).data).toBe('four')
    const admin = await new Js4().init(vault.keys.management)
    expect((await admin.reactors.list()).data).toEqual([])
  })

  it("the test vault's faults answer through the interception", async () => {
    vault.faults.add({ method: 'POST', path: '/tokens', status: 503, times: 1 })
    const bt = new BasisTheoryClient({ apiKey: vault.keys.private, maxRetries: 0 })
    expect(await failedStatus(bt.tokens.create({ type: 'token', data: 'x' }))).toBe(503)
    expect((await bt.tokens.create({ type: 'token', data: 'x' })).id).toBeTypeOf('string')
  })
})

describe('intercept(service)', () => {
  it("a Service gets the HTTP adapter's handler with BT- headers; a vault is closed by its owner, not by close()", async () => {
    const service = createService({ store: memoryStore(), clock: manualClock(), runner: null })
    const tenant = await service.admin.createTenant({ name: 'plain' })
    const { key } = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'writer',
      type: 'private',
      permissions: ['token:create'],
    })
    interception.close()
    const own = intercept(service)
    try {
      const created = await new BasisTheoryClient({ apiKey: key }).tokens.create({
        type: 'token',
        data: 'svc',
      })
      expect(created.tenantId).toBe(tenant.id)
      // The SVC- header is not the SDKs': a handler with headerPrefix BT does not read it.
      const svc = await fetch('https://api.basistheory.com/tokens/x', { headers: { 'SVC-API-KEY': key } })
      expect(svc.status).toBe(401)
    } finally {
      own.close()
    }
    await service.close()
  })
})

/**
 * The inputs of the client and the admin are typed: every correct call below compiles and runs, and
 * each call marked `@ts-expect-error` holds one mistake (a misspelled field, a wrong type) that
 * fails `tsc` (`npm run typecheck` checks this file; an expected error that stops erroring fails it
 * too). At run time the same mistakes are still refused: JavaScript callers may send anything.
 */
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type {
  AdminCreateApplicationInput,
  AuthorizeSessionInput,
  CreateApplicationInput,
  CreateReactorInput,
  CreateTokenInput,
  Fixture,
  OfficialFormulaInput,
  PatchReactorInput,
  ReactorFormulaInput,
  TestAdmin,
  UpdateApplicationInput,
  UpdateReactorInput,
  UpdateTokenInput,
} from '../../entry/index.js'
import { createTestVault } from '../../testing/vault.js'
import { fakeRunner } from '../http/fake-runner.js'

/** Expects `call` to be refused: as invalid input unless `code` says otherwise. */
const refused = (call: Promise<unknown>, code = 'validation_failed') =>
  expect(call).rejects.toMatchObject({ code })

const FORMULA: ReactorFormulaInput = {
  name: 'echo',
  type: 'private',
  code: 'module.exports = async (req) => ({ raw: req.args })',
  configuration: [{ name: 'region', type: 'string' }],
  request_parameters: [{ name: 'card.number', type: 'string', optional: true }],
}

/** How many methods `api` has, in nested objects too. */
function methodCount(api: object): number {
  return Object.values(api).reduce<number>(
    (n, member) => n + (typeof member === 'function' ? 1 : methodCount(member as object)),
    0,
  )
}

/** `admin` with the name of each method called recorded in `called`. */
function recording(admin: TestAdmin, called: Set<string>): TestAdmin {
  return new Proxy(admin, {
    get(target, name, receiver) {
      const member = Reflect.get(target, name, receiver)
      // A group of methods (`view`) counts as called when it is used.
      if (typeof name === 'string' && typeof member === 'object' && member !== null) called.add(name)
      if (typeof name !== 'string' || typeof member !== 'function') return member
      return (...args: unknown[]) => {
        called.add(name)
        return member.apply(target, args)
      }
    },
  })
}

describe('typed inputs', () => {
  it('the client: every method takes its typed input; misspelled fields and wrong types fail to compile', async () => {
    const vault = await createTestVault({ runner: fakeRunner() })
    const since = vault.service.journal.query().at(-1)!.seq
    const c = vault.client()
    const m = vault.client('management')

    // tokens
    const body: CreateTokenInput = {
      type: 'card',
      data: { number: '4242424242424242' },
      metadata: { a: '1' },
    }
    const token = await c.tokens.create(body)
    await c.tokens.create({
      id: 'fixed',
      type: 'token',
      data: 'x',
      containers: ['/pci/'],
      expires_at: '2031-01-01',
    })
    // @ts-expect-error `tpye` is no field of a token
    await refused(c.tokens.create({ tpye: 'token', data: 'x' }))
    // @ts-expect-error `containers` is a list of paths
    await refused(c.tokens.create({ type: 'token', data: 'x', containers: '/pci/' }))
    // @ts-expect-error metadata values are strings
    await refused(c.tokens.create({ type: 'token', data: 'x', metadata: { a: 1 } }))
    const patch: UpdateTokenInput = { data: { cvc: '123' }, metadata: { a: null } }
    await c.tokens.update(token.id, patch)
    await c.tokens.update(token.id, { containers: null, mask: null, expires_at: null })
    // @ts-expect-error `metdata` is misspelled
    await refused(c.tokens.update(token.id, { metdata: { a: '2' } }))
    // @ts-expect-error `type` can't change
    await refused(c.tokens.update(token.id, { type: 'other' }))
    expect((await c.tokens.get(token.id)).data).toEqual({ number: '4242424242424242', cvc: '123' })
    await c.tokens.list({ type: ['card'], metadata: { a: '1' }, page: 1, size: 10 })
    await c.tokens.list({ 'metadata.a': '1', id: 'fixed' })
    // @ts-expect-error `tpye` is no filter
    await refused(c.tokens.list({ tpye: 'card' }))
    await c.tokens.listV2({ type: 'card', container: '/pci/', size: 5 })
    // @ts-expect-error `page` is no parameter of the cursor list
    await refused(c.tokens.listV2({ page: 2 }))
    await c.tokens.search({ query: 'type:card', page: 1, size: 10 })
    await c.tokens.searchV2({ query: 'type:card', page: { size: 10 } })
    // @ts-expect-error `qeury` is misspelled
    await refused(c.tokens.search({ qeury: 'type:card' }))
    // @ts-expect-error `page` of the cursor search is an object
    await refused(c.tokens.searchV2({ query: 'type:card', page: 2 }))
    await c.tokens.tokenize({ card: { type: 'card_number', data: '4242424242424242' }, plain: 'value' })
    await c.tokens.detokenize({ number: `{{ ${token.id} }}` })

    // associations
    const child = await c.tokens.children.create(token.id, { type: 'token', data: 'child' })
    // @ts-expect-error `dta` is misspelled
    await refused(c.tokens.children.create(token.id, { type: 'token', dta: 'child' }))
    await c.tokens.children.list(token.id, { type: 'token' })
    await c.tokens.children.unlink(token.id, child.id)
    await c.tokens.children.link(token.id, child.id)

    // transactions
    const tx = await c.transactions.create()
    await c.transactions.commit(tx.id)
    const tx2 = await c.transactions.create({})
    await c.transactions.rollback(tx2.id)
    // @ts-expect-error the body must be empty
    await refused(c.transactions.create({ ttl: 60 }))

    // sessions
    const session = await vault.client('public').sessions.create(null)
    const grant: AuthorizeSessionInput = { nonce: session.nonce, permissions: ['token:read'] }
    // @ts-expect-error `permisions` is misspelled
    await refused(c.sessions.authorize({ nonce: session.nonce, permisions: ['token:read'] }))
    // @ts-expect-error no such permission
    await refused(c.sessions.authorize({ nonce: session.nonce, permissions: ['token:raed'] }))
    await c.sessions.authorize(grant)

    // applications and their keys
    const appBody: CreateApplicationInput = { name: 'web', type: 'public', permissions: ['token:create'] }
    const app = await m.applications.create(appBody)
    // @ts-expect-error `nmae` is misspelled
    await refused(m.applications.create({ nmae: 'x', type: 'private', permissions: ['token:read'] }))
    // @ts-expect-error `privat` is no application type
    await refused(m.applications.create({ name: 'x', type: 'privat', permissions: ['token:read'] }))
    // @ts-expect-error permissions are a list
    await refused(m.applications.create({ name: 'x', type: 'private', permissions: 42 }))
    const rename: UpdateApplicationInput = { name: 'web 2', permissions: ['token:create', 'token:update'] }
    await m.applications.update(app.id, rename)
    // @ts-expect-error the type can't change
    await refused(m.applications.update(app.id, { name: 'x', type: 'private', permissions: [] }))
    await m.applications.list({ id: [app.id], size: 5 })
    await m.applications.get(app.id)
    await m.applications.getByKey()
    await m.applications.regenerateKey(app.id)
    const key = await m.applicationKeys.create(app.id)
    await m.applicationKeys.list(app.id)
    await m.applicationKeys.get(app.id, key.id)
    await m.applicationKeys.delete(app.id, key.id)
    await m.applications.delete(app.id)

    // reactor formulas and reactors
    const formula = await m.reactorFormulas.create(FORMULA)
    // @ts-expect-error a tenant's formula is private
    await refused(m.reactorFormulas.create({ ...FORMULA, type: 'official' }))
    // @ts-expect-error `request_parameter` is misspelled
    await refused(m.reactorFormulas.create({ ...FORMULA, request_parameter: [] }))
    await m.reactorFormulas.update(formula.id, { ...FORMULA, name: 'echo 2' })
    const date = [{ name: 'a', type: 'date' }]
    // @ts-expect-error element types are string, boolean or number
    await refused(m.reactorFormulas.update(formula.id, { ...FORMULA, configuration: date }))
    await m.reactorFormulas.list({ name: 'echo*' })
    await m.reactorFormulas.get(formula.id)
    const reactorBody: CreateReactorInput = {
      name: 'r',
      formula: { id: formula.id },
      configuration: { region: 'eu' },
    }
    const reactor = await m.reactors.create(reactorBody)
    // @ts-expect-error `formula_di` is misspelled
    await refused(m.reactors.create({ name: 'r', formula_di: formula.id, configuration: { region: 'eu' } }))
    // @ts-expect-error settings are strings, numbers or booleans
    await refused(m.reactors.create({ name: 'r', formula_id: formula.id, configuration: { region: ['eu'] } }))
    const replace: UpdateReactorInput = { name: 'r2', configuration: { region: 'us' } }
    await m.reactors.update(reactor.id, replace)
    // @ts-expect-error `name` is required
    await refused(m.reactors.update(reactor.id, { configuration: { region: 'us' } }))
    const change: PatchReactorInput = { configuration: { region: 'de' } }
    await m.reactors.patch(reactor.id, change)
    // @ts-expect-error `nmae` is misspelled
    await refused(m.reactors.patch(reactor.id, { nmae: 'r3' }))
    await m.reactors.list({ name: 'r', id: reactor.id })
    await m.reactors.get(reactor.id)
    const user = await vault.service.admin.createApplication({
      tenantId: vault.tenant.id,
      name: 'user',
      type: 'private',
      permissions: ['token:use'],
    })
    await vault.service.connect(user.key).reactors.react(reactor.id, { args: { card: { number: '1' } } })
    // @ts-expect-error `arg` is misspelled
    await refused(vault.service.connect(user.key).reactors.react(reactor.id, { arg: {} }))
    // No egress allow-list: every callback is refused.
    const hook = { args: {}, callback_url: 'https://api.example.com/hook' }
    const reactors = vault.service.connect(user.key).reactors
    await refused(reactors.reactAsync(reactor.id, hook))
    // @ts-expect-error `timeout_ms` is a number
    await refused(reactors.reactAsync(reactor.id, { ...hook, timeout_ms: '1' }))
    // @ts-expect-error a request id is a string
    await refused(reactors.result(reactor.id, 5))
    await m.reactors.delete(reactor.id)
    await m.reactorFormulas.delete(formula.id)

    // the tenant and the permission catalogue
    await m.tenants.self()
    await m.permissions.list({ application_type: 'public' })
    // @ts-expect-error `shared` is no application type
    await refused(m.permissions.list({ application_type: 'shared' }))
    // the host-owned tenant's calls, the proxy, the audit log and webhooks: typed, each called once
    // (what each answers is pinned by its own tests; here only that it compiles and journals)
    const settled = (call: Promise<unknown>) =>
      call.then(
        () => undefined,
        () => undefined,
      )
    await settled(m.tenants.update({ name: 'renamed' }))
    await settled(m.tenants.delete())
    await settled(m.tenants.usageReport())
    await settled(m.applicationTemplates.list())
    await settled(m.applicationTemplates.get('template'))
    await settled(m.roles.list())
    const intent = await c.tokenIntents.create({ type: 'card_number', data: '4242424242424242' })
    // @ts-expect-error `dat` is misspelled
    await refused(c.tokenIntents.create({ type: 'card', dat: {} }))
    await settled(c.tokenIntents.get(intent.id))
    await settled(c.tokens.create({ token_intent_id: intent.id, metadata: { from: 'intent' } }))
    await settled(c.tokenIntents.delete(intent.id))
    const proxy = { name: 'p', destination_url: 'https://api.example.com' }
    await settled(m.proxies.create(proxy))
    await settled(m.proxies.list({}))
    await settled(m.proxies.list({ id: ['p1'], page: 1, size: 5 }))
    // @ts-expect-error `ids` is no filter of the proxy list (`id` is)
    await settled(m.proxies.list({ ids: ['p1'] }))
    await settled(m.proxies.get('p1'))
    await settled(m.proxies.update('p1', proxy))
    await settled(m.proxies.patch('p1', { name: 'q' }))
    await settled(m.proxies.delete('p1'))
    await settled(c.proxy.invoke({ method: 'POST', url: 'https://api.example.com', body: '{}' }))
    await settled(m.logs.list({ entity_type: 'token' }))
    // @ts-expect-error an entity type is a string
    await refused(m.logs.list({ entity_type: 5 }))
    await settled(m.logs.entityTypes())
    const webhook = { name: 'h', url: 'https://api.example.com/hook', events: ['token.created'] }
    await settled(m.webhooks.create(webhook))
    // @ts-expect-error `evnts` is misspelled
    await refused(m.webhooks.create({ name: 'h', url: webhook.url, evnts: [] }))
    await settled(m.webhooks.list())
    await settled(m.webhooks.get('w1'))
    await settled(m.webhooks.update('w1', webhook))
    await settled(m.webhooks.delete('w1'))
    await settled(m.webhooks.eventTypes())
    await settled(m.webhooks.ping())
    const clientKey = await m.keys.create()
    // @ts-expect-error `expires` is misspelled
    await refused(m.keys.create({ expires: '2031-01-01T00:00:00Z' }))
    await settled(m.keys.list())
    await settled(m.keys.get(clientKey.id))
    await settled(m.keys.delete(clientKey.id))
    const document = await c.documents.upload({
      document: new Uint8Array([1, 2, 3]),
      content_type: 'application/pdf',
      request: { metadata: { name: 'scan.pdf' } },
    })
    // @ts-expect-error `documnet` is misspelled
    await refused(c.documents.upload({ documnet: new Uint8Array([1]) }))
    // @ts-expect-error metadata values are strings
    await refused(c.documents.upload({ document: new Uint8Array([1]), request: { metadata: { n: 1 } } }))
    await settled(c.documents.get(document.id))
    await settled(c.documents.data(document.id))
    await settled(c.documents.delete(document.id))
    // deletes last: the token is gone
    await c.tokens.delete(token.id)

    // Every method of the client was called (each journals its operation).
    const operations = new Set(
      vault.service.journal
        .query()
        .filter((e) => e.seq > since)
        .map((e) => e.operation),
    )
    expect(operations.size).toBe(methodCount(c))
    await vault.close()
  })

  it('the admin: every method takes its typed input; misspelled fields and wrong types fail to compile', async () => {
    const vault = await createTestVault({ runner: fakeRunner() })
    const called = new Set<string>()
    const admin = recording(vault.service.admin, called)

    const tenant = await admin.createTenant({ name: 'second' })
    // @ts-expect-error `nmae` is misspelled
    await refused(admin.createTenant({ nmae: 'x' }))
    const input: AdminCreateApplicationInput = {
      tenantId: tenant.id,
      name: 'ci',
      type: 'private',
      permissions: ['token:read'],
      key: `key_${'c'.repeat(24)}`,
    }
    await admin.createApplication(input)
    const tenantId = tenant.id
    // @ts-expect-error misspelled name and type, and permissions not a list
    await refused(admin.createApplication({ tenantId, nmae: 'x', tpye: 'privat', permissions: 42 }))
    // @ts-expect-error `tenant_id` is not `tenantId` (no tenant is named)
    await refused(admin.createApplication({ tenant_id: tenantId, name: 'x', type: 'private' }), 'not_found')
    // @ts-expect-error `private` is no application type
    await refused(admin.createApplication({ tenantId, name: 'x', type: 'privat', permissions: [] }))

    const official: OfficialFormulaInput = { ...FORMULA, type: 'official' }
    const formula = await admin.createOfficialFormula(official, { status: 'coming_soon' })
    // @ts-expect-error an official formula's type is official
    await refused(admin.createOfficialFormula({ ...official, type: 'private' }))
    await admin.updateOfficialFormula(formula.id, { ...official, name: 'echo 2' }, { status: 'verified' })
    // @ts-expect-error `cod` is misspelled
    await refused(admin.updateOfficialFormula(formula.id, { ...official, cod: 'x' }))
    await admin.deleteOfficialFormula(formula.id)

    await admin.sweep()
    await admin.verifyMasterKey()
    await admin.rotateMasterKey(randomBytes(32))
    const snapshot = await admin.exportState()
    // @ts-expect-error a snapshot is what exportState answers
    await refused(admin.importState({ version: 1 }))
    await admin.importState(snapshot)
    const fixture: Fixture = {
      tenants: [
        {
          id: 't-fixture',
          name: 'Fixture',
          tokens: [{ id: 'card', type: 'card_number', data: '4242424242424242' }],
        },
      ],
    }
    // @ts-expect-error `tokns` is misspelled
    await refused(admin.loadFixture({ tenants: [{ name: 'Fixture', tokns: [] }] }))
    // @ts-expect-error a fixture token is a token create body
    await refused(admin.loadFixture({ tenants: [{ name: 'Fixture', tokens: [{ type: 'card', dta: 1 }] }] }))
    await admin.loadFixture(fixture)
    const page = await admin.view.tokens('t-fixture', { size: 1 })
    expect(page.data.map((t) => t.id)).toEqual(['card'])
    // @ts-expect-error the cursor is `start`
    await admin.view.tokens('t-fixture', { after: 'card' })
    // @ts-expect-error a page size is a number
    await refused(admin.view.tokens('t-fixture', { size: '5' }))
    // the data keys, the audit log and the webhook deliveries of a tenant
    await admin.rotateDataKey({ tenantId })
    await admin.dataKeyStatus({ tenantId })
    await admin.reencryptStep({ tenantId, batchSize: 10 })
    await admin.reencrypt({ tenantId, batchSize: 10 })
    // @ts-expect-error a batch size is a number
    await refused(admin.reencrypt({ tenantId, batchSize: 'ten' })).catch(() => undefined)
    await admin.verifyLogs({ tenantId })
    await admin.sweepLogs()
    await admin.webhooks.deliveries(tenantId)
    await admin.destroyTenantKeys({ tenantId })
    await admin.deleteTenant({ tenantId })
    await admin.clearState()
    admin.allowTestEgress(['https://api.example.com'])
    // @ts-expect-error the origins are a list
    expect(() => admin.allowTestEgress('https://api.example.com')).toThrow()

    // Every method of the admin was called.
    expect([...called].sort()).toEqual(Object.keys(vault.service.admin).sort())
    await vault.close()
  })
})

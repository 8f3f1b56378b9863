/**
 * The real client: `@basis-theory/basis-theory-js@1.79.3`, unmodified, against the handler served
 * by `toNodeListener` on a real socket with `headerPrefix: 'BT'`.
 */
import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import { BasisTheory } from '@basis-theory/basis-theory-js'
import type { BasisTheory as Sdk } from '@basis-theory/basis-theory-js/types/sdk/index.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHttpHandler, toNodeListener } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, type Service } from '../../entry/index.js'
import { fakeRunner } from './fake-runner.js'
import { ALL_MANAGEMENT } from './setup.js'

interface Vault {
  service: Service
  server: Server
  port: number
  management: string
  sdk(key: string): Promise<Sdk>
}

/** A vault on a real socket, and SDK clients for it. */
async function startVault(headerPrefix: 'BT' | 'SVC', rename: boolean): Promise<Vault> {
  const service = createService({ store: memoryStore(), clock: manualClock(), runner: fakeRunner() })
  const tenant = await service.admin.createTenant({ name: 'sdk' })
  const { key: management } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'management',
    type: 'management',
    permissions: ALL_MANAGEMENT,
  })
  const server = createServer(toNodeListener(createHttpHandler(service, { headerPrefix, log: () => {} })))
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  const port = address.port
  // The SDK checks the host: only `localhost` keeps plain http.
  const options = { apiBaseUrl: `http://localhost:${port}`, disableTelemetry: true }
  return {
    service,
    server,
    port,
    management,
    async sdk(key) {
      const bt = await new BasisTheory().init(key, options)
      if (rename) renameHeaders(bt)
      return bt
    },
  }
}

/** The shape of an axios header bag, as far as the interceptor below needs it. */
interface Headers {
  get(name: string): unknown
  set(name: string, value: unknown): unknown
  delete(name: string): unknown
}
type WithClient = {
  client: { interceptors: { request: { use(fn: (config: { headers: Headers }) => unknown): void } } }
}

/** Makes an SDK send `SVC-` headers instead of `BT-` ones, with an axios request interceptor per service. */
function renameHeaders(bt: Sdk) {
  const services = [bt.tokens, bt.applications, bt.reactorFormulas, bt.reactors, bt.sessions, bt.transactions]
  for (const service of services as unknown as WithClient[]) {
    service.client.interceptors.request.use((config) => {
      for (const name of ['API-KEY', 'TRANSACTION-ID']) {
        const value = config.headers.get(`BT-${name}`)
        if (value !== undefined && value !== null) {
          config.headers.delete(`BT-${name}`)
          config.headers.set(`SVC-${name}`, value)
        }
      }
      return config
    })
  }
}

/** The SDK's error for a failed call: a `BasisTheoryApiError` with `status` and the problem as `data`. */
async function apiError(promise: Promise<unknown>) {
  try {
    await promise
  } catch (error) {
    const e = error as { name: string; status: number; data: Record<string, unknown> }
    expect(e.name).toBe('BasisTheoryApiError')
    return e
  }
  throw new Error('expected the call to fail')
}

const REVEAL = [
  {
    description: 'everything',
    priority: 1,
    container: '/',
    transform: 'reveal' as const,
    permissions: ['token:create', 'token:read', 'token:update', 'token:delete', 'token:use'],
  },
]

async function privateApp(bt: Sdk, name = 'backend') {
  return bt.applications.create({
    name,
    type: 'private',
    permissions: ['token:create', 'token:read', 'token:update', 'token:delete', 'token:use'],
    rules: REVEAL,
  } as never)
}

describe('basis-theory-js 1.79.3 against the handler (headerPrefix BT)', () => {
  let vault: Vault
  let admin: Sdk
  let bt: Sdk
  beforeAll(async () => {
    vault = await startVault('BT', false)
    admin = await vault.sdk(vault.management)
    bt = await vault.sdk((await privateApp(admin)).key!)
  })
  afterAll(async () => {
    vault.server.closeAllConnections()
    vault.server.close()
    await vault.service.close()
  })

  it('manages applications: create, list, retrieve, update, delete', async () => {
    const app = await admin.applications.create({
      name: 'web',
      type: 'public',
      permissions: ['token:create'],
    })
    expect(app).toMatchObject({ name: 'web', type: 'public', permissions: ['token:create'] })
    expect(app.key).toMatch(/^key_/)
    expect(app.tenantId).toBeTypeOf('string')
    expect(app.createdAt).toBeTypeOf('string')

    const page = await admin.applications.list({ page: 1, size: 50 })
    expect(page.pagination).toMatchObject({ pageNumber: 1, pageSize: 50 })
    expect(page.data.map((a) => a.id)).toContain(app.id)

    expect((await admin.applications.retrieve(app.id)).name).toBe('web')
    const updated = await admin.applications.update(app.id, {
      name: 'web app',
      permissions: ['token:create', 'token:update'],
    } as never)
    expect(updated).toMatchObject({ name: 'web app', permissions: ['token:create', 'token:update'] })
    expect(updated.modifiedAt).toBeTypeOf('string')
    await admin.applications.delete(app.id)
    expect((await apiError(admin.applications.retrieve(app.id))).status).toBe(404)
  })

  it('creates, retrieves, updates (merge patch) and deletes tokens', async () => {
    const token = await bt.tokens.create({
      id: 'sdk-token-1',
      type: 'token',
      data: { number: '4242424242424242', expMonth: 12 },
      metadata: { customerId: 'c1' },
      containers: ['/pci/high/'],
      expiresAt: '2031-01-01T00:00:00Z',
    } as never)
    expect(token).toMatchObject({ id: 'sdk-token-1', type: 'token', metadata: { customerId: 'c1' } })
    expect(token.expiresAt).toBe('2031-01-01T00:00:00.000Z')
    const read = await bt.tokens.retrieve('sdk-token-1')
    // `data` and `metadata` keep their keys as sent: the SDK does not case-convert them.
    expect(read.data).toEqual({ number: '4242424242424242', expMonth: 12 })
    const updated = await bt.tokens.update('sdk-token-1', {
      data: { expMonth: 1 },
      metadata: { note: 'x' },
    } as never)
    expect(updated.data).toBeUndefined()
    expect((await bt.tokens.retrieve('sdk-token-1')).data).toEqual({
      number: '4242424242424242',
      expMonth: 1,
    })
    expect(updated.metadata).toEqual({ customerId: 'c1', note: 'x' })
    await bt.tokens.delete('sdk-token-1')
    expect((await apiError(bt.tokens.retrieve('sdk-token-1'))).status).toBe(404)
  })

  it('searches tokens (docs/api/tokens/search): query, page and size; data only through searchIndexes', async () => {
    const rules = [{ ...REVEAL[0]!, permissions: [...REVEAL[0]!.permissions, 'token:search'] }]
    const app = await admin.applications.create({
      name: 'searcher',
      type: 'private',
      permissions: ['token:create', 'token:read', 'token:search'],
      rules,
    } as never)
    const searcher = await vault.sdk(app.key!)
    for (const n of ['1111', '2222', '3333']) {
      await searcher.tokens.create({
        id: `legacy-search-${n}`,
        type: 'token',
        data: { ssn: `123-45-${n}` },
        metadata: { legacySearch: 'yes' },
        searchIndexes: ['{{ data.ssn }}', '{{ data.ssn | last4 }}'],
      } as never)
    }
    const found = await searcher.tokens.search({ query: 'data:2222' })
    expect(found.data.map((t) => t.id)).toEqual(['legacy-search-2222'])
    expect((found.data[0] as { searchIndexes?: string[] }).searchIndexes).toEqual([
      '{{ data.ssn }}',
      '{{ data.ssn | last4 }}',
    ])
    const paged = await searcher.tokens.search({ query: 'metadata.legacySearch:YES', page: 2, size: 2 })
    expect(paged.pagination).toMatchObject({ totalItems: 3, pageNumber: 2, pageSize: 2, totalPages: 2 })
    expect(paged.data.map((t) => t.id)).toEqual(['legacy-search-3333'])
    expect((await apiError(searcher.tokens.search({ query: 'data:' }))).status).toBe(400)
    expect((await apiError(bt.tokens.search({ query: '' }))).status).toBe(403)
  })

  it('links, unlinks, creates children and lists them with filters and paging', async () => {
    const parent = await bt.tokens.create({ type: 'customer', data: { name: 'Ada' } } as never)
    const bank = await bt.tokens.create({ type: 'account', data: { account: '1' } } as never)
    await bt.tokens.createAssociation(parent.id, bank.id)
    const cards = []
    for (const n of ['1', '2', '3']) {
      const card = await bt.tokens.createChild(parent.id, { type: 'payment', data: { number: n } } as never)
      expect(card).not.toHaveProperty('data')
      cards.push(card)
    }
    const all = await bt.tokens.listChildren(parent.id)
    expect(all.pagination).toEqual({ totalItems: 4, pageNumber: 1, pageSize: 20, totalPages: 1 })
    expect(all.data.map((t) => t.id)).toEqual([bank.id, ...cards.map((c) => c.id)])
    expect(all.data[0]!.data).toEqual({ account: '1' })

    const onlyCards = await bt.tokens.listChildren(parent.id, { type: 'payment' as never })
    expect(onlyCards.data.map((t) => t.type)).toEqual(['payment', 'payment', 'payment'])
    const both = await bt.tokens.listChildren(parent.id, {
      type: ['account', 'payment'] as never,
      size: 2,
      page: 2,
    })
    expect(both.pagination).toEqual({ totalItems: 4, pageNumber: 2, pageSize: 2, totalPages: 2 })
    expect(both.data.map((t) => t.id)).toEqual([cards[1]!.id, cards[2]!.id])
    const byId = await bt.tokens.listChildren(parent.id, { id: [cards[2]!.id, bank.id] })
    expect(byId.data.map((t) => t.id)).toEqual([bank.id, cards[2]!.id])

    await bt.tokens.deleteAssociation(parent.id, bank.id)
    expect((await bt.tokens.listChildren(parent.id)).pagination.totalItems).toBe(3)
  })

  it('lists children by metadata as the SDK sends it, metadata.<key>=<value> (basistheory-go api/openapi.yaml, deepObject)', async () => {
    const parent = await bt.tokens.create({ type: 'customer', data: 'p' } as never)
    const ids: string[] = []
    for (const [kind, region] of [
      ['gold', 'eu'],
      ['gold', 'us'],
      ['Gold', 'EU'],
      ['silver', 'eu'],
    ] as const) {
      const child = await bt.tokens.createChild(parent.id, {
        type: 'token',
        data: kind,
        metadata: { kind, region },
      } as never)
      ids.push(child.id)
    }
    const gold = await bt.tokens.listChildren(parent.id, { metadata: { kind: 'gold' } } as never)
    expect(gold.data.map((t) => t.id)).toEqual(ids.slice(0, 3))
    const goldEu = await bt.tokens.listChildren(parent.id, {
      metadata: { kind: 'gold', region: 'eu' },
    } as never)
    expect(goldEu.data.map((t) => t.id)).toEqual([ids[0], ids[2]])
    expect(goldEu.pagination.totalItems).toBe(2)
    const none = await bt.tokens.listChildren(parent.id, { metadata: { kind: 'bronze' } } as never)
    expect(none.data).toEqual([])
  })

  it('creates transactions, enlists with transactionId, commits and rolls back', async () => {
    const tx = await bt.transactions.create()
    expect(tx).toMatchObject({
      id: expect.any(String),
      createdAt: expect.any(String),
      expiresAt: expect.any(String),
    })
    await bt.tokens.create({ id: 'tx-kept', type: 'x', data: 1 } as never, { transactionId: tx.id })
    expect((await apiError(bt.tokens.retrieve('tx-kept'))).status).toBe(404)
    expect((await bt.tokens.retrieve('tx-kept', { transactionId: tx.id })).data).toBe(1)
    await bt.transactions.commit(tx.id)
    expect((await bt.tokens.retrieve('tx-kept')).data).toBe(1)

    const other = await bt.transactions.create()
    await bt.tokens.create({ id: 'tx-dropped', type: 'x', data: 2 } as never, { transactionId: other.id })
    await bt.transactions.rollback(other.id)
    expect((await apiError(bt.tokens.retrieve('tx-dropped'))).status).toBe(404)
    expect((await apiError(bt.transactions.commit(other.id))).status).toBe(409)
  })

  it('manages reactor formulas: create, list with name, retrieve, update, delete', async () => {
    const body = {
      name: 'SDK Payouts',
      description: 'pays out',
      type: 'private' as const,
      code: 'module.exports = async (req) => ({ raw: req.args })',
      configuration: [{ name: 'region', type: 'string' as const, description: 'where' }],
      requestParameters: [{ name: 'card.number', type: 'string' as const, optional: false }],
    }
    const formula = await admin.reactorFormulas.create(body)
    expect(formula).toMatchObject({ name: 'SDK Payouts', type: 'private' })
    expect(formula.requestParameters).toEqual([{ name: 'card.number', type: 'string', optional: false }])
    await admin.reactorFormulas.create({ ...body, name: 'Other' })

    const found = await admin.reactorFormulas.list({ name: 'payouts', page: 1, size: 10 })
    expect(found.data.map((f) => f.name)).toEqual(['SDK Payouts'])
    expect(found.pagination).toMatchObject({ totalItems: 1, pageSize: 10 })
    expect((await admin.reactorFormulas.retrieve(formula.id)).code).toBe(body.code)
    const updated = await admin.reactorFormulas.update(formula.id, { ...body, name: 'SDK Payouts v2' })
    expect(updated.name).toBe('SDK Payouts v2')
    expect(updated.modifiedAt).toBeTypeOf('string')
    await admin.reactorFormulas.delete(formula.id)
    expect((await apiError(admin.reactorFormulas.retrieve(formula.id))).status).toBe(404)
  })

  it('creates reactors and reacts', async () => {
    const formula = await admin.reactorFormulas.create({
      name: 'Echo',
      type: 'private',
      code: 'module.exports = async (req) => ({ raw: req })',
      configuration: [{ name: 'apiKey', type: 'string' }],
      requestParameters: [{ name: 'amount', type: 'number' }],
    })
    // The SDK sends `formula: { id }`; the vault takes it as well as `formula_id`.
    const reactor = await admin.reactors.create({
      name: 'echo',
      formula: { id: formula.id },
      configuration: { apiKey: 'sk_test' },
    } as never)
    expect(reactor).toMatchObject({ name: 'echo', configuration: { apiKey: 'sk_test' } })
    expect((reactor as unknown as { formulaId: string }).formulaId).toBe(formula.id)
    expect((await admin.reactors.list()).data.map((r) => r.id)).toContain(reactor.id)
    expect((await admin.reactors.retrieve(reactor.id)).name).toBe('echo')

    const result = (await bt.reactors.react(reactor.id, {
      args: { amount: '10', tokenize: { card: { type: 'card', data: { number: '4111111111111111' } } } },
    })) as { raw: unknown; tokens: { card: { id: string; tenant_id: string } } }
    expect(result.raw).toEqual({ args: { amount: 10 }, configuration: { apiKey: 'sk_test' } })
    // The react answer is passed through raw: snake_case as the vault sent it.
    expect(result.tokens.card.tenant_id).toBeTypeOf('string')
    expect((await bt.tokens.retrieve(result.tokens.card.id)).data).toEqual({ number: '4111111111111111' })

    expect((await apiError(bt.reactors.react(reactor.id, { args: {} }))).status).toBe(400)
    await admin.reactors.delete(reactor.id)
    expect((await apiError(admin.reactors.retrieve(reactor.id))).status).toBe(404)
  })

  it('creates sessions with a public key and authorizes them with a private key', async () => {
    const web = await admin.applications.create({
      name: 'browser',
      type: 'public',
      permissions: ['token:create'],
    })
    const browser = await vault.sdk(web.key!)
    const token = await bt.tokens.create({ type: 'secret', data: 'shh' } as never)
    const session = await browser.sessions.create()
    expect(session).toMatchObject({ sessionKey: expect.stringMatching(/^key_/), nonce: expect.any(String) })
    const asSession = await vault.sdk(session.sessionKey)
    expect((await apiError(asSession.tokens.retrieve(token.id))).status).toBe(403)
    await bt.sessions.authorize({
      nonce: session.nonce,
      rules: [
        {
          description: 'read',
          priority: 1,
          container: '/',
          transform: 'reveal',
          permissions: ['token:read'],
        },
      ],
    } as never)
    expect((await asSession.tokens.retrieve(token.id)).data).toBe('shh')
    expect(
      (await apiError(bt.sessions.authorize({ nonce: session.nonce, permissions: ['token:read'] }))).status,
    ).toBe(409)
  })

  it('gets BasisTheoryApiError with the status and the problem for 400, 401, 403, 404 and 409', async () => {
    const invalid = await apiError(bt.tokens.create({ type: 'card' } as never))
    expect(invalid.status).toBe(400)
    expect(invalid.data).toMatchObject({
      status: 400,
      title: 'Bad Request',
      errors: { data: expect.any(Array) },
    })

    const stranger = await vault.sdk('key_not_a_real_key')
    const unauthenticated = await apiError(stranger.tokens.retrieve('x'))
    expect(unauthenticated.status).toBe(401)
    expect(unauthenticated.data).toMatchObject({ status: 401, title: 'Unauthorized' })

    const forbidden = await apiError(bt.applications.list())
    expect(forbidden.status).toBe(403)
    expect(forbidden.data).toMatchObject({ status: 403, detail: expect.any(String) })

    expect((await apiError(bt.tokens.retrieve('missing'))).data).toMatchObject({
      status: 404,
      title: 'Not Found',
    })

    const a = await bt.tokens.create({ type: 'x', data: 1 } as never)
    const b = await bt.tokens.create({ type: 'x', data: 2 } as never)
    await bt.tokens.createAssociation(a.id, b.id)
    const conflict = await apiError(bt.tokens.createAssociation(a.id, b.id))
    expect(conflict.status).toBe(409)
    expect(conflict.data).toMatchObject({ status: 409, title: 'Conflict' })
  })
})

describe('basis-theory-js 1.79.3 with the default SVC prefix (headers renamed by an axios interceptor)', () => {
  let vault: Vault
  beforeAll(async () => {
    vault = await startVault('SVC', true)
  })
  afterAll(async () => {
    vault.server.closeAllConnections()
    vault.server.close()
    await vault.service.close()
  })

  it('works end to end: applications, tokens, children, transactions, errors', async () => {
    const admin = await vault.sdk(vault.management)
    const bt = await vault.sdk((await privateApp(admin)).key!)
    const parent = await bt.tokens.create({ type: 'p', data: 'p' } as never)
    const child = await bt.tokens.createChild(parent.id, { type: 'payment', data: 'c' } as never)
    expect(
      (await bt.tokens.listChildren(parent.id, { type: ['payment'] as never })).data.map((t) => t.id),
    ).toEqual([child.id])

    const tx = await bt.transactions.create()
    await bt.tokens.create({ id: 'svc-tx', type: 'x', data: 1 } as never, { transactionId: tx.id })
    expect((await apiError(bt.tokens.retrieve('svc-tx'))).status).toBe(404)
    await bt.transactions.commit(tx.id)
    expect((await bt.tokens.retrieve('svc-tx')).data).toBe(1)

    expect((await apiError(bt.applications.list())).status).toBe(403)
    // Without the interceptor the BT- header means nothing to an SVC vault.
    const plain = await new BasisTheory().init(vault.management, {
      apiBaseUrl: `http://localhost:${vault.port}`,
    })
    expect((await apiError(plain.applications.list())).status).toBe(401)
  })
})

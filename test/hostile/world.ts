import { randomBytes } from 'node:crypto'
import { createHttpHandler } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { PERMISSIONS_BY_TYPE } from '../../src/applications/permissions.js'
import type { AccessRule, Permission } from '../../src/kernel/types.js'
import type { Store } from '../../src/store/contract.js'

/** Cases per property: 100× more with TOKENVAULT_LONG=1. */
export const RUNS = (short: number) => (process.env.TOKENVAULT_LONG === '1' ? short * 100 : short)
/** The fast-check seed: fixed (`assertProperty` replaces it with TOKENVAULT_TEST_SEED's, to replay a failure). */
export const SEED = 20301121

const ALL_TOKEN: Permission[] = [...PERMISSIONS_BY_TYPE.private]
const ALL_MANAGEMENT: Permission[] = [...PERMISSIONS_BY_TYPE.management]
const REVEAL: AccessRule[] = [
  {
    description: 'all',
    priority: 1,
    container: '/',
    transform: 'reveal',
    // A rule grants token permissions only (not `token-intent:*`, which the application holds).
    permissions: ALL_TOKEN.filter((p) => p.startsWith('token:')),
  },
]

export const FORMULA_CODE = 'module.exports = async function (req) { return { raw: req.args } }'

/** One tenant populated with a record of every kind, keys of every type, and an HTTP handler over it. */
export async function populatedTenant(service: ReturnType<typeof createService>, name: string) {
  const tenant = await service.admin.createTenant({ name })
  const mk = async (
    type: 'private' | 'public' | 'management',
    permissions: Permission[],
    rules?: AccessRule[],
  ) =>
    await service.admin.createApplication({
      tenantId: tenant.id,
      name: `${name} ${type}`,
      type,
      permissions,
      ...(rules ? { rules } : {}),
    })
  const priv = await mk('private', ALL_TOKEN, REVEAL)
  const pub = await mk('public', ['token:create', 'token:update'])
  const mgmt = await mk('management', ALL_MANAGEMENT)
  const client = service.connect(priv.key)
  const admin = service.connect(mgmt.key)
  const token = await client.tokens.create({ type: 'token', data: { n: `${name}-secret` }, mask: 'm' })
  const child = await client.tokens.children.create(token.id, { type: 'cvc', data: `${name}-child` })
  const formula = await admin.reactorFormulas.create({
    name: `${name} formula`,
    type: 'private',
    code: FORMULA_CODE,
    configuration: [{ name: 'k', type: 'string' }],
    request_parameters: [{ name: 'x', type: 'number', optional: true }],
  })
  const reactor = await admin.reactors.create({
    name: `${name} reactor`,
    formula_id: formula.id,
    configuration: { k: 'v' },
  })
  const intent = await client.tokenIntents.create({ type: 'card_number', data: '4242424242424242' })
  const document = await client.documents.upload({ document: new TextEncoder().encode(`${name} document`) })
  const clientKey = await admin.keys.create()
  const transaction = await client.transactions.create()
  const session = await service.connect(pub.key).sessions.create()
  return {
    tenant,
    keys: { private: priv.key, public: pub.key, management: mgmt.key },
    ids: {
      token: token.id,
      child: child.id,
      formula: formula.id,
      reactor: reactor.id,
      transaction: transaction.id,
      intent: intent.id,
      document: document.id,
      application: priv.application.id,
      clientKey: clientKey.id,
      nonce: session.nonce,
    },
    sessionKey: session.session_key,
  }
}

/** A service (on the memory store unless given another) with two populated tenants and a handler. */
export async function hostileWorld(store: Store = memoryStore()) {
  const clock = manualClock('2030-01-01T00:00:00.000Z')
  const service = createService({ store, clock, masterKey: randomBytes(32) })
  const a = await populatedTenant(service, 'alpha')
  const b = await populatedTenant(service, 'beta')
  const logs: unknown[] = []
  const handler = createHttpHandler(service, { log: (e) => logs.push(e) })
  return { store, clock, service, handler, a, b, logs }
}

/** Whether a response is a valid RFC 7807 problem document for its status. */
export async function problemIsValid(response: Response): Promise<string | null> {
  if (!(response.headers.get('content-type') ?? '').startsWith('application/problem+json')) {
    return `content-type ${response.headers.get('content-type')}`
  }
  const body = (await response.json()) as Record<string, unknown>
  if (body.status !== response.status) return `status ${String(body.status)} in a ${response.status}`
  if (typeof body.type !== 'string' || typeof body.title !== 'string' || typeof body.detail !== 'string') {
    return `fields ${JSON.stringify(body)}`
  }
  if (body.errors !== undefined && (typeof body.errors !== 'object' || body.errors === null))
    return 'errors not an object'
  return null
}

import { describe, expect, it } from 'vitest'
import { ROUTES } from '../../adapters/http/routes.js'
import { FORMULA_CODE, hostileWorld } from './world.js'

type World = Awaited<ReturnType<typeof hostileWorld>>
const UNKNOWN = '5f0c7a52-0000-4000-8000-00000000beef'

/** Which key of a tenant a route is called with, and which id kinds its path parameters take. */
function keyKind(pattern: string): 'private' | 'management' {
  // Reacts (synchronous, asynchronous, and their results) are token uses: the private key's.
  if (/\/react(-async)?$|\/results\//.test(pattern)) return 'private'
  return pattern.startsWith('/reactor') || pattern.startsWith('/applications') || pattern.startsWith('/keys')
    ? 'management'
    : 'private'
}
const ID_KINDS: Record<string, string[]> = {
  '/tokens': ['token', 'child'],
  '/transactions': ['transaction'],
  '/reactor-formulas': ['formula'],
  '/reactors': ['reactor'],
  '/applications': ['application'],
  '/keys': ['clientKey'],
  '/token-intents': ['intent'],
  '/documents': ['document'],
}

function bodyFor(method: string, pattern: string, ids: { formula: string; nonce: string }): unknown {
  const formula = {
    name: 'f',
    type: 'private',
    code: FORMULA_CODE,
    configuration: [],
    request_parameters: [],
  }
  const bodies: Record<string, unknown> = {
    'PATCH /tokens/:id': { data: 'changed' },
    'POST /tokenize': { first_name: 'v', card: { type: 'token', data: 1 } },
    'POST /detokenize': { plain: 'no expression' },
    'POST /tokens/:id/children': { type: 'x', data: 1 },
    'PUT /reactor-formulas/:id': formula,
    'POST /reactors': { name: 'r', formula_id: ids.formula, configuration: { k: 'v' } },
    'PUT /reactors/:id': { name: 'r', configuration: { k: 'v' } },
    'POST /reactors/:id/react': { args: {} },
    'POST /reactors/:id/react-async': { args: {} },
    'POST /sessions/authorize': { nonce: ids.nonce, permissions: ['token:read'] },
    'PUT /applications/:id': { name: 'x', permissions: [] },
  }
  return bodies[`${method} ${pattern}`]
}

async function send(
  w: World,
  method: string,
  path: string,
  key: string,
  body?: unknown,
  transactionId?: string,
) {
  const headers: Record<string, string> = {
    'svc-api-key': key,
    'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
  }
  if (transactionId) headers['svc-transaction-id'] = transactionId
  const response = await w.handler(
    new Request(`http://vault.test${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }),
  )
  return { status: response.status, body: await response.text() }
}

const tenantRecords = async (w: World, tenantId: string) => {
  const dump = await w.store.dump()
  return JSON.stringify(
    Object.fromEntries(
      Object.entries(dump).map(([kind, records]) => [
        kind,
        (records as { tenant_id?: string | null }[]).filter((r) => r.tenant_id === tenantId),
      ]),
    ),
  )
}

describe('tenant isolation matrix', () => {
  it("tenant B using tenant A's ids gets exactly what an unknown id gets, on every route, and A is unchanged", async () => {
    const w = await hostileWorld()
    const before = await tenantRecords(w, w.a.tenant.id)
    let compared = 0
    for (const [method, pattern] of ROUTES) {
      const root = `/${pattern.split('/')[1]}`
      const kinds = ID_KINDS[root] ?? []
      const key = w.b.keys[keyKind(pattern)]
      const params = pattern.match(/:[a-z]+/g) ?? []
      const fill = (first: string, second: string) => {
        let i = 0
        return pattern.replace(/:[a-z]+/g, () => encodeURIComponent(i++ === 0 ? first : second))
      }
      if (params.length) {
        for (const kind of kinds) {
          const aId = w.a.ids[kind as keyof typeof w.a.ids]
          const other = kind === 'token' ? w.a.ids.child : w.a.ids.token
          const body = bodyFor(method, pattern, { formula: UNKNOWN, nonce: 'x' })
          const foreign = await send(w, method, fill(aId, other), key, body)
          const unknown = await send(w, method, fill(UNKNOWN, `${UNKNOWN}-2`), key, body)
          expect(foreign, `${method} ${pattern} with A's ${kind}`).toEqual(unknown)
          expect([400, 404], `${method} ${pattern}: ${foreign.body}`).toContain(foreign.status)
          compared++
        }
      }
    }
    // Ids carried in bodies and headers: a formula id, a nonce, a transaction id.
    const viaBody = [
      [
        'POST',
        '/reactors',
        'management',
        { formula: w.a.ids.formula, nonce: 'x' },
        { formula: UNKNOWN, nonce: 'x' },
      ],
      [
        'POST',
        '/sessions/authorize',
        'private',
        { formula: UNKNOWN, nonce: w.a.ids.nonce },
        { formula: UNKNOWN, nonce: 'unknown-nonce' },
      ],
    ] as const
    for (const [method, path, kind, foreignIds, unknownIds] of viaBody) {
      const foreign = await send(w, method, path, w.b.keys[kind], bodyFor(method, path, foreignIds))
      const unknown = await send(w, method, path, w.b.keys[kind], bodyFor(method, path, unknownIds))
      expect(foreign, `${method} ${path}`).toEqual(unknown)
      expect(foreign.status).toBe(404)
      compared++
    }
    const tokenBody = { type: 'x', data: 1 }
    const foreignTx = await send(w, 'POST', '/tokens', w.b.keys.private, tokenBody, w.a.ids.transaction)
    const unknownTx = await send(w, 'POST', '/tokens', w.b.keys.private, tokenBody, UNKNOWN)
    expect(foreignTx).toEqual(unknownTx)
    expect(foreignTx.status).toBe(404)
    // B's lists never show A's records.
    for (const path of ['/reactor-formulas', '/reactors', '/applications']) {
      const list = await send(w, 'GET', path, w.b.keys.management)
      expect(list.status).toBe(200)
      for (const id of Object.values(w.a.ids)) expect(list.body).not.toContain(id)
    }
    expect(compared).toBeGreaterThan(20)
    expect(await tenantRecords(w, w.a.tenant.id)).toBe(before)
  })

  it('public keys and session keys are refused on every route their grants do not cover', async () => {
    const w = await hostileWorld()
    const { a } = w
    // A session authorized for token:read only.
    const reader = await w.service.connect(a.keys.public).sessions.create()
    await w.service
      .connect(a.keys.private)
      .sessions.authorize({ nonce: reader.nonce, permissions: ['token:read'] })
    const allowed: Record<string, Set<string>> = {
      public: new Set([
        'POST /tokens',
        'POST /tokenize',
        'PATCH /tokens/:id',
        'POST /sessions',
        'POST /transactions',
        'GET /permissions',
        'GET /ping',
      ]),
      // The permission catalogue and the ping are open to every key (the reference requires no permission).
      pending: new Set(['GET /permissions', 'GET /ping']),
      reader: new Set([
        'GET /permissions',
        'GET /ping',
        'POST /detokenize',
        'GET /tokens',
        'GET /v2/tokens',
        'GET /tokens/:id',
        'GET /tokens/:id/children',
        'POST /tokens/:id/children/:child',
        'POST /transactions',
      ]),
    }
    const keys = { public: a.keys.public, pending: a.sessionKey, reader: reader.session_key }
    const before = await tenantRecords(w, a.tenant.id)
    for (const [who, key] of Object.entries(keys)) {
      for (const [method, pattern] of ROUTES) {
        if (allowed[who]!.has(`${method} ${pattern}`)) continue
        if (pattern.includes('/commit') || pattern.includes('/rollback')) continue // 403/404 by owner, tested elsewhere
        const ids = [a.ids.token, a.ids.child]
        const idOf = (root: string) =>
          ({
            '/transactions': a.ids.transaction,
            '/reactor-formulas': a.ids.formula,
            '/reactors': a.ids.reactor,
            '/applications': a.ids.application,
          })[root]
        let i = 0
        const path = pattern.replace(/:[a-z]+/g, () => idOf(`/${pattern.split('/')[1]}`) ?? ids[i++]!)
        const body =
          bodyFor(method, pattern, { formula: a.ids.formula, nonce: 'n' }) ??
          (method === 'POST' && pattern === '/tokens'
            ? { type: 'x', data: 1 }
            : method === 'POST'
              ? {}
              : undefined)
        const response = await send(w, method, path, key, body)
        expect(response.status, `${who}: ${method} ${pattern} → ${response.body}`).toBe(403)
      }
    }
    expect(await tenantRecords(w, a.tenant.id)).toBe(before)
  })
})

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ROUTES } from '../../adapters/http/routes.js'
import { postgresStore } from '../../adapters/postgres/index.js'
import { assertProperty } from '../../testing/store/seed.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from '../postgres/database.js'
import { FORMULA_CODE, hostileWorld, problemIsValid, RUNS, SEED } from './world.js'

const deep = (n: number): unknown => (n === 0 ? 'bottom' : { d: deep(n - 1) })

/** Values that break assumptions: wrong types, huge, deep, unicode, prototype keys, numbers as strings. */
const nasty: fc.Arbitrary<unknown> = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constantFrom(
    'x'.repeat(70_000),
    '\u0000',
    '\ud800',
    '🦄'.repeat(100),
    '../../etc',
    '%2F',
    '/general/high/',
  ),
  fc.constantFrom('__proto__', 'constructor', 'prototype', '123', '-1', '1e309', 'true', 'null', ''),
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -1, 2 ** 53, Number.MAX_VALUE, 1.5),
  fc.boolean(),
  fc.constant(null),
  fc.jsonValue({ maxDepth: 3 }),
  fc.constant(deep(200)),
  fc.constant(JSON.parse('{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}')),
  fc.array(fc.string(), { maxLength: 30 }),
)

/** A valid body for each body-taking route, to mutate. */
function samples(ids: Record<string, string>): Record<string, Record<string, unknown>> {
  const formula = {
    name: 'f',
    type: 'private',
    code: FORMULA_CODE,
    configuration: [{ name: 'k', type: 'string' }],
    request_parameters: [{ name: 'x', type: 'number' }],
  }
  const rule = {
    description: 'r',
    priority: 1,
    container: '/general/',
    transform: 'mask',
    permissions: ['token:read'],
  }
  return {
    'POST /tokens': {
      type: 'token',
      data: { n: 1 },
      containers: ['/general/high/'],
      metadata: { a: 'b' },
      mask: 'm',
    },
    'PATCH /tokens/:id': { data: { n: 2 }, metadata: { a: null }, expires_at: '2031-01-01T00:00:00Z' },
    'POST /tokens/:id/children': { type: 'note', data: 1 },
    'POST /reactor-formulas': formula,
    'PUT /reactor-formulas/:id': formula,
    'POST /reactors': { name: 'r', formula_id: ids.formula!, configuration: { k: 'v' } },
    'PUT /reactors/:id': { name: 'r2', configuration: { k: 'w' } },
    'PATCH /reactors/:id': { name: 'r3', configuration: { k: null } },
    'POST /reactors/:id/react': { args: { x: '5', extra: true } },
    'POST /sessions/authorize': { nonce: ids.nonce!, permissions: ['token:read'], rules: [rule] },
    'POST /applications': { name: 'app', type: 'private', permissions: ['token:read'], rules: [rule] },
    'PUT /applications/:id': { name: 'app2', permissions: ['token:read'] },
  }
}

type Mutation =
  | { kind: 'set'; key: string; value: unknown }
  | { kind: 'delete'; key: string }
  | { kind: 'replace'; value: unknown }

const mutation = (keys: string[]): fc.Arbitrary<Mutation> =>
  fc.oneof(
    fc.record({
      kind: fc.constant('set' as const),
      key: fc.oneof(
        fc.constantFrom(...keys, '__proto__', 'constructor', 'id', 'tenant_id', 'status'),
        fc.string(),
      ),
      value: nasty,
    }),
    fc.record({ kind: fc.constant('delete' as const), key: fc.constantFrom(...keys) }),
    fc.record({ kind: fc.constant('replace' as const), value: nasty }),
  )

function mutate(body: Record<string, unknown>, mutations: Mutation[]): unknown {
  let out: unknown = structuredClone(body)
  for (const m of mutations) {
    if (m.kind === 'replace') out = m.value
    else if (out !== null && typeof out === 'object' && !Array.isArray(out)) {
      const o = out as Record<string, unknown>
      if (m.kind === 'delete') delete o[m.key]
      else
        Object.defineProperty(o, m.key, {
          value: m.value,
          enumerable: true,
          writable: true,
          configurable: true,
        })
    }
  }
  return out
}

/** Mutated bodies on every route against a world; `runs` cases. */
async function mutatedBodies(w: Awaited<ReturnType<typeof hostileWorld>>, runs: number) {
  const pool = [...Object.values(w.a.ids), ...Object.values(w.b.ids)]
  const keys = [...Object.values(w.a.keys), w.a.sessionKey, w.b.keys.private]
  const bodies = samples(w.a.ids)
  const seen = new Set<number>()
  const request = fc.record({
    route: fc.constantFrom(...ROUTES),
    params: fc.array(
      fc.oneof(
        { arbitrary: fc.constantFrom(...pool), weight: 6 },
        { arbitrary: fc.string({ maxLength: 20 }), weight: 1 },
        { arbitrary: fc.constantFrom('..', '%00', '%2e%2e', 'é', ''), weight: 1 },
      ),
      { minLength: 2, maxLength: 2 },
    ),
    key: fc.option(fc.constantFrom(...keys), { freq: 8 }),
    mutations: fc.array(
      mutation(['type', 'data', 'name', 'code', 'configuration', 'args', 'nonce', 'permissions', 'rules']),
      {
        maxLength: 3,
      },
    ),
    contentType: fc.constantFrom(
      'application/json',
      'application/merge-patch+json',
      'text/plain',
      undefined,
      'application/x-www-form-urlencoded',
    ),
    raw: fc.option(
      fc.oneof(
        fc.string({ maxLength: 50 }),
        fc.constantFrom(
          `${'['.repeat(20_000)}${']'.repeat(20_000)}`,
          `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`,
          '{"a":1,"a":2}',
          '\ufeff{}',
        ),
      ),
      { freq: 6 },
    ),
    query: fc.option(
      fc.dictionary(
        fc.constantFrom('page', 'size', 'type', 'id', 'name', 'type[]', '__proto__'),
        fc.string({ maxLength: 8 }),
      ),
      {
        freq: 2,
      },
    ),
    transaction: fc.option(
      fc.oneof(fc.constantFrom(w.a.ids.transaction, w.b.ids.transaction), fc.string({ maxLength: 10 })),
      { freq: 5 },
    ),
  })
  await assertProperty(
    fc.asyncProperty(request, async (r) => {
      const [method, pattern] = r.route
      let i = 0
      const path = pattern.replace(/:[a-z]+/g, () => encodeURIComponent(r.params[i++] ?? 'x'))
      const search = r.query ? `?${new URLSearchParams(r.query as Record<string, string>).toString()}` : ''
      const sample = bodies[`${method} ${pattern}`]
      const body =
        r.raw ??
        (sample || r.mutations.length ? JSON.stringify(mutate(sample ?? {}, r.mutations)) : undefined)
      const headers: Record<string, string> = {}
      if (r.key) headers['svc-api-key'] = r.key
      if (r.contentType) headers['content-type'] = r.contentType
      if (r.transaction) headers['svc-transaction-id'] = r.transaction
      const before = await w.store.dump()
      const response = await w.handler(
        new Request(`http://vault.test${path}${search}`, {
          method,
          headers,
          ...(body !== undefined && method !== 'GET' && method !== 'DELETE' ? { body } : {}),
        }),
      )
      seen.add(response.status)
      expect(await serverFailure(response), `${method} ${path}`).toBe(false)
      if (response.status >= 400) {
        expect(await problemIsValid(response)).toBeNull()
        expect(await w.store.dump()).toEqual(before)
      }
    }),
    {
      seed: SEED,
      numRuns: runs,
      verbose: 1,
      // Requests that reach 201 and 204 whatever routes the table grows to.
      examples: [
        [
          {
            route: ROUTES.find(([m, p]) => m === 'POST' && p === '/transactions')!,
            params: ['', ''],
            key: w.a.keys.private,
            mutations: [],
            contentType: 'application/json',
            raw: null,
            query: null,
            transaction: null,
          },
        ],
        [
          {
            route: ROUTES.find(([m, p]) => m === 'DELETE' && p === '/reactors/:id')!,
            params: [w.a.ids.reactor!, ''],
            key: w.a.keys.management,
            mutations: [],
            contentType: 'application/json',
            raw: null,
            query: null,
            transaction: null,
          },
        ],
      ],
    },
  )
  expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  // The generator reaches both accepted and every kind of rejected request.
  for (const status of [200, 201, 204, 400, 401, 403, 404, 415]) expect(seen).toContain(status)
}

/**
 * Whether `response` is a 5xx: any, except the 501 of a route of the reference that is not built
 * (a path such as `/applications/../keys/x` resolves to one), which names the route it refuses.
 */
async function serverFailure(response: Response): Promise<boolean> {
  if (response.status < 500) return false
  if (response.status !== 501) return true
  const detail = String(((await response.clone().json()) as { detail?: unknown }).detail)
  return !detail.includes('is a route of the reference API')
}

describe('hostile HTTP input', () => {
  it('mutated bodies on every route: never a 5xx, every 4xx a problem document, and a rejected request changes nothing', async () => {
    await mutatedBodies(await hostileWorld(), RUNS(400))
  }, 120_000)

  describePostgres('on the Postgres store', (url) => {
    it('mutated bodies: never a 5xx, and a rejected request changes nothing', async () => {
      const pool = testPool(url, 4)
      const schema = freshSchema()
      const store = await postgresStore({ pool, schema })
      try {
        const w = await hostileWorld(store)
        // Text PostgreSQL can't hold in JSON is refused as input (400), on every store alike
        // (U+0000 in data is kept: data is sealed before storage; see test/postgres/nul-input.test.ts).
        for (const data of ['half \ud800', { 'key \ud800': 1 }]) {
          const response = await w.handler(
            new Request('http://vault.test/tokens', {
              method: 'POST',
              headers: { 'svc-api-key': w.a.keys.private, 'content-type': 'application/json' },
              body: JSON.stringify({ type: 'x', data }),
            }),
          )
          expect(response.status).toBe(400)
        }
        await mutatedBodies(w, RUNS(150))
      } finally {
        await store.close()
        await dropSchemas(pool, [schema])
        await pool.end()
      }
    }, 180_000)
  })

  it('random methods, paths and headers: never a 5xx, and problems are valid', async () => {
    const w = await hostileWorld()
    const segment = fc.oneof(
      fc.constantFrom(
        'tokens',
        'children',
        'transactions',
        'commit',
        'rollback',
        'reactor-formulas',
        'reactors',
        'react',
        'sessions',
        'authorize',
        'applications',
        w.a.ids.token,
        '',
      ),
      fc.string({ maxLength: 12 }).map(encodeURIComponent),
    )
    const request = fc.record({
      method: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'),
      segments: fc.array(segment, { maxLength: 5 }),
      trailing: fc.boolean(),
      headers: fc.dictionary(
        fc.oneof(
          fc.constantFrom(
            'svc-api-key',
            'SVC-API-KEY',
            'svc-transaction-id',
            'content-type',
            'content-length',
          ),
          fc.stringMatching(/^[a-z][a-z-]{0,10}$/),
        ),
        fc.stringMatching(/^[\x20-\x7e]{0,30}$/),
        { maxKeys: 4 },
      ),
      body: fc.option(fc.string({ maxLength: 40 }), { freq: 2 }),
    })
    await assertProperty(
      fc.asyncProperty(request, async (r) => {
        const path = `/${r.segments.join('/')}${r.trailing ? '/' : ''}`
        const headers = new Headers()
        for (const [k, v] of Object.entries(r.headers)) {
          if (k.toLowerCase() !== 'content-length') headers.set(k, v)
        }
        const before = await w.store.dump()
        const canHaveBody = !['GET', 'HEAD'].includes(r.method)
        const response = await w.handler(
          new Request(`http://vault.test${path}`, {
            method: r.method,
            headers,
            ...(r.body !== null && canHaveBody ? { body: r.body } : {}),
          }),
        )
        expect(await serverFailure(response)).toBe(false)
        if (response.status >= 400 && r.method !== 'HEAD') {
          expect(await problemIsValid(response)).toBeNull()
          expect(await w.store.dump()).toEqual(before)
        }
      }),
      { seed: SEED, numRuns: RUNS(400), verbose: 1 },
    )
  }, 120_000)
})

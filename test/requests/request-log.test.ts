import { describe, expect, it } from 'vitest'
import { RequestLog } from '../../adapters/http/request-log.js'
import { testControlHandler } from '../../adapters/http/test-control.js'
import type { AccessRule } from '../../src/kernel/types.js'
import { createTestVault, type TestVault } from '../../testing/index.js'

const RULES: AccessRule[] = [
  {
    description: 'writes anywhere',
    priority: 1,
    container: '/',
    transform: 'reveal',
    permissions: ['token:create'],
  },
  {
    description: 'cards masked',
    priority: 2,
    container: '/cards/',
    transform: 'mask',
    permissions: ['token:read'],
  },
  {
    description: 'open revealed',
    priority: 3,
    container: '/open/',
    transform: 'reveal',
    permissions: ['token:read'],
  },
]

async function ruledVault(): Promise<TestVault> {
  return createTestVault({ private: { permissions: ['token:create', 'token:read'], rules: RULES } })
}

const call = (vault: TestVault, method: string, path: string, body?: unknown, key = vault.keys.private) =>
  vault.http(
    new Request(`http://vault${path}`, {
      method,
      headers: { 'svc-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }),
  )

/** Plays a failing test: a 403 by a rule, a masked read, a 400, an injected 503, a 401 with an unknown key. */
async function failingFlow(vault: TestVault) {
  const secret = (await (
    await call(vault, 'POST', '/tokens', { type: 'token', data: 'x', containers: ['/secret/'] })
  ).json()) as { id: string }
  const card = (await (
    await call(vault, 'POST', '/tokens', { type: 'token', data: 'y', containers: ['/cards/'] })
  ).json()) as { id: string }
  const refused = await call(vault, 'GET', `/tokens/${secret.id}`)
  const masked = await call(vault, 'GET', `/tokens/${card.id}`)
  const invalid = await call(vault, 'POST', '/tokens', { type: 'token' })
  vault.faults.add({ method: 'GET', path: '/tokens/{id}', status: 503 })
  const faulted = await call(vault, 'GET', `/tokens/${card.id}`)
  const unknown = await call(vault, 'GET', `/tokens/${card.id}`, undefined, 'key_unknown')
  const id = (r: Response) => r.headers.get('x-request-id') ?? ''
  return { secret, card, refused, masked, invalid, faulted, unknown, id }
}

describe('the request log of test mode', () => {
  it('records each exchange of a failing test with what explains it', async () => {
    const vault = await ruledVault()
    const flow = await failingFlow(vault)
    expect([flow.refused.status, flow.masked.status, flow.invalid.status]).toEqual([403, 200, 400])
    expect([flow.faulted.status, flow.unknown.status]).toEqual([503, 401])
    const rows = await vault.requests()
    const byId = (id: string) => rows.find((r) => r.request_id === id)!

    const refused = byId(flow.id(flow.refused))
    expect(refused).toMatchObject({
      method: 'GET',
      status: 403,
      tenant_name: 'test',
      actor_name: 'private application',
    })
    expect(refused.operations).toEqual(['token.get'])
    expect(refused.journal_entries[0]).toMatchObject({
      operation: 'token.get',
      outcome: { ok: false, code: 'forbidden' },
    })
    const refusal = refused.trace!.at(-1)!
    expect(refusal).toMatchObject({ permission: 'token:read', decision: null, token_id: flow.secret.id })
    expect(refusal.rules.map((r) => [r.description, r.verdict])).toEqual([
      ['writes anywhere', 'lacks_permission'],
      ['cards masked', 'does_not_cover'],
      ['open revealed', 'does_not_cover'],
    ])
    expect(vault.explain(flow.id(flow.refused))).toEqual(refused.trace)

    const masked = byId(flow.id(flow.masked))
    expect(masked.trace?.[0]).toMatchObject({ decision: 'mask', rule: 1 })

    const invalid = byId(flow.id(flow.invalid))
    expect(invalid.problem?.errors).toHaveProperty('data')

    const faulted = rows.find((r) => r.kind === 'fault')!
    expect(faulted).toMatchObject({ status: 503, fault: { status: 503, path: '/tokens/{id}' } })
    expect(faulted.problem?.detail).toContain('injected fault')

    const unknown = byId(flow.id(flow.unknown))
    expect(unknown).toMatchObject({ status: 401, tenant_id: null, actor_id: null })
    expect(unknown.path).toBe(`/tokens/${flow.card.id}`)
    await vault.close()
  })

  it("explains a decision as it was made, read after the caller's rules changed", async () => {
    const vault = await ruledVault()
    const card = (await (
      await call(vault, 'POST', '/tokens', { type: 'token', data: 'y', containers: ['/cards/'] })
    ).json()) as { id: string }
    const masked = await call(vault, 'GET', `/tokens/${card.id}`)
    // The trace is built when read: it still weighs the rules the read was decided by.
    await vault.client('management').applications.update(vault.applications.private.id, {
      name: 'private application',
      rules: [{ ...RULES[2]!, container: '/' }],
    })
    const trace = vault.explain(masked.headers.get('x-request-id')!)!
    expect(trace.map((t) => [t.decision, t.rule, t.rules.length])).toEqual([['mask', 1, 3]])
    expect(trace[0]!.rules.map((r) => r.verdict)).toEqual(['lacks_permission', 'decided', 'does_not_cover'])
    await vault.close()
  })

  it('marks group rows; reset clears the log', async () => {
    const vault = await ruledVault()
    await call(vault, 'GET', '/tokens/a')
    vault.mark('second test')
    await call(vault, 'GET', '/tokens/b')
    expect((await vault.requests({ mark: 'second test' })).map((r) => r.path)).toEqual(['/tokens/b'])
    await vault.reset()
    expect(await vault.requests()).toEqual([])
    await vault.close()
  })

  it('holds no token data, key, nonce or query value (canary)', async () => {
    const vault = await ruledVault()
    const canary = 'canary-7f3a9c2e5b'
    await call(vault, 'POST', '/tokens', { type: 'token', data: canary, containers: ['/open/'] })
    await call(vault, 'POST', '/tokens', {
      type: 'token',
      data: { number: canary },
      containers: ['/secret/'],
    })
    await call(vault, 'GET', `/tokens?type=${canary}&size=${canary}`)
    await call(vault, 'POST', '/tokens/search', { query: `data:${canary}` })
    const session = (await (await call(vault, 'POST', '/sessions', undefined, vault.keys.public)).json()) as {
      nonce: string
      session_key: string
    }
    await call(vault, 'POST', '/sessions/authorize', { nonce: session.nonce, permissions: ['token:read'] })
    await call(vault, 'GET', '/tokens/x', undefined, `key_${canary}`)
    const text = JSON.stringify(await vault.requests())
    for (const secret of [canary, vault.keys.private, vault.keys.public, session.nonce, session.session_key])
      expect(text).not.toContain(secret)
    expect(text).toContain('"query_keys":["type","size"]')
    await vault.close()
  })

  it('keeps 3 entries of one tenant when told 3, and 5 in all when told 5', () => {
    const log = new RequestLog({ now: () => new Date(0), capacity: 5, perTenant: 3 })
    const add = (id: string, tenant: string | null) => {
      const witness = log.begin()
      witness.tenant_id = tenant
      log.finish(
        {
          request_id: id,
          kind: 'api',
          method: 'GET',
          path: '/',
          search: '',
          status: 200,
          ms: 1,
          problemBody: null,
        },
        witness,
      )
    }
    for (const id of ['a1', 'a2', 'a3']) add(id, 'A')
    expect(log.size).toBe(3)
    add('a4', 'A')
    expect(log.list().map((e) => e.request_id)).toEqual(['a2', 'a3', 'a4'])
    for (const id of ['b1', 'b2']) add(id, 'B')
    expect(log.size).toBe(5)
    add('c1', null)
    // Past 5 in all: the largest tenant (A) gives up its oldest; B keeps both.
    expect(log.list().map((e) => e.request_id)).toEqual(['a3', 'a4', 'b1', 'b2', 'c1'])
    expect(log.get('a2')).toBeUndefined()
  })

  it('keeps 500 of one tenant and 1000 in all by default', () => {
    const log = new RequestLog({ now: () => new Date(0) })
    const add = (i: number, tenant: string) => {
      const witness = log.begin()
      witness.tenant_id = tenant
      log.finish(
        {
          request_id: `r${i}`,
          kind: 'api',
          method: 'GET',
          path: '/',
          search: '',
          status: 200,
          ms: 1,
          problemBody: null,
        },
        witness,
      )
    }
    for (let i = 1; i <= 500; i++) add(i, 'A')
    expect(log.size).toBe(500)
    add(501, 'A')
    expect(log.size).toBe(500)
    expect(log.get('r1')).toBeUndefined()
    for (let i = 1; i <= 500; i++) add(1000 + i, 'B')
    expect(log.size).toBe(1000)
    add(2000, 'C')
    expect(log.size).toBe(1000)
  })

  it('is served by GET /_test/requests and marked by POST /_test/mark behind the admin token', async () => {
    const vault = await ruledVault()
    const requests = new RequestLog({ now: () => vault.clock.now() })
    const control = testControlHandler(vault.service, { clock: vault.clock, adminToken: 'adm', requests })
    const auth = { authorization: 'Bearer adm' }
    expect((await control(new Request('http://v/_test/requests'))).status).toBe(401)
    expect((await control(new Request('http://v/_test/mark', { method: 'POST' }))).status).toBe(401)
    const marked = await control(
      new Request('http://v/_test/mark', {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ name: 'flow' }),
      }),
    )
    expect(marked.status).toBe(201)
    const bad = await control(
      new Request('http://v/_test/mark', { method: 'POST', headers: auth, body: '{}' }),
    )
    expect(bad.status).toBe(400)
    const { data } = (await (
      await control(new Request('http://v/_test/requests?failed=true', { headers: auth }))
    ).json()) as { data: { kind: string; status: number; mark?: string; problem: { errors: object } }[] }
    expect(
      data.map((r: { kind: string; status: number; mark?: string }) => [r.kind, r.status, r.mark]),
    ).toEqual([
      ['control', 401, undefined],
      ['control', 400, 'flow'],
    ])
    expect(data[1]!.problem.errors).toHaveProperty('name')
    // Ids whose percent-encoding is malformed: no such request, a 400 to redeliver (a URIError: a 500).
    for (const id of ['%ZZ', '%', '%FF', '%ED%A0%80']) {
      expect((await control(new Request(`http://v/_test/requests/${id}`, { headers: auth }))).status).toBe(
        404,
      )
      const again = new Request(`http://v/_test/webhooks/${id}/redeliver`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ tenant: 't' }),
      })
      expect((await control(again)).status).toBe(400)
    }
    await vault.close()
  })
})

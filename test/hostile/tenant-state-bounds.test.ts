/**
 * What the service keeps for tenants besides work in flight — the operation journal, parsed
 * templates, idempotency records, unauthorized sessions — is bounded per tenant and in all, and a
 * tenant that saturates one never pushes out or refuses another tenant's: the numbers are docs/limits.md's
 * ("Bounds per tenant"), written out here.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { createHttpHandler } from '../../adapters/http/index.js'
import { testControlHandler } from '../../adapters/http/test-control.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, type ServiceOptions } from '../../entry/index.js'
import { compileTemplate, isTemplateCached, templatesCached } from '../../src/expressions/index.js'
import { Journal } from '../../src/service/journal.js'
import type { Store } from '../../src/store/contract.js'
import type { Op } from '../../src/store/index.js'

const at = '2030-01-01T00:00:00.000Z'
const entry = (tenant: string | null, n = 0) => ({
  at,
  tenant_id: tenant,
  actor: { kind: 'admin' as const },
  operation: `op.${n}`,
  outcome: { ok: true as const },
  ids: [],
})

describe('the operation journal: 500 entries per tenant, 1000 in all', () => {
  it('A’s 500th entry is kept with all before it; its 501st evicts its own oldest, never B’s', () => {
    const journal = new Journal(1000)
    journal.record(entry('B'))
    for (let n = 1; n <= 500; n++) journal.record(entry('A', n))
    expect(journal.query({ tenant: 'A' })).toHaveLength(500)
    expect(journal.query({ tenant: 'A' })[0]?.operation).toBe('op.1')
    journal.record(entry('A', 501))
    const a = journal.query({ tenant: 'A' })
    expect({ count: a.length, first: a[0]?.operation, last: a.at(-1)?.operation }).toEqual({
      count: 500,
      first: 'op.2',
      last: 'op.501',
    })
    expect(journal.query({ tenant: 'B' })).toHaveLength(1)
  })

  it('1000 in all: with A and C at 500 each, B’s entry evicts the oldest of the tenant holding the most', () => {
    const journal = new Journal(1000)
    for (let n = 1; n <= 500; n++) journal.record(entry('A', n))
    for (let n = 1; n <= 499; n++) journal.record(entry('C', n))
    journal.record(entry('B', 1))
    expect(journal.query()).toHaveLength(1000)
    journal.record(entry('B', 2))
    expect(journal.query()).toHaveLength(1000)
    expect(journal.query({ tenant: 'A' })[0]?.operation).toBe('op.2')
    expect(journal.query({ tenant: 'C' })).toHaveLength(499)
    expect(journal.query({ tenant: 'B' }).map((e) => e.operation)).toEqual(['op.1', 'op.2'])
    // The whole journal still reads in order of seq.
    const seqs = journal.query().map((e) => e.seq)
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y))
  })

  it('over 20 000 calls of 40 tenants in random order, a call evicts only from a tenant holding the most, and each keeps its newest', () => {
    const capacity = 60
    const perTenant = 9
    const journal = new Journal(capacity, perTenant)
    // A fixed sequence of tenants (a linear congruential generator): the same on every run.
    let state = 7
    const next = () => {
      state = (state * 1103515245 + 12345) % 2 ** 31
      return state
    }
    const made = new Map<string, number>()
    let kept = new Map<string, number[]>()
    // What broke the rules, checked once per 1000 calls: one expect per call and per tenant made
    // this loop a million assertions, most of its time.
    let broken: string[] = []
    for (let call = 0; call < 20_000; call++) {
      // Most calls from a few busy tenants, the rest spread over the others.
      const tenant = `t${next() % 4 === 0 ? next() % 40 : next() % 5}`
      const n = (made.get(tenant) ?? 0) + 1
      made.set(tenant, n)
      journal.record(entry(tenant, n))
      const now = entriesByTenant(journal)
      broken.push(
        ...journalCallBreaks({ tenant, made, kept, now, capacity, perTenant }).map(
          (b) => `call ${call}: ${b}`,
        ),
      )
      kept = now
      if (call % 1000 === 999) {
        expect(broken).toEqual([])
        broken = []
      }
    }
    expect(broken).toEqual([])
  })

  it('calls whose key did not authenticate are one more tenant: their flood keeps a tenant’s entries', () => {
    const journal = new Journal(1000)
    journal.record(entry('B'))
    for (let n = 0; n < 5000; n++) journal.record(entry(null, n))
    expect(journal.query({ tenant: 'B' })).toHaveLength(1)
    expect(journal.query()).toHaveLength(501)
  })

  it('a tenant flooding the service keeps B’s entries, read back by the test control plane and in order', async () => {
    const clock = manualClock(at)
    const service = createService({ store: memoryStore(), clock, runner: null, testMode: true })
    try {
      const key = async (name: string) => {
        const tenant = await service.admin.createTenant({ name })
        const { key } = await service.admin.createApplication({
          tenantId: tenant.id,
          name,
          type: 'private',
          permissions: ['token:read'],
        })
        return { id: tenant.id, client: service.connect(key) }
      }
      const a = await key('a')
      const b = await key('b')
      await expect(b.client.tokens.get('b-missing')).rejects.toMatchObject({ code: 'not_found' })
      for (let n = 0; n < 1200; n++) await a.client.tokens.get(`a-${n}`).catch(() => {})
      const control = testControlHandler(service, { clock, adminToken: 'admin-token-for-tests-0123456789' })
      const answer = await control(
        new Request(`http://vault.test/_test/journal?tenant=${b.id}`, {
          headers: { authorization: 'Bearer admin-token-for-tests-0123456789' },
        }),
      )
      const { data } = (await answer.json()) as { data: { operation: string; ids: string[] }[] }
      expect(data.map((e) => e.operation)).toEqual(['tenant.create', 'application.create', 'token.get'])
      expect(data.at(-1)?.ids).toEqual(['b-missing'])
      expect(service.journal.query({ tenant: a.id })).toHaveLength(500)
      expect(service.journal.query({ tenant: a.id }).at(-1)?.ids).toEqual(['a-1199'])
    } finally {
      await service.close()
    }
  })

  it('the bounds are createService options', async () => {
    const service = createService({
      store: memoryStore(),
      clock: manualClock(at),
      runner: null,
      journalSize: 3,
      journalSizePerTenant: 2,
    })
    try {
      for (const name of ['a', 'b', 'c', 'd']) await service.admin.createTenant({ name })
      expect(service.journal.query().map((e) => e.operation)).toHaveLength(3)
      expect(service.journal).toMatchObject({ capacity: 3, perTenant: 2 })
    } finally {
      await service.close()
    }
  })
})

/** Each tenant's kept entry numbers, in the journal's order. */
function entriesByTenant(journal: Journal): Map<string, number[]> {
  const byTenant = new Map<string, number[]>()
  for (const e of journal.query()) {
    const own = byTenant.get(e.tenant_id!) ?? []
    own.push(Number(e.operation.slice(3)))
    byTenant.set(e.tenant_id!, own)
  }
  return byTenant
}

/**
 * What one call of `tenant` broke of the journal's rules, from what was kept before (`kept`) and
 * after (`now`), and how many entries each tenant made (`made`): none when it kept them.
 */
function journalCallBreaks(call: {
  tenant: string
  made: Map<string, number>
  kept: Map<string, number[]>
  now: Map<string, number[]>
  capacity: number
  perTenant: number
}): string[] {
  const { tenant, made, kept, now, capacity, perTenant } = call
  const broken: string[] = []
  const count = (byTenant: Map<string, number[]>) =>
    [...byTenant.values()].reduce((sum, own) => sum + own.length, 0)
  // One more entry in all, unless the journal was full or the caller held its own most.
  const callerHeld = kept.get(tenant)?.length ?? 0
  const expected = callerHeld >= perTenant ? count(kept) : Math.min(count(kept) + 1, capacity)
  if (count(now) !== expected) broken.push(`${count(now)} entries in all, not ${expected}`)
  for (const [t, own] of now) {
    const last = made.get(t)!
    // Each tenant keeps its newest entries, in order, at most perTenant of them.
    if (own.some((n, i) => n !== last - own.length + 1 + i))
      broken.push(`${t} kept ${own.join(',')} of ${last}`)
    if (own.length > perTenant) broken.push(`${t} kept ${own.length}`)
  }
  // A tenant other than the caller lost an entry only if it held the most before the call.
  const most = Math.max(...[...kept.values()].map((own) => own.length))
  for (const [t, before] of kept) {
    const after = now.get(t)?.length ?? 0
    if (t === tenant || after >= before.length) continue
    if (after !== before.length - 1) broken.push(`${t} went from ${before.length} to ${after}`)
    if (before.length !== most) broken.push(`${t} lost one holding ${before.length}, not the most (${most})`)
  }
  return broken
}

/**
 * A service over a memory store, with tenants made by `tenant(name)`: each with a private key
 * (tokens and sessions authorize) and a public one (sessions), and `raw(ops)` writing straight to
 * the store under the service, to fill a tenant up to just below a bound quickly.
 */
async function boundedVault(options: Partial<ServiceOptions> = {}) {
  const clock = manualClock(at)
  const store: Store = memoryStore()
  const service = createService({ store, clock, runner: null, ...options })
  const http = createHttpHandler(service)
  const tenant = async (name: string) => {
    const t = await service.admin.createTenant({ name })
    const app = async (type: 'private' | 'public') =>
      (
        await service.admin.createApplication({
          tenantId: t.id,
          name: type,
          type,
          permissions: type === 'private' ? ['token:create', 'token:read'] : ['token:create'],
        })
      ).key
    return { id: t.id, private: await app('private'), public: await app('public') }
  }
  const raw = async (ops: Op[]) => {
    expect(await store.write({ ops })).toEqual({ ok: true })
  }
  return { service, http, clock, store, tenant, raw }
}

const idempotencyRecord = (tenant: string, n: number) => ({
  op: 'idempotency.put' as const,
  record: {
    tenant_id: tenant,
    id: `filler-${n}`,
    state: 'done' as const,
    claim: 'c',
    request: 'r',
    created_at: at,
    lease_until: at,
    expires_at: '2030-01-02T00:00:00.000Z',
  },
})

describe('idempotency records: 10 000 per tenant (maxIdempotencyRecordsPerTenant)', () => {
  it('A’s 10 000th record is made and its 10 001st key answers 429 with Retry-After 60; repeats and B go on', async () => {
    const { service, http, tenant, raw } = await boundedVault()
    try {
      const a = await tenant('a')
      const b = await tenant('b')
      const bFirst = await service
        .connect(b.private, { idempotencyKey: 'b-1' })
        .tokens.create({ type: 'token', data: 'b' })
      await raw(Array.from({ length: 9998 }, (_, n) => idempotencyRecord(a.id, n)))
      const create = (key: string, data = 'a') =>
        service.connect(a.private, { idempotencyKey: key }).tokens.create({ type: 'token', data })
      const kept = await create('a-9999')
      await create('a-10000')
      const refused = await create('a-10001').catch((e: unknown) => e)
      expect(refused).toMatchObject({ code: 'too_many_requests', retryAfterSec: 60 })
      expect((refused as Error).message).toContain('10000')
      const viaHttp = await http(
        new Request('http://vault/tokens', {
          method: 'POST',
          headers: {
            'svc-api-key': a.private,
            'content-type': 'application/json',
            'svc-idempotency-key': 'a-10001',
          },
          body: JSON.stringify({ type: 'token', data: 'a' }),
        }),
      )
      expect({ status: viaHttp.status, retryAfter: viaHttp.headers.get('retry-after') }).toEqual({
        status: 429,
        retryAfter: '60',
      })
      // Nothing acted for the refused key; a kept key is still answered; requests without a key go on.
      expect(await create('a-9999')).toEqual(kept)
      await service.connect(a.private).tokens.create({ type: 'token', data: 'no key' })
      // B's kept answer and B's new keys are untouched by A's bound.
      expect(
        await service
          .connect(b.private, { idempotencyKey: 'b-1' })
          .tokens.create({ type: 'token', data: 'b' }),
      ).toEqual(bFirst)
      await service.connect(b.private, { idempotencyKey: 'b-2' }).tokens.create({ type: 'token', data: 'b' })
    } finally {
      await service.close()
    }
  })

  it('where the host never sweeps, a tenant at its bound sweeps its expired records first', async () => {
    const { service, clock, tenant } = await boundedVault({ maxIdempotencyRecordsPerTenant: 2 })
    try {
      const a = await tenant('a')
      const create = (key: string) =>
        service.connect(a.private, { idempotencyKey: key }).tokens.create({ type: 'token', data: key })
      await create('k1')
      clock.advance(60_000)
      await create('k2')
      clock.advance(24 * 60 * 60 * 1000 - 60_000)
      // k1 is 24 hours old (expired), k2 not yet: one place frees, no more.
      await create('k3')
      expect(await create('k4').catch((e: unknown) => e)).toMatchObject({ code: 'too_many_requests' })
    } finally {
      await service.close()
    }
  })

  it('a place frees when the sweep deletes a record 24 hours on; the bound is an option', async () => {
    const { service, clock, tenant } = await boundedVault({ maxIdempotencyRecordsPerTenant: 2 })
    try {
      const a = await tenant('a')
      const create = (key: string) =>
        service.connect(a.private, { idempotencyKey: key }).tokens.create({ type: 'token', data: key })
      await create('k1')
      clock.advance(1000)
      await create('k2')
      expect(await create('k3').catch((e: unknown) => e)).toMatchObject({
        status: undefined,
        retryAfterSec: 60,
      })
      // A failed request keeps nothing, so it holds no place either.
      clock.advance(24 * 60 * 60 * 1000 - 1000)
      await service.admin.sweep()
      await create('k3')
      expect(await create('k4').catch((e: unknown) => e)).toMatchObject({ code: 'too_many_requests' })
    } finally {
      await service.close()
    }
  })
})

const createdSession = (tenant: string, n: number) => ({
  op: 'session.put' as const,
  session: {
    id: `filler-${n}`,
    tenant_id: tenant,
    application_id: 'filler',
    key_hash: `filler-key-${tenant}-${n}`,
    nonce_hash: `filler-nonce-${n}`,
    state: 'created' as const,
    permissions: [],
    created_at: at,
    expires_at: '2030-01-01T00:03:00.000Z',
  },
})

describe('sessions not yet authorized: 1000 per tenant (maxUnauthorizedSessionsPerTenant)', () => {
  it('A’s 1000th session is made and its 1001st answers 429 with Retry-After 180; B’s session is authorized meanwhile', async () => {
    const { service, http, tenant, raw } = await boundedVault()
    try {
      const a = await tenant('a')
      const b = await tenant('b')
      const bSession = await service.connect(b.public).sessions.create()
      await raw(Array.from({ length: 998 }, (_, n) => createdSession(a.id, n)))
      const aPublic = service.connect(a.public)
      const kept = await aPublic.sessions.create()
      await aPublic.sessions.create()
      const refused = await aPublic.sessions.create().catch((e: unknown) => e)
      expect(refused).toMatchObject({ code: 'too_many_requests', retryAfterSec: 180 })
      expect((refused as Error).message).toContain('1000')
      const viaHttp = await http(
        new Request('http://vault/sessions', { method: 'POST', headers: { 'svc-api-key': a.public } }),
      )
      expect({ status: viaHttp.status, retryAfter: viaHttp.headers.get('retry-after') }).toEqual({
        status: 429,
        retryAfter: '180',
      })
      // B's session, made before A's flood, is authorized and used; B makes more.
      await service
        .connect(b.private)
        .sessions.authorize({ nonce: bSession.nonce, permissions: ['token:create'] })
      await service.connect(bSession.session_key).tokens.create({ type: 'token', data: 'b' })
      await service.connect(b.public).sessions.create()
      // Authorizing one of A's frees its place at once.
      await service
        .connect(a.private)
        .sessions.authorize({ nonce: kept.nonce, permissions: ['token:create'] })
      await aPublic.sessions.create()
      expect(await aPublic.sessions.create().catch((e: unknown) => e)).toMatchObject({
        code: 'too_many_requests',
      })
    } finally {
      await service.close()
    }
  })

  it('where the host never sweeps, a tenant at its bound sweeps the expired sessions first', async () => {
    const { service, clock, tenant, store } = await boundedVault({ maxUnauthorizedSessionsPerTenant: 2 })
    try {
      const a = await tenant('a')
      const client = service.connect(a.public)
      await client.sessions.create()
      clock.advance(60_000)
      await client.sessions.create()
      clock.advance(2 * 60_000)
      // The first expired (3 minutes), the second has a minute left: one place frees, no more.
      await client.sessions.create()
      expect(await client.sessions.create().catch((e: unknown) => e)).toMatchObject({
        code: 'too_many_requests',
      })
      expect(await store.countRecords(a.id, 'session.created')).toBe(2)
    } finally {
      await service.close()
    }
  })

  it('expired sessions free their places once swept; the bound is an option', async () => {
    const { service, clock, tenant } = await boundedVault({ maxUnauthorizedSessionsPerTenant: 2 })
    try {
      const a = await tenant('a')
      const client = service.connect(a.public)
      await client.sessions.create()
      await client.sessions.create()
      expect(await client.sessions.create().catch((e: unknown) => e)).toMatchObject({
        code: 'too_many_requests',
        retryAfterSec: 180,
      })
      clock.advance(3 * 60 * 1000)
      await service.admin.sweep()
      await client.sessions.create()
      await client.sessions.create()
    } finally {
      await service.close()
    }
  })
})

describe('parsed templates: 500 per tenant, 4000 in all', () => {
  const template = (tag: string, n: number) => `{{ data | append: "${tag}-${n}" }}`

  it('A’s 500 templates are all kept; its 501st evicts its own least recently used, never B’s', () => {
    compileTemplate(template('b', 0), 'mask', 'tpl-B')
    for (let n = 1; n <= 500; n++) compileTemplate(template('a', n), 'mask', 'tpl-A')
    expect(isTemplateCached(template('a', 1), 'tpl-A')).toBe(true)
    expect(templatesCached('tpl-A')).toBe(500)
    compileTemplate(template('a', 501), 'mask', 'tpl-A')
    expect(templatesCached('tpl-A')).toBe(500)
    expect(isTemplateCached(template('a', 1), 'tpl-A')).toBe(false)
    expect(isTemplateCached(template('a', 2), 'tpl-A')).toBe(true)
    expect(isTemplateCached(template('b', 0), 'tpl-B')).toBe(true)
    // The same source is kept apart per tenant: B never reads what A parsed.
    expect(isTemplateCached(template('a', 2), 'tpl-B')).toBe(false)
  })

  it('4000 in all: with 8 tenants at 500, a 9th tenant’s template evicts the oldest of one holding the most', () => {
    compileTemplate(template('quiet', 0), 'mask', 'tpl-quiet')
    for (let t = 0; t < 8; t++)
      for (let n = 0; n < 500; n++) compileTemplate(template(`t${t}`, n), 'mask', `tpl-full-${t}`)
    // The 4000 places are taken by now (and were before the last tenant's 500: the oldest of the
    // tenants holding the most went, never the quiet tenant's one template).
    expect(isTemplateCached(template('quiet', 0), 'tpl-quiet')).toBe(true)
    const before = Array.from({ length: 8 }, (_, t) =>
      isTemplateCached(template(`t${t}`, 499), `tpl-full-${t}`),
    )
    expect(before.every(Boolean)).toBe(true)
    expect(templatesCached()).toBe(4000)
    compileTemplate(template('late', 0), 'mask', 'tpl-late')
    expect(templatesCached()).toBe(4000)
    expect(templatesCached('tpl-late')).toBe(1)
    expect(isTemplateCached(template('late', 0), 'tpl-late')).toBe(true)
    expect(isTemplateCached(template('quiet', 0), 'tpl-quiet')).toBe(true)
  })

  it('A’s tokens with 2000 distinct masks leave B’s mask parsed: B’s read finds it parsed and parses nothing', async () => {
    const { service, tenant } = await boundedVault()
    try {
      const a = await tenant('a')
      const b = await tenant('b')
      const mask = '{{ data | slice: 0, 2 }}-b-mask'
      const bClient = service.connect(b.private)
      const bToken = await bClient.tokens.create({ type: 'token', data: 'secret-b', mask })
      expect(isTemplateCached(mask, b.id)).toBe(true)
      const aClient = service.connect(a.private)
      for (let n = 0; n < 2000; n += 100)
        await Promise.all(
          Array.from({ length: 100 }, (_, i) =>
            aClient.tokens.create({ type: 'token', data: 'a', mask: `{{ data }}-${n + i}` }),
          ),
        )
      // The read's cost is counted, not timed: B's mask is parsed before the read, and the read
      // parses nothing more for B.
      expect(isTemplateCached(mask, b.id)).toBe(true)
      const parsed = templatesCached(b.id)
      expect((await bClient.tokens.get(bToken.id)).data).toBe('se-b-mask')
      expect(templatesCached(b.id)).toBe(parsed)
    } finally {
      await service.close()
    }
  })
})

describe('the file store’s decoded key owners: 1000 per tenant, 10 000 in all', () => {
  it('A authenticating with 1100 session keys evicts only its own: B’s owner is still the one decoded before', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tv-owners-'))
    const store = await fileStore({ path: dir, durability: 'none' })
    try {
      const sessions = (tenant: string, count: number) =>
        Array.from({ length: count }, (_, n) => ({
          ...createdSession(tenant, n),
          session: { ...createdSession(tenant, n).session, key_hash: `${tenant}-key-${n}` },
        }))
      expect(await store.write({ ops: [...sessions('B', 1), ...sessions('A', 1100)] })).toEqual({ ok: true })
      const b = await store.findKey('B-key-0')
      const a0 = await store.findKey('A-key-0')
      expect(b?.kind).toBe('session')
      for (let n = 1; n < 1001; n++) await store.findKey(`A-key-${n}`)
      // A's 1001st key evicted A's least recently used (its first), never B's.
      expect(await store.findKey('B-key-0')).toBe(b)
      expect(await store.findKey('A-key-1000')).toBe(await store.findKey('A-key-1000'))
      const again = await store.findKey('A-key-0')
      expect(again).toEqual(a0)
      expect(again).not.toBe(a0)
    } finally {
      await store.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('10 000 in all: a new tenant’s key evicts the oldest of the tenant holding the most, never B’s', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tv-owners-'))
    const store = await fileStore({ path: dir, durability: 'none' })
    try {
      const keys = (tenant: string, count: number) =>
        Array.from({ length: count }, (_, n) => ({
          ...createdSession(tenant, n),
          session: { ...createdSession(tenant, n).session, key_hash: `${tenant}-key-${n}` },
        }))
      const tenants = ['T0', 'T1', 'T2', 'T3', 'T4', 'T5', 'T6', 'T7', 'T8']
      expect(
        await store.write({
          ops: [
            ...keys('B', 1),
            ...tenants.flatMap((t) => keys(t, 1000)),
            ...keys('A', 999),
            ...keys('C', 1),
          ],
        }),
      ).toEqual({ ok: true })
      const b = await store.findKey('B-key-0')
      const t0 = await store.findKey('T0-key-0')
      const t0k1 = await store.findKey('T0-key-1')
      for (const t of tenants)
        for (let n = t === 'T0' ? 2 : 0; n < 1000; n++) await store.findKey(`${t}-key-${n}`)
      for (let n = 0; n < 999; n++) await store.findKey(`A-key-${n}`)
      // 1 + 9 × 1000 + 999 = 10 000 owners kept: all still the ones decoded first.
      expect(await store.findKey('T0-key-0')).toBe(t0)
      expect(await store.findKey('B-key-0')).toBe(b)
      await store.findKey('C-key-0')
      // The 10 001st: T0 holds the most (1000, as T1–T8) and comes first, so it lost its least
      // recently used (key 1, since key 0 was read again above); B's one owner stayed.
      expect(await store.findKey('B-key-0')).toBe(b)
      expect(await store.findKey('T0-key-0')).toBe(t0)
      const decodedAgain = await store.findKey('T0-key-1')
      expect(decodedAgain).toEqual(t0k1)
      expect(decodedAgain).not.toBe(t0k1)
    } finally {
      await store.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

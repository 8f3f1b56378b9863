/**
 * Every queue, cache and list the service keeps for tenants is bounded per tenant and in all, and a
 * tenant that saturates one never drops or holds back another tenant's accepted work: at a bound
 * the new work is refused (429 with `Retry-After`) or the saturating tenant's own oldest entry goes.
 */
import { EventEmitter, once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Worker } from 'node:worker_threads'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createHttpHandler } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { keyCache } from '../../adapters/postgres/key-cache.js'
import { sandboxRunner } from '../../adapters/sandbox/index.js'
import { createService, manualClock, type ServiceError } from '../../entry/index.js'
import { statusOfError } from '../../src/kernel/errors.js'
import type { FormulaRunner, RunOutcome } from '../../src/kernel/runner.js'
import type { KeyOwner } from '../../src/store/contract.js'
import { failure, formulaBody } from '../formulas/setup.js'

/** A loopback callback receiver: each path answers the statuses queued for it (then 200). */
const hits = new Map<string, number>()
const statuses = new Map<string, number[]>()
const arrivals = new EventEmitter()
let receiver: Server
let origin = ''

beforeAll(async () => {
  receiver = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      const path = req.url ?? ''
      hits.set(path, (hits.get(path) ?? 0) + 1)
      res.writeHead(statuses.get(path)?.shift() ?? 200).end()
      arrivals.emit(path)
    })
  })
  receiver.listen(0, '127.0.0.1')
  await once(receiver, 'listening')
  origin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`
})
afterAll(() => {
  receiver.closeAllConnections()
  receiver.close()
})

/** Resolves once `path` has been hit `count` times in all. */
function hitsOf(path: string, count: number): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      if ((hits.get(path) ?? 0) < count) return
      arrivals.off(path, check)
      resolve()
    }
    arrivals.on(path, check)
    check()
  })
}

/** A runner that answers at once, except for the tenants in `held`, whose runs wait until `close`. */
function heldRunner(held: Set<string>): FormulaRunner {
  const waiting: ((outcome: RunOutcome) => void)[] = []
  return {
    check: async () => null,
    run: (_code, request, options) =>
      held.has(options.isolationKey ?? '')
        ? new Promise<RunOutcome>((resolve) => waiting.push(resolve))
        : Promise.resolve({ ok: true, value: { raw: request.args }, logs: [] }),
    close: async () => {
      for (const resolve of waiting.splice(0)) resolve({ ok: false, kind: 'crashed', message: 'closed' })
    },
  }
}

/** A service over `runner` whose egress allow-list is the receiver, with a reactor per tenant made by `tenant()`. */
async function asyncVault(runner: FormulaRunner, options: { perTenant?: number } = {}) {
  const clock = manualClock('2030-01-01T00:00:00.000Z')
  const service = createService({
    store: memoryStore(),
    clock,
    runner,
    reactorEgress: [origin],
    // Accepted asynchronous reacts are outbox entries: the tenant's pending bound is theirs.
    maxPendingDeliveriesPerTenant: options.perTenant ?? 100,
  })
  const tenant = async (name: string) => {
    const t = await service.admin.createTenant({ name })
    const app = async (type: 'management' | 'private') =>
      await service.admin.createApplication({
        tenantId: t.id,
        name: type,
        type,
        permissions: type === 'management' ? ['reactor:create'] : ['token:use'],
      })
    const admin = service.connect((await app('management')).key)
    const formula = await admin.reactorFormulas.create(
      formulaBody({ configuration: [], request_parameters: [] }),
    )
    const reactor = await admin.reactors.create({ name: 'r', formula_id: formula.id })
    const key = (await app('private')).key
    const client = service.connect(key)
    const react = (path: string) =>
      client.reactors.reactAsync(reactor.id, { args: {}, callback_url: `${origin}${path}` })
    return { id: t.id, key, reactor: reactor.id, react }
  }
  return { service, tenant, clock }
}

describe('outstanding asynchronous reacts: the tenant’s pending bound (maxPendingDeliveriesPerTenant, 100 here)', () => {
  it('A’s 100th is accepted and its 101st answers 429 with Retry-After; B’s react, accepted meanwhile, is delivered', async () => {
    const held = new Set<string>()
    const { service, tenant } = await asyncVault(heldRunner(held))
    try {
      const a = await tenant('a')
      const b = await tenant('b')
      held.add(a.id)
      for (let n = 0; n < 100; n++) await a.react('/svc/a')
      const refused = await failure(a.react('/svc/a'))
      expect({ status: statusOfError(refused), retryAfterSec: refused.retryAfterSec }).toEqual({
        status: 429,
        retryAfterSec: 10,
      })
      const response = await createHttpHandler(service)(
        new Request(`http://vault/reactors/${a.reactor}/react`, {
          method: 'POST',
          headers: { 'svc-api-key': a.key, 'content-type': 'application/json' },
          body: JSON.stringify({ args: {}, callback_url: `${origin}/svc/a` }),
        }),
      )
      expect(response.status).toBe(429)
      expect(response.headers.get('retry-after')).toBe('10')
      await b.react('/svc/b')
      await hitsOf('/svc/b', 1)
      expect(hits.get('/svc/a')).toBeUndefined()
    } finally {
      await service.close()
    }
  })

  it('the attack in full: B’s callback fails once, A makes 1100 async reacts whose callbacks fail; B’s retry is delivered', async () => {
    const { service, tenant, clock } = await asyncVault(heldRunner(new Set()))
    try {
      const a = await tenant('a')
      const b = await tenant('b')
      statuses.set('/attack/b', [503])
      statuses.set(
        '/attack/a',
        Array.from({ length: 1000 }, () => 503),
      )
      await b.react('/attack/b')
      await hitsOf('/attack/b', 1)
      const tries = await Promise.allSettled(Array.from({ length: 1100 }, () => a.react('/attack/a')))
      const refused = tries.filter((t) => t.status === 'rejected')
      expect(refused).toHaveLength(1000)
      expect(refused.every((t) => statusOfError(t.reason as ServiceError) === 429)).toBe(true)
      await hitsOf('/attack/a', 100)
      // Sweeps on the manual clock until B's retry is out (the first one is due 10 s after its failure).
      await vi.waitFor(
        async () => {
          clock.advance(10_000)
          await service.admin.sweep()
          // The retry goes out in the background: a later round sees it.
          expect(hits.get('/attack/b')).toBe(2)
        },
        // Bounds only a hang: each round is quick, but a busy machine may hold the retry back for seconds.
        { timeout: 60_000, interval: 50 },
      )
      expect(hits.get('/attack/b')).toBe(2)
    } finally {
      await service.close()
    }
  })

  it('no bound in all: with 10 tenants at their 100 each, an 11th tenant’s first is accepted', async () => {
    const held = new Set<string>()
    const { service, tenant } = await asyncVault(heldRunner(held))
    try {
      for (let t = 0; t < 10; t++) {
        const x = await tenant(`t${t}`)
        await Promise.all(Array.from({ length: 100 }, () => x.react('/all/x')))
      }
      const late = await tenant('late')
      await late.react('/all/late')
      await hitsOf('/all/late', 1)
    } finally {
      await service.close()
    }
  })

  it('the bound is an option: with 2 per tenant, B keeps its accepted work while A is refused', async () => {
    const held = new Set<string>()
    const { service, tenant } = await asyncVault(heldRunner(held), { perTenant: 2 })
    try {
      const a = await tenant('a')
      const b = await tenant('b')
      held.add(a.id)
      held.add(b.id)
      await a.react('/opt/a')
      await a.react('/opt/a')
      expect(statusOfError(await failure(a.react('/opt/a')))).toBe(429)
      await b.react('/opt/b')
      await b.react('/opt/b')
      expect(statusOfError(await failure(b.react('/opt/b')))).toBe(429)
    } finally {
      // The held reacts stay in the outbox: the next process on the store runs them (see
      // test/webhooks/async-react-crash.slow.test.ts).
      await service.close()
    }
  })
})

describe('synchronous reacts', () => {
  it('hold no place among the asynchronous ones', async () => {
    const { service, tenant } = await asyncVault(heldRunner(new Set()), { perTenant: 1 })
    try {
      const a = await tenant('a')
      const client = service.connect(a.key)
      for (let n = 0; n < 3; n++)
        expect(await client.reactors.react(a.reactor, { args: { n } })).toMatchObject({ raw: { n } })
      await a.react('/sync/a')
      await hitsOf('/sync/a', 1)
    } finally {
      await service.close()
    }
  })
})

describe('the formula backlog: 64 waiting runs per tenant, 1024 in all (sandboxRunner options)', () => {
  const request = { args: {}, configuration: {} }

  it('A has one run in the worker and 64 waiting, its next is busy; B’s run goes before A’s backlog', async () => {
    const runner = sandboxRunner({ poolSize: 1, timeoutMs: 300 })
    try {
      // The worker is up before the flood, so A's first run goes to it at once.
      expect(await runner.run('module.exports = () => 1', request, { timeoutMs: 120_000 })).toMatchObject({
        ok: true,
      })
      const hang = 'module.exports = () => { while (true) {} }'
      const order: string[] = []
      // A's hung runs end at 300 ms; B's must answer, with a limit no busy machine reaches.
      const runOf = (tenant: string, code: string, timeoutMs = 300) =>
        runner.run(code, request, { timeoutMs, isolationKey: tenant }).then((outcome) => {
          order.push(`${tenant} ${outcome.ok ? 'ok' : outcome.kind}`)
          return outcome
        })
      const flood = Array.from({ length: 65 }, () => runOf('A', hang))
      const past = await runOf('A', hang)
      expect(past).toMatchObject({ ok: false, kind: 'busy', retryAfterSec: 1 })
      const b = await runOf('B', 'module.exports = () => ({ raw: "b" })', 120_000)
      expect(b).toMatchObject({ ok: true, value: { raw: 'b' } })
      // B waited for A's run in the worker only, not for A's backlog.
      expect(order).toEqual(['A busy', 'A timeout', 'B ok'])
      await runner.close()
      expect(new Set((await Promise.all(flood.slice(1))).map((o) => !o.ok && o.kind))).toEqual(
        new Set(['crashed']),
      )
    } finally {
      await runner.close()
    }
  }, 120_000)

  it('1024 runs wait in all (16 tenants × 64); the next one, of a 17th tenant, is busy', async () => {
    // Workers that never get ready: every run waits.
    const runner = sandboxRunner({
      poolSize: 1,
      startWorker: () =>
        Object.assign(new EventEmitter(), {
          ref() {},
          unref() {},
          terminate: async () => 0,
        }) as unknown as Worker,
    })
    const waiting: Promise<RunOutcome>[] = []
    for (let t = 0; t < 16; t++) {
      for (let n = 0; n < 64; n++)
        waiting.push(
          runner.run('module.exports = () => 1', request, { timeoutMs: 1000, isolationKey: `t${t}` }),
        )
    }
    const past = await runner.run('module.exports = () => 1', request, {
      timeoutMs: 1000,
      isolationKey: 'late',
    })
    expect(past).toMatchObject({ ok: false, kind: 'busy', message: expect.stringContaining('1024 in all') })
    await runner.close()
    const ended = await Promise.all(waiting)
    expect(ended.filter((o) => !o.ok && o.kind === 'crashed')).toHaveLength(1024)
  })
})

describe('the PostgreSQL store’s key cache: 1000 entries per tenant, 10 000 in all', () => {
  const owner = (tenant: string, hash: string): KeyOwner => ({
    kind: 'application',
    application: {
      id: hash,
      tenant_id: tenant,
      name: hash,
      type: 'private',
      permissions: [],
      created_at: '2030-01-01T00:00:00.000Z',
      key_hash: hash,
    },
  })
  /** A cache over a lookup that counts its calls per key. */
  const counted = () => {
    const lookups = new Map<string, number>()
    const cache = keyCache(60_000, async (hash) => {
      lookups.set(hash, (lookups.get(hash) ?? 0) + 1)
      return owner(hash.split(':')[0]!, hash)
    })
    return { cache, lookups }
  }

  it('A’s 1000 keys are all cached; its 1001st evicts its own oldest, never B’s', async () => {
    const { cache, lookups } = counted()
    await cache.find('B:1')
    for (let n = 0; n < 1000; n++) await cache.find(`A:${n}`)
    for (let n = 0; n < 1000; n++) await cache.find(`A:${n}`)
    expect(lookups.get('A:0')).toBe(1)
    expect(lookups.get('A:999')).toBe(1)
    expect(cache.size('A')).toBe(1000)
    await cache.find('A:1000')
    expect(cache.size('A')).toBe(1000)
    await cache.find('B:1')
    await cache.find('A:1')
    await cache.find('A:0')
    expect({ b: lookups.get('B:1'), a1: lookups.get('A:1'), a0: lookups.get('A:0') }).toEqual({
      b: 1,
      a1: 1,
      a0: 2,
    })
  })

  it('10 000 entries in all: a new key evicts the oldest of the tenant holding the most, not B’s', async () => {
    const { cache, lookups } = counted()
    await cache.find('B:1')
    for (let t = 0; t < 9; t++) for (let n = 0; n < 1000; n++) await cache.find(`T${t}:${n}`)
    for (let n = 0; n < 999; n++) await cache.find(`A:${n}`)
    expect(cache.size()).toBe(10_000)
    await cache.find('C:1')
    expect(cache.size()).toBe(10_000)
    expect(cache.size('C')).toBe(1)
    await cache.find('B:1')
    expect(lookups.get('B:1')).toBe(1)
    // The tenant first holding the most (T0, 1000 entries) lost its oldest.
    expect(cache.size('T0')).toBe(999)
    await cache.find('T0:0')
    expect(lookups.get('T0:0')).toBe(2)
  })
})

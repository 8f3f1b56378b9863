import { Worker } from 'node:worker_threads'
import { afterAll, describe, expect, it } from 'vitest'
import { createHttpHandler } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { startSandboxWorker } from '../../adapters/sandbox/index.js'
import { createService, manualClock, type Permission } from '../../entry/index.js'
import type { FormulaRunner } from '../../src/kernel/runner.js'
import { failure, formulaBody, runnersOfFile, world } from '../formulas/setup.js'

const { open, closeAll } = runnersOfFile()
afterAll(closeAll)

/**
 * A sandbox runner whose workers report each run they start (the `started` message a worker sends
 * its pool before it runs a run's code): `started(n)` resolves once `n` runs have started in all.
 * Tests wait on it, not on a sleep, for a run to hold a worker.
 */
function runnerCountingStarts(options: Parameters<typeof open>[0]) {
  let count = 0
  const waiting: { n: number; resolve: () => void }[] = []
  const runner = open({
    ...options,
    startWorker: (config) => {
      const worker = startSandboxWorker(config)
      worker.on('message', (message: unknown) => {
        if ((message as { t?: unknown } | null)?.t !== 'started') return
        count++
        for (const w of waiting.filter((w) => count >= w.n)) w.resolve()
      })
      return worker
    },
  })
  const started = (n: number) =>
    count >= n ? Promise.resolve() : new Promise<void>((resolve) => waiting.push({ n, resolve }))
  return { runner, started, count: () => count }
}

/** A world with reactors made from `code` in both tenants. */
async function reactorsOf(runner: FormulaRunner | undefined, code: string, reactorTimeoutMs?: number) {
  const w = await world({ ...(runner ? { runner } : {}), ...(reactorTimeoutMs ? { reactorTimeoutMs } : {}) })
  const make = async (t: typeof w.a) => {
    const formula = await t.admin.reactorFormulas.create(
      formulaBody({ code, configuration: [], request_parameters: [] }),
    )
    return t.admin.reactors.create({ name: 'r', formula_id: formula.id })
  }
  return { ...w, make }
}

describe('every run starts from fresh state', () => {
  it("a run's global, prototype poison and module variable are seen by no later run", async () => {
    const runner = open({ poolSize: 1 })
    const code = `let calls = 0
      module.exports = async () => {
        calls++
        const seen = { calls, global: typeof globalThis.leak, proto: typeof ({}).poisoned, array: [].includes.name }
        globalThis.leak = 'x'
        Object.prototype.poisoned = 'yes'
        Array.prototype.includes = function stolen() { return true }
        return { raw: seen }
      }`
    const w = await reactorsOf(runner, code)
    const fresh = { calls: 1, global: 'undefined', proto: 'undefined', array: 'includes' }
    const a1 = await w.make(w.a)
    const a2 = await w.make(w.a)
    const b1 = await w.make(w.b)
    for (let i = 0; i < 3; i++) expect((await w.a.client.reactors.react(a1.id, {})).raw).toEqual(fresh)
    expect((await w.a.client.reactors.react(a2.id, {})).raw).toEqual(fresh)
    expect((await w.b.client.reactors.react(b1.id, {})).raw).toEqual(fresh)
  })
})

describe('fair and available', () => {
  it("one tenant's 8 hanging reacts delay another tenant's react by about one timeout at most", async () => {
    const { runner, started: runsStarted } = runnerCountingStarts({ poolSize: 2 })
    const w = await world({ runner, reactorTimeoutMs: 1000 })
    const make = async (t: typeof w.a, code: string) => {
      const f = await t.admin.reactorFormulas.create(
        formulaBody({ code, configuration: [], request_parameters: [] }),
      )
      return t.admin.reactors.create({ name: 'r', formula_id: f.id })
    }
    const hang = await make(w.a, 'module.exports = async () => { for (;;) {} }')
    const quick = await make(w.b, 'module.exports = async () => ({ raw: "b" })')
    const hanging = Array.from({ length: 8 }, () => failure(w.a.client.reactors.react(hang.id, {})))
    // Both workers hold one of a's hanging runs (the other six wait) before b asks.
    await runsStarted(2)
    const started = performance.now()
    expect((await w.b.client.reactors.react(quick.id, {})).raw).toBe('b')
    expect(performance.now() - started).toBeLessThanOrEqual(2500)
    for (const error of await Promise.all(hanging)) expect(error.status).toBe(504)
  })

  it('past the per-tenant backlog a react answers 429 with Retry-After, and other tenants still run', async () => {
    const { runner, started, count } = runnerCountingStarts({ poolSize: 1, maxQueuedPerTenant: 2 })
    const w = await world({ runner, reactorTimeoutMs: 1000 })
    const make = async (t: typeof w.a, code: string) => {
      const f = await t.admin.reactorFormulas.create(
        formulaBody({ code, configuration: [], request_parameters: [] }),
      )
      return t.admin.reactors.create({ name: 'r', formula_id: f.id })
    }
    const hang = await make(w.a, 'module.exports = async () => { for (;;) {} }')
    const quick = await make(w.b, 'module.exports = async () => ({ raw: "b" })')
    await w.b.client.reactors.react(quick.id, {})
    const first = failure(w.a.client.reactors.react(hang.id, {}))
    // The first hanging run holds the one worker before the next two fill a's backlog.
    await started(count() + 1)
    const queued = [
      failure(w.a.client.reactors.react(hang.id, {})),
      failure(w.a.client.reactors.react(hang.id, {})),
    ]
    const refused = await failure(w.a.client.reactors.react(hang.id, {}))
    expect({ status: refused.status, retry: refused.retryAfterSec }).toEqual({ status: 429, retry: 1 })
    expect((await w.b.client.reactors.react(quick.id, {})).raw).toBe('b')
    for (const error of await Promise.all([first, ...queued])) expect(error.status).toBe(504)

    const handler = createHttpHandler(w.service)
    const before = count()
    const again = [failure(w.a.client.reactors.react(hang.id, {}))]
    await started(before + 1)
    again.push(
      failure(w.a.client.reactors.react(hang.id, {})),
      failure(w.a.client.reactors.react(hang.id, {})),
    )
    const response = await handler(
      new Request(`http://vault/reactors/${hang.id}/react`, {
        method: 'POST',
        headers: { 'svc-api-key': w.a.private.key, 'content-type': 'application/json' },
        body: '{}',
      }),
    )
    expect(response.status).toBe(429)
    expect(response.headers.get('retry-after')).toBe('1')
    await Promise.all(again)
  })

  it('a runner whose workers fail to start answers 503, then serves again once starting works', async () => {
    let failing = true
    let attempts = 0
    const runner = open({
      poolSize: 1,
      startWorker: (config) => {
        if (!failing) return startSandboxWorker(config)
        // Alternate the two ways a start fails: a throw, and a thread that dies before it is ready.
        if (attempts++ % 2 === 0)
          throw Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' })
        return new Worker('throw new Error("boot failed")', { eval: true })
      },
    })
    const w = await reactorsOf(runner, 'module.exports = async () => ({ raw: "up" })')
    const reactor = await w.make(w.a)
    const error = await failure(w.a.client.reactors.react(reactor.id, {}))
    expect({ status: error.status, code: error.code }).toEqual({ status: 503, code: 'formula_failed' })
    expect(error.retryAfterSec).toBeGreaterThanOrEqual(1)
    failing = false
    let answer: unknown
    const until = performance.now() + 30_000
    while (performance.now() < until) {
      answer = await w.a.client.reactors.react(reactor.id, {}).catch((e: unknown) => e)
      if (!(answer instanceof Error)) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(answer, String((answer as Error)?.message)).toEqual({ raw: 'up', tokens: {} })
    expect(attempts).toBeGreaterThanOrEqual(1)
  }, 60_000)
})

describe('on by default', () => {
  it('a service made with only { store, clock } runs formulas, in process and over HTTP', async () => {
    const service = createService({ store: memoryStore(), clock: manualClock() })
    try {
      const tenant = await service.admin.createTenant({ name: 't' })
      const app = async (type: 'management' | 'private', permissions: Permission[]) =>
        (await service.admin.createApplication({ tenantId: tenant.id, name: type, type, permissions })).key
      const management = service.connect(await app('management', ['reactor:create', 'reactor:read']))
      const key = await app('private', ['token:use'])
      const formula = await management.reactorFormulas.create(
        formulaBody({
          code: 'module.exports = async (req) => ({ raw: req.args.n * 2 })',
          configuration: [],
          request_parameters: [],
        }),
      )
      const reactor = await management.reactors.create({ name: 'r', formula_id: formula.id })
      expect(await service.connect(key).reactors.react(reactor.id, { args: { n: 21 } })).toEqual({
        raw: 42,
        tokens: {},
      })
      const response = await createHttpHandler(service)(
        new Request(`http://vault/reactors/${reactor.id}/react`, {
          method: 'POST',
          headers: { 'svc-api-key': key, 'content-type': 'application/json' },
          body: JSON.stringify({ args: { n: 2 } }),
        }),
      )
      expect(response.status).toBe(200)
      expect(await response.json()).toEqual({ raw: 4, tokens: {} })
    } finally {
      await service.close()
    }
  })
})

describe('bounded', () => {
  it("memory bombs end as 500 and the host's RSS stays within 512 MiB of idle", async () => {
    const runner = open({ poolSize: 2 })
    const w = await reactorsOf(runner, 'module.exports = async () => ({ raw: 1 })')
    const warm = await w.make(w.a)
    await w.a.client.reactors.react(warm.id, {})
    const idle = process.memoryUsage().rss
    let peak = idle
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss)
    }, 5)
    const bombs = [
      'const a = new Array(1e9); a.fill(0); return { raw: a.length }',
      'let s = "xx"; for (;;) s += s',
      'const a = []; for (;;) a.push("x".repeat(1024) + a.length)',
      'const a = []; for (;;) a.push(new Array(65536).fill(1.5))',
    ]
    try {
      for (const bomb of bombs) {
        const code = `module.exports = async () => { ${bomb} }`
        const f = await w.a.admin.reactorFormulas.create(
          formulaBody({ code, configuration: [], request_parameters: [] }),
        )
        const r = await w.a.admin.reactors.create({ name: 'bomb', formula_id: f.id })
        const errors = await Promise.all([1, 2].map(() => failure(w.a.client.reactors.react(r.id, {}))))
        for (const error of errors) expect(error.status).toBe(500)
      }
    } finally {
      clearInterval(sampler)
    }
    expect(peak - idle).toBeLessThanOrEqual(512 * 1024 * 1024)
    expect(await w.a.client.reactors.react(warm.id, {})).toEqual({ raw: 1, tokens: {} })
  })
})

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

describe('available', () => {
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

/**
 * Formula fairness and bounds under real timeouts (the slow side of
 * test/reactors/isolation.test.ts): hanging reacts that run into their 1 s timeout, a backlog that
 * fills behind them, and memory bombs.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createHttpHandler } from '../../adapters/http/index.js'
import type { FormulaRunner } from '../../src/kernel/runner.js'
import { countingStarts, failure, formulaBody, runnersOfFile, world } from '../formulas/setup.js'

const { open, closeAll } = runnersOfFile()
afterAll(closeAll)

/** A sandbox runner that counts the runs its workers start (see `countingStarts`). */
function runnerCountingStarts(options: Parameters<typeof open>[0]) {
  const starts = countingStarts()
  const runner = open({ ...options, startWorker: starts.startWorker })
  return { runner, started: starts.started, count: starts.count }
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

describe('fair', () => {
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

  it("one tenant's long runs on every worker hold another tenant's react back by a worker's start, not their time limit", async () => {
    const { runner, started: runsStarted } = runnerCountingStarts({ poolSize: 2 })
    const w = await world({ runner, reactorTimeoutMs: 8000 })
    const make = async (t: typeof w.a, code: string) => {
      const f = await t.admin.reactorFormulas.create(
        formulaBody({ code, configuration: [], request_parameters: [] }),
      )
      return t.admin.reactors.create({ name: 'r', formula_id: f.id })
    }
    const hang = await make(w.a, 'module.exports = async () => { for (;;) {} }')
    const quick = await make(w.b, 'module.exports = async () => ({ raw: "b" })')
    let settled = 0
    const hanging = Array.from({ length: 2 }, () =>
      failure(w.a.client.reactors.react(hang.id, {})).finally(() => settled++),
    )
    await runsStarted(2)
    // b's run goes to a worker started for it once a's have run 250 ms: it answers while a's still run.
    expect((await w.b.client.reactors.react(quick.id, {})).raw).toBe('b')
    expect(settled).toBe(0)
    for (const error of await Promise.all(hanging)) expect(error.status).toBe(504)
  }, 60_000)

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

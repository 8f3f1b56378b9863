/**
 * How long a hostile request may hold the event loop: each attack of budgets.test.ts (refused
 * there with a 400 naming its limit) runs while `/healthz` is asked again and again, and the most
 * CPU time the process spent between two answered probes is the longest the loop was held. On a
 * machine others share, wall-clock gaps also count the time the thread waited for a core, so the
 * gap is CPU time (test/timing.ts), and its bound is a multiple of the reference workload
 * (serializing a 4 MiB answer twice, what the vault does anyway for its largest allowed answer)
 * measured in the same process: 100 ms on an idle laptop core is about two references.
 */
import { describe, expect, it } from 'vitest'
import type { FormulaRunner, RunOutcome } from '../../src/kernel/runner.js'
import { json, setup } from '../http/setup.js'
import { referenceMs } from '../timing.js'

type Handler = (request: Request) => Promise<Response>

/** The bound on the CPU time between two probes, in reference workloads. */
const REFERENCES = 2

/**
 * Runs `attack` (after `warm`, a small request of the same kind, so code compiled on first use is
 * not counted) while probing `/healthz`: answers the attack's status and the most CPU time (ms)
 * between two answered probes.
 */
async function whileProbing(
  handler: Handler,
  attack: () => Promise<Response>,
  warm: () => Promise<Response>,
) {
  await (await warm()).text()
  let running = true
  let last = process.cpuUsage()
  let worst = 0
  const probes = (async () => {
    while (running) {
      const answer = await handler(new Request('http://vault.test/healthz'))
      expect(answer.status).toBe(200)
      await answer.text()
      const spent = process.cpuUsage(last)
      worst = Math.max(worst, (spent.user + spent.system) / 1000)
      last = process.cpuUsage()
      await new Promise((resolve) => setTimeout(resolve, 1))
    }
  })()
  await new Promise((resolve) => setTimeout(resolve, 5))
  const response = await attack()
  await response.text()
  running = false
  await probes
  return { status: response.status, heldMs: worst }
}

/** A formula runner that answers at once, without running anything. */
const idleRunner: FormulaRunner = {
  check: async () => null,
  run: async (): Promise<RunOutcome> => ({ ok: true, value: { raw: { ok: true } }, logs: [] }),
  close: async () => {},
}

/** Times an attack is measured at most: a suite that shares the machine can stall one of them. */
const ATTEMPTS = 3

/**
 * Asserts that `attack` is refused with a 400 while holding the loop at most REFERENCES references,
 * in one of ATTEMPTS measurements (each refused; the reference measured again before each). A
 * request that holds the loop past its budget does so every time; the process's CPU time also
 * counts its other threads (the collector's, the store's), which a loaded suite can swell once.
 */
async function heldBriefly(handler: Handler, attack: () => Promise<Response>, warm: () => Promise<Response>) {
  const ratios: number[] = []
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const reference = referenceMs()
    const { status, heldMs } = await whileProbing(handler, attack, warm)
    if (process.env.TIMING_DEBUG) console.log({ status, heldMs, reference, ratio: heldMs / reference })
    expect(status).toBe(400)
    ratios.push(heldMs / reference)
    if (heldMs < REFERENCES * reference) return
  }
  expect.fail(`held the loop ${ratios.map((r) => r.toFixed(2)).join(', ')} references, bound ${REFERENCES}`)
}

describe('a request past its budget holds the event loop briefly', () => {
  it('masks past the expression budget, at write', async () => {
    const { call, keys, handler } = await setup({ runner: null })
    const create =
      (mask: unknown, data: unknown = 'x') =>
      () =>
        call('POST', '/tokens', { key: keys.public, body: { type: 'token', data, mask } })
    const padded = Array.from({ length: 50 }, () => '{{ data | pad_left: 999999 }}')
    await heldBriefly(handler, create(padded), create('{{ data }}'))
    const copies = Array.from({ length: 2000 }, () => '{{ data }}')
    await heldBriefly(
      handler,
      create(copies, 'z'.repeat(5000)),
      create(copies.slice(0, 20), 'z'.repeat(5000)),
    )
  })

  it('JSON Path recursive descent from masks, search indexes and fingerprints', async () => {
    const { call, keys, handler } = await setup({ runner: null })
    let data: unknown = 'leaf'
    for (let i = 0; i < 60; i++) data = { a: data, b: [i, { c: i }] }
    const path = '{{ data | json: "$..*..*..*..*..*" }}'
    const bodies = [
      { type: 'token', data, mask: path },
      { type: 'token', data, search_indexes: [`${path.slice(0, -3)} | size }}`] },
      { type: 'token', data, fingerprint_expression: path },
    ]
    for (const body of bodies)
      await heldBriefly(
        handler,
        () => call('POST', '/tokens', { key: keys.full, body }),
        () => call('POST', '/tokens', { key: keys.full, body: { ...body, data: { a: 1 } } }),
      )
  })

  it('a tokenize sharing one budget across masks, and a page of masked tokens past it', async () => {
    const { call, keys, handler, vault } = await setup({ runner: null })
    const body = { type: 'token', data: 'x', mask: 'x{{ data | pad_left: 999999 }}' }
    await heldBriefly(
      handler,
      () => call('POST', '/tokenize', { key: keys.full, body: [body, body, body] }),
      () => call('POST', '/tokenize', { key: keys.full, body: [{ ...body, mask: '{{ data | nope }}' }] }),
    )
    for (let i = 0; i < 3; i++) await json(await call('POST', '/tokens', { key: keys.public, body }), 201)
    const reader = await vault.service.admin.createApplication({
      tenantId: vault.tenant.id,
      name: 'masked reader',
      type: 'private',
      permissions: ['token:read'],
    })
    await heldBriefly(
      handler,
      () => call('GET', '/tokens?size=3', { key: reader.key }),
      () => call('GET', '/tokens?size=1', { key: reader.key }),
    )
  })

  it('a hostile mask already stored (written before budgets), read masked one token and a page at a time', async () => {
    const { call, keys, handler, vault } = await setup({ runner: null })
    const token = await json<{ id: string }>(
      await call('POST', '/tokens', { key: keys.full, body: { type: 'token', data: 'x' } }),
      201,
    )
    const state = await vault.service.admin.exportState()
    for (const t of state.records.tokens) {
      if (t.id === token.id) t.mask = Array.from({ length: 5000 }, () => '{{ data | pad_left: 999999 }}')
    }
    await vault.service.admin.importState(state)
    const reader = await vault.service.admin.createApplication({
      tenantId: vault.tenant.id,
      name: 'masked reader',
      type: 'private',
      permissions: ['token:read'],
    })
    for (const path of [`/tokens/${token.id}`, '/tokens'])
      await heldBriefly(
        handler,
        () => call('GET', path, { key: reader.key }),
        () => call('GET', '/tokens/nope', { key: reader.key }),
      )
  })

  it('detokenize and react arguments naming a big token hundreds of times', async () => {
    const { call, keys, handler } = await setup({ runner: idleRunner })
    const token = await json<{ id: string }>(
      await call('POST', '/tokens', { key: keys.full, body: { type: 'token', data: 'm'.repeat(100_000) } }),
      201,
    )
    const refs = (n: number) => Array.from({ length: n }, () => `{{ ${token.id} }}`)
    const detokenize = (n: number) => () => call('POST', '/detokenize', { key: keys.full, body: refs(n) })
    await heldBriefly(handler, detokenize(400), detokenize(2))
    const reactor = await json<{ id: string }>(
      await call('POST', '/reactors', { key: keys.management, body: { name: 'echo', code: 'ok' } }),
      201,
    )
    const react = (n: number) => () =>
      call('POST', `/reactors/${reactor.id}/react`, { key: keys.full, body: { args: { many: refs(n) } } })
    await heldBriefly(handler, react(300), react(0))
  })

  it('a 100 000-deep body on every route that takes one', async () => {
    const { call, keys, handler } = await setup({ runner: idleRunner })
    const reactor = await json<{ id: string }>(
      await call('POST', '/reactors', { key: keys.management, body: { name: 'echo', code: 'ok' } }),
      201,
    )
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`
    for (const path of [
      '/detokenize',
      '/tokenize',
      '/tokens',
      '/tokens/search',
      `/reactors/${reactor.id}/react`,
    ]) {
      const send = (body: string) => () =>
        call('POST', path, { key: keys.full, body, headers: { 'content-type': 'application/json' } })
      await heldBriefly(handler, send(deep), send('[[[]]]'))
    }
  })
})

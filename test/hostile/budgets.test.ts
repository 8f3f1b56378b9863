/**
 * Every request has a budget for what it may make, decided before the work is done. Each attack
 * below is a small request from an ordinary key that, without a budget, built answers of hundreds
 * of megabytes, held the event loop for seconds or ended the process. Each now answers a 400
 * naming its limit (nothing stored), while `/healthz` keeps answering (how long the loop is held
 * at most is timed in budgets.slow.test.ts, against a reference workload). Sizes are just
 * past the limits, so each test takes well under a second; the limits themselves are pinned by
 * literal boundary tests (the limit passes, one past it fails).
 */
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { createHttpHandler } from '../../adapters/http/index.js'
import { createService, manualClock } from '../../entry/index.js'
import type { FormulaRunner, RunOutcome } from '../../src/kernel/runner.js'
import { json, problem, setup } from '../http/setup.js'

type Handler = (request: Request) => Promise<Response>

/**
 * Runs `attack` while asking `/healthz` again and again (each probe must answer 200): answers the
 * attack's status and body. `warm`, a small request of the same kind, runs first. How long the
 * event loop is held is timed in `test/hostile/budgets.slow.test.ts`, in CPU time.
 */
async function whileProbing(
  handler: Handler,
  attack: () => Promise<Response>,
  warm?: () => Promise<Response>,
) {
  if (warm) await (await warm()).text()
  let running = true
  const probes = (async () => {
    while (running) {
      const answer = await handler(new Request('http://vault.test/healthz'))
      expect(answer.status).toBe(200)
      await answer.text()
      await new Promise((resolve) => setTimeout(resolve, 1))
    }
  })()
  // Let the probes start before the attack does.
  await new Promise((resolve) => setTimeout(resolve, 5))
  const response = await attack()
  const text = await response.text()
  running = false
  await probes
  return { status: response.status, text }
}

/** A formula runner that counts its runs and the size of the arguments it was handed. */
function countingRunner() {
  const runs: number[] = []
  const runner: FormulaRunner = {
    check: async () => null,
    async run(_code, request): Promise<RunOutcome> {
      runs.push(JSON.stringify(request.args).length)
      return { ok: true, value: { raw: { ok: true } }, logs: [] }
    },
    close: async () => {},
  }
  return { runner, runs }
}

/** How many tokens the tenant holds, as a revealing key lists them. */
async function tokenCount(call: Awaited<ReturnType<typeof setup>>['call'], key: string): Promise<number> {
  const page = await json<{ pagination: { total_items: number } }>(await call('GET', '/tokens', { key }), 200)
  return page.pagination.total_items
}

const dirs: string[] = []
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true })
})

describe('expression budget: 4 000 000 units of work per request', () => {
  it('a mask of many templates each within the per-template limits is refused at write, nothing stored', async () => {
    const { call, keys, handler } = await setup({ runner: null })
    // A first create loads what any create needs, so the probe measures the attack alone.
    await json(
      await call('POST', '/tokens', { key: keys.public, body: { type: 'token', data: 'warm' } }),
      201,
    )
    // 50 templates of one million characters each: 100 million units, past the budget at the 3rd.
    const mask = Array.from({ length: 50 }, () => '{{ data | pad_left: 999999 }}')
    const result = await whileProbing(handler, () =>
      call('POST', '/tokens', { key: keys.public, body: { type: 'token', data: 'x', mask } }),
    )
    expect(result.status, result.text).toBe(400)
    expect(result.text).toContain('4000000 units of work')
    expect(await tokenCount(call, keys.full)).toBe(1)
  })

  it('pins the limit: five templates spending 4 000 000 units pass, one character more fails', async () => {
    const { call, keys } = await setup({ runner: null })
    // Each `{{ data }}y` renders text: it costs 256 (a template) and its characters (799 743 + 1).
    const data = 'd'.repeat(799_743)
    const at = Array.from({ length: 5 }, () => '{{ data }}y')
    const created = await json<{ data: string[] }>(
      await call('POST', '/tokens', { key: keys.full, body: { type: 'token', data, mask: at } }),
      201,
    )
    expect(created.data.map((s) => s.length)).toEqual([799_744, 799_744, 799_744, 799_744, 799_744])
    const past = [...at.slice(0, 4), '{{ data }}yy']
    const refused = await problem(
      await call('POST', '/tokens', { key: keys.full, body: { type: 'token', data, mask: past } }),
      400,
    )
    expect(refused.errors?.['mask.4']?.[0]).toContain('at most 4000000 units of work')
  })

  it('a mask repeating {{ data }} pays for every copy the answer would hold', async () => {
    const { call, keys, handler } = await setup({ runner: null })
    const mask = Array.from({ length: 2000 }, () => '{{ data }}')
    const create = (m: string[]) => () =>
      call('POST', '/tokens', { key: keys.public, body: { type: 'token', data: 'z'.repeat(5000), mask: m } })
    const result = await whileProbing(handler, create(mask), create(mask.slice(0, 20)))
    expect(result.status, result.text).toBe(400)
    expect(result.text).toContain('4000000 units of work')
  })

  it('JSON Path recursive descent counts every node it visits, from masks, search indexes and fingerprints', async () => {
    const { call, keys, handler } = await setup({ runner: null })
    let data: unknown = 'leaf'
    for (let i = 0; i < 60; i++) data = { a: data, b: [i, { c: i }] }
    const path = '{{ data | json: "$..*..*..*..*..*" }}'
    const bodies = [
      { type: 'token', data, mask: path },
      { type: 'token', data, search_indexes: [`${path.slice(0, -3)} | size }}`] },
      { type: 'token', data, fingerprint_expression: path },
    ]
    for (const body of bodies) {
      const result = await whileProbing(
        handler,
        () => call('POST', '/tokens', { key: keys.full, body }),
        () => call('POST', '/tokens', { key: keys.full, body: { ...body, data: { a: 1 } } }),
      )
      expect(result.status, result.text).toBe(400)
      expect(result.text).toContain('4000000 units of work')
    }
    // Only the three small warm-ups were stored.
    expect(await tokenCount(call, keys.full)).toBe(3)
    // A path over a small value still answers.
    const small = await json<{ data: unknown }>(
      await call('POST', '/tokens', {
        key: keys.full,
        body: { type: 'token', data: { x: { y: 7 } }, mask: '{{ data | json: "$..y" }}' },
      }),
      201,
    )
    expect(small.data).toBe(7)
  })

  it('one request shares its budget across tokens: a tokenize of masks each within it, and a list page of them', async () => {
    const { call, keys, handler, vault } = await setup({ runner: null })
    // Each mask makes about two million units (one million made, one million answered): three pass alone.
    const body = { type: 'token', data: 'x', mask: 'x{{ data | pad_left: 999999 }}' }
    const result = await whileProbing(
      handler,
      () => call('POST', '/tokenize', { key: keys.full, body: [body, body, body] }),
      // A warm-up refused for another reason: nothing of it is stored.
      () => call('POST', '/tokenize', { key: keys.full, body: [{ ...body, mask: '{{ data | nope }}' }] }),
    )
    expect(result.status, result.text).toBe(400)
    expect(result.text).toContain('4000000 units of work')
    expect(await tokenCount(call, keys.full)).toBe(0)
    for (let i = 0; i < 3; i++) await json(await call('POST', '/tokens', { key: keys.public, body }), 201)
    // A private key without reveal reads masked: a page of three masks is past one request's budget.
    const reader = await vault.service.admin.createApplication({
      tenantId: vault.tenant.id,
      name: 'masked reader',
      type: 'private',
      permissions: ['token:read'],
    })
    const page = await whileProbing(
      handler,
      () => call('GET', '/tokens?size=3', { key: reader.key }),
      () => call('GET', '/tokens?size=1', { key: reader.key }),
    )
    expect(page.status, page.text).toBe(400)
    expect(page.text).toContain('4000000 units of work')
    const one = await json<{ data: { data: string }[] }>(
      await call('GET', '/tokens?size=1', { key: reader.key }),
      200,
    )
    expect(one.data[0]!.data).toHaveLength(1_000_000)
  })
})

describe('a hostile mask already stored (written before budgets)', () => {
  it('costs each read at most the budget: a masked read answers 400 at once, a revealing read its data', async () => {
    const { call, keys, handler, vault } = await setup({ runner: null })
    const token = await json<{ id: string }>(
      await call('POST', '/tokens', { key: keys.full, body: { type: 'token', data: 'x' } }),
      201,
    )
    // Put the mask in as a restore would, past every write-time check.
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
    for (const path of [`/tokens/${token.id}`, '/tokens']) {
      const result = await whileProbing(
        handler,
        () => call('GET', path, { key: reader.key }),
        () => call('GET', '/tokens/nope', { key: reader.key }),
      )
      expect(result.status, result.text).toBe(400)
      expect(result.text).toContain('4000000 units of work')
    }
    const revealed = await json<{ data: string }>(
      await call('GET', `/tokens/${token.id}`, { key: keys.full }),
      200,
    )
    expect(revealed.data).toBe('x')
  })
})

describe('detokenize and react arguments: at most 4 MiB (4 194 304 characters) of token data', () => {
  it('a token named hundreds of times is refused before the answer is built', async () => {
    const { call, keys, handler } = await setup({ runner: null })
    const token = await json<{ id: string }>(
      await call('POST', '/tokens', { key: keys.full, body: { type: 'token', data: 'm'.repeat(100_000) } }),
      201,
    )
    const body = Array.from({ length: 400 }, () => `{{ ${token.id} }}`)
    const result = await whileProbing(
      handler,
      () => call('POST', '/detokenize', { key: keys.full, body }),
      () => call('POST', '/detokenize', { key: keys.full, body: body.slice(0, 2) }),
    )
    expect(result.status, result.text).toBe(400)
    expect(result.text).toContain('more than 4194304 characters of token data')
  })

  it('pins the limit: 8 references of 524 288 characters pass, a 9th fails', async () => {
    const { call, keys } = await setup({ runner: null })
    // A string of 524 286 characters is 524 288 of JSON.
    const token = await json<{ id: string }>(
      await call('POST', '/tokens', { key: keys.full, body: { type: 'token', data: 'p'.repeat(524_286) } }),
      201,
    )
    const refs = (n: number) => Array.from({ length: n }, () => `{{ ${token.id} }}`)
    const answer = await json<string[]>(
      await call('POST', '/detokenize', { key: keys.full, body: refs(8) }),
      200,
    )
    expect(answer).toHaveLength(8)
    expect(answer[7]).toHaveLength(524_286)
    const refused = await problem(await call('POST', '/detokenize', { key: keys.full, body: refs(9) }), 400)
    expect(refused.detail).toContain('more than 4194304 characters of token data')
  })

  it('a react whose arguments name a big token 300 times is refused before the runner gets them', async () => {
    const { runner, runs } = countingRunner()
    const { call, keys, handler } = await setup({ runner })
    const token = await json<{ id: string }>(
      await call('POST', '/tokens', { key: keys.full, body: { type: 'token', data: 'r'.repeat(100_000) } }),
      201,
    )
    const reactor = await json<{ id: string }>(
      await call('POST', '/reactors', { key: keys.management, body: { name: 'echo', code: 'ok' } }),
      201,
    )
    const args = { many: Array.from({ length: 300 }, () => `{{ ${token.id} }}`) }
    const react = (many: string[]) => () =>
      call('POST', `/reactors/${reactor.id}/react`, { key: keys.full, body: { args: { many } } })
    const result = await whileProbing(handler, react(args.many), react([]))
    expect(result.status, result.text).toBe(400)
    expect(result.text).toContain('more than 4194304 characters of token data')
    expect(runs).toHaveLength(1)
    // Within the limit the runner gets the arguments expanded.
    await json(
      await call('POST', `/reactors/${reactor.id}/react`, {
        key: keys.full,
        body: { args: { many: args.many.slice(0, 3) } },
      }),
      200,
    )
    expect(runs).toHaveLength(2)
    expect(runs[1]).toBeGreaterThan(300_000)
  })
})

describe('nesting depth', () => {
  it('a 100 000-deep body is a 400 on every route that takes one, never a 500', async () => {
    const { runner } = countingRunner()
    const { call, keys, handler, events } = await setup({ runner })
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`
    const reactor = await json<{ id: string }>(
      await call('POST', '/reactors', { key: keys.management, body: { name: 'echo', code: 'ok' } }),
      201,
    )
    const routes = ['/detokenize', '/tokenize', '/tokens', '/tokens/search', `/reactors/${reactor.id}/react`]
    for (const path of routes) {
      const send = (body: string) => () =>
        call('POST', path, { key: keys.full, body, headers: { 'content-type': 'application/json' } })
      const result = await whileProbing(handler, send(deep), send('[[[]]]'))
      expect(result.status, `${path}: ${result.text}`).toBe(400)
      expect(result.text).toContain('nested deeper than 128 levels')
    }
    expect(events.filter((e) => e.kind === 'error')).toEqual([])
  })

  it('pins the body limit: 128 levels are read, 129 are refused', async () => {
    const { call, keys } = await setup({ runner: null })
    const nested = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`
    // 128 levels get past the body reader (detokenize then refuses them at its own 64).
    const read = await problem(
      await call('POST', '/detokenize', {
        key: keys.full,
        body: nested(128),
        headers: { 'content-type': 'application/json' },
      }),
      400,
    )
    expect(read.detail).toContain('nested deeper than 64 levels')
    const refused = await problem(
      await call('POST', '/detokenize', {
        key: keys.full,
        body: nested(129),
        headers: { 'content-type': 'application/json' },
      }),
      400,
    )
    expect(refused.errors).toEqual({ body: ['is nested deeper than 128 levels'] })
    // Refused before it is parsed: an unclosed deep body is too deep, not invalid JSON.
    const unclosed = await call('POST', '/detokenize', {
      key: keys.full,
      body: '['.repeat(200_000),
      headers: { 'content-type': 'application/json' },
    })
    expect((await problem(unclosed, 400)).errors).toEqual({ body: ['is nested deeper than 128 levels'] })
  })

  it('pins the values a body holds: 10 000 elements and members are read, 10 001 refused before parsing, whatever the layout', async () => {
    const { call, keys } = await setup({ runner: null })
    const send = (body: string) =>
      call('POST', '/detokenize', { key: keys.full, body, headers: { 'content-type': 'application/json' } })
    const members = (n: number) =>
      JSON.stringify(Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i])))
    const read = await json<Record<string, number>>(await send(members(10_000)), 200)
    expect(Object.keys(read)).toHaveLength(10_000)
    const refusal = { body: ['holds more than 10000 values (array elements and object members)'] }
    expect((await problem(await send(members(10_001)), 400)).errors).toEqual(refusal)
    // Nested, spaced, with empty containers and commas inside strings: each value counted once.
    const spaced = (n: number) =>
      `{ "a" : [ ${Array.from({ length: n - 3 }, () => '"x,y"').join(' , ')} ] , "b" : [ ] , "c" : { } }`
    expect(Object.keys(await json<object>(await send(spaced(10_000)), 200))).toEqual(['a', 'b', 'c'])
    expect((await problem(await send(spaced(10_001)), 400)).errors).toEqual(refusal)
  })

  it('pins the input limit in the core: detokenize takes 64 levels, refuses 65', async () => {
    const { vault } = await setup({ runner: null })
    const client = vault.service.connect(vault.keys.private)
    const nested = (n: number) => {
      let v: unknown = 'leaf'
      for (let i = 0; i < n; i++) v = [v]
      return v
    }
    expect(await client.tokens.detokenize(nested(64) as never)).toEqual(nested(64))
    await expect(client.tokens.detokenize(nested(65) as never)).rejects.toMatchObject({
      code: 'validation_failed',
      issues: { body: ['is nested deeper than 64 levels'] },
    })
    // Far deeper input costs a bounded walk, not the stack.
    await expect(client.tokens.detokenize(nested(100_000) as never)).rejects.toMatchObject({
      code: 'validation_failed',
    })
  })
})

describe('detokenization expressions a request holds', () => {
  it('1 000 references (one token named again and again) are answered, 1 001 are a 400 before any token is read: detokenize and the proxy', async () => {
    const { vault } = await setup({ runner: null })
    const client = vault.service.connect(vault.keys.private)
    const token = await client.tokens.create({ type: 'token', data: 'x' })
    const references = (n: number) => `{{ ${token.id} }}`.repeat(n)
    expect(await client.tokens.detokenize({ v: references(1000) })).toEqual({ v: 'x'.repeat(1000) })
    // Spread over values, each one counts as well.
    const spread = Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`k${i}`, `{{ ${token.id} }}`]))
    const reason = 'holds more than 1000 detokenization expressions (each one counts)'
    for (const body of [{ v: references(1001) }, spread]) {
      await expect(client.tokens.detokenize(body)).rejects.toMatchObject({
        code: 'validation_failed',
        issues: { body: [reason] },
      })
    }
    // The proxy's body: refused before anything is sent (no egress is listed: a sent call would fail otherwise).
    await expect(
      client.proxy.invoke({
        method: 'POST',
        url: 'https://psp.test',
        path: '/x',
        headers: {},
        body: references(1001),
      }),
    ).rejects.toMatchObject({ code: 'validation_failed', issues: { body: [reason] } })
  })
})

describe('idempotency keeps answers of at most 64 KiB', () => {
  it('a big answer is marked not replayable, its repeat answers 409, and the store stays small and opens again', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tokenvault-budgets-'))
    dirs.push(dir)
    const masterKey = Buffer.alloc(32, 7)
    const open = async () =>
      createService({
        store: await fileStore({ path: dir, durability: 'none' }),
        clock: manualClock('2030-01-01T00:00:00.000Z'),
        masterKey,
        runner: null,
      })
    const service = await open()
    const tenant = await service.admin.createTenant({ name: 'idem' })
    const app = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'reader',
      type: 'private',
      permissions: ['token:create', 'token:read'],
      rules: [
        {
          description: 'all',
          priority: 1,
          container: '/',
          transform: 'reveal',
          permissions: ['token:create', 'token:read'],
        },
      ],
    })
    const handler = createHttpHandler(service)
    const post = (path: string, body: unknown, idempotencyKey?: string) =>
      handler(
        new Request(`http://vault.test${path}`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'svc-api-key': app.key,
            ...(idempotencyKey ? { 'svc-idempotency-key': idempotencyKey } : {}),
          },
          body: JSON.stringify(body),
        }),
      )
    const token = (await (await post('/tokens', { type: 'token', data: 'i'.repeat(200_000) })).json()) as {
      id: string
    }
    const refs = Array.from({ length: 20 }, () => `{{ ${token.id} }}`)
    for (let i = 0; i < 10; i++) {
      const answer = await post('/detokenize', refs, `key-${i}`)
      expect(answer.status).toBe(200)
      expect(answer.headers.get('idempotency-replayable')).toBe('false')
      expect((await answer.text()).length).toBeGreaterThan(4_000_000)
    }
    const repeat = await post('/detokenize', refs, 'key-0')
    expect(repeat.status).toBe(409)
    expect(await repeat.text()).toContain('longer than the 65536 bytes kept')
    // A small answer is kept and replayed, without the header.
    const small = await post('/detokenize', { n: 1 }, 'small')
    expect(small.headers.get('idempotency-replayable')).toBeNull()
    expect(await (await post('/detokenize', { n: 1 }, 'small')).json()).toEqual({ n: 1 })
    await service.close()
    // Ten 4 MB answers would be 40 MB kept; what is on disk is the token and small records.
    let bytes = 0
    for (const name of await readdir(dir, { recursive: true })) {
      const info = await stat(join(dir, name))
      if (info.isFile()) bytes += info.size
    }
    expect(bytes).toBeLessThan(1_000_000)
    const again = await open()
    expect(await again.ready()).toBe(true)
    await again.close()
  })
})

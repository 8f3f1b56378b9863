/**
 * A formula's answer is JSON of at most 64 levels below its `raw` (or `tokenize`), like every JSON
 * value the vault takes: 5 000 levels overflowed the stack of the answer written back, a 500 for a
 * react and, for an asynchronous one, a run retried for good whose result never came (409 forever).
 */
import { describe, expect, it } from 'vitest'
import { createHttpHandler } from '../../adapters/http/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import type { FormulaRunner } from '../../src/kernel/index.js'
import { keyMaker } from '../support/tenants.js'

/** `levels` arrays one in another around a string: `[["x"]]` is 2. */
const nested = (levels: number): unknown => {
  let v: unknown = 'x'
  for (let i = 0; i < levels; i++) v = [v]
  return v
}

/** A stand-in runner answering `{ raw: nested(args.levels) }` (the answer's checks are under test, not the sandbox). */
let runs = 0
const runner: FormulaRunner = {
  check: async () => null,
  run: async (_code, request) => {
    runs++
    return { ok: true, value: { raw: nested((request.args as { levels: number }).levels) }, logs: [] }
  },
  close: async () => {},
}

async function setup() {
  const service = createService({
    store: memoryStore(),
    clock: manualClock('2030-01-01T00:00:00.000Z'),
    runner,
  })
  const tenant = await service.admin.createTenant({ name: 't' })
  const key = keyMaker(service, tenant.id)
  const admin = service.connect(await key('management', ['reactor:create']))
  const reactor = await admin.reactors.create({ name: 'deep', code: 'module.exports = async () => ({})' })
  const user = await key('private', ['token:use'])
  return { service, reactor, user, client: service.connect(user) }
}

describe('a formula answer nested deep', () => {
  it('answers 64 levels below raw, refuses 65 as the formula’s failure (500 with its reason, in process and over HTTP)', async () => {
    const { service, reactor, user, client } = await setup()
    const ok = await client.reactors.react(reactor.id, { args: { levels: 64 } })
    expect(JSON.stringify(ok.raw)).toBe(JSON.stringify(nested(64)))
    const reason = "the reactor formula's answer nests deeper than 64 levels"
    await expect(client.reactors.react(reactor.id, { args: { levels: 65 } })).rejects.toMatchObject({
      code: 'formula_failed',
      message: reason,
    })
    const http = createHttpHandler(service, { headerPrefix: 'BT', log: () => {} })
    const response = await http(
      new Request(`http://localhost/reactors/${reactor.id}/react`, {
        method: 'POST',
        headers: { 'BT-API-KEY': user, 'content-type': 'application/json' },
        body: JSON.stringify({ args: { levels: 5000 } }),
      }),
    )
    expect(response.status).toBe(500)
    expect(await response.text()).toContain(reason)
    await service.close()
  })

  it('ends an asynchronous react of 5 000 levels with that failure, once', async () => {
    const { service, reactor, client } = await setup()
    runs = 0
    const { asyncReactorRequestId: id } = await client.reactors.reactAsync(reactor.id, {
      args: { levels: 5000 },
    })
    await service.admin.webhooks.deliverDue()
    await service.admin.webhooks.deliverDue()
    expect(runs).toBe(1)
    await expect(client.reactors.result(reactor.id, id)).rejects.toMatchObject({
      code: 'formula_failed',
      message: "the reactor formula's answer nests deeper than 64 levels",
    })
    await service.close()
  })
})

/**
 * Errors thrown by formula code with the reactor formulas SDK answer the documented error response
 * (developers.basistheory.com, docs/api/reactors/reactor-errors: "Error Types" — each type's status
 * and detail — and "Error Constructors" — the constructor argument as the `errors` block), read by
 * the legacy SDK (`@basis-theory/basis-theory-js@1.79.3`) as `status` and `data`.
 */
import { once } from 'node:events'
import { createServer } from 'node:http'
import { BasisTheory } from '@basis-theory/basis-theory-js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { toNodeListener } from '../../adapters/http/index.js'
import { sandboxRunner } from '../../adapters/sandbox/index.js'
import { setup } from './setup.js'

const runner = sandboxRunner({ poolSize: 1 })
// The sandbox's first run waits for its worker to start: on a loaded machine that is not what these
// tests time (test/reactors/start.test.ts does), so it happens here, with time to spare.
beforeAll(async () => {
  const warm = await runner.run(
    'module.exports = async function () { return { raw: 1 } }',
    { args: {}, configuration: {} },
    { timeoutMs: 120_000 },
  )
  expect(warm.ok).toBe(true)
}, 180_000)
afterAll(() => runner.close())

const TYPES = [
  ['BadRequestError', 400, 'Bad Request'],
  ['AuthenticationError', 401, 'Authentication Failed'],
  ['InvalidPaymentMethodError', 402, 'Invalid Payment Method'],
  ['AuthorizationError', 403, 'Forbidden'],
  ['RateLimitError', 429, 'Rate Limit Exceeded'],
  ['ReactorRuntimeError', 500, 'Reactor Runtime Error'],
] as const

const CODE = `module.exports = async function (req) {
  const sdk = require('@basis-theory/basis-theory-reactor-formulas-sdk-js')
  throw new sdk[req.args.type](req.args.errors)
}`

async function vault() {
  const t = await setup({ runner: { ...runner, close: async () => {} }, headerPrefix: 'BT' })
  const management = t.service.connect(t.keys.management)
  const formula = await management.reactorFormulas.create({
    name: 'thrower',
    type: 'private',
    code: CODE,
    configuration: [],
    request_parameters: [],
  })
  const reactor = await management.reactors.create({ name: 'thrower', formula: { id: formula.id } })
  return { ...t, reactor }
}

describe('reactor errors over HTTP (docs: api/reactors/reactor-errors)', () => {
  it.each(TYPES)('%s answers %i with its detail and the errors block', async (type, status, detail) => {
    const { call, keys, reactor } = await vault()
    const response = await call('POST', `/reactors/${reactor.id}/react`, {
      key: keys.full,
      body: { args: { type, errors: { card: 'declined', codes: ['05', '51'] } } },
    })
    expect(response.status).toBe(status)
    expect(response.headers.get('content-type')).toBe('application/problem+json')
    expect(await response.json()).toEqual({
      type: 'about:blank',
      title: expect.any(String),
      status,
      detail,
      errors: { card: ['declined'], codes: ['05', '51'] },
    })
  })

  it('the legacy SDK reads the status and the errors block', async () => {
    const { handler, keys, reactor } = await vault()
    const server = createServer(toNodeListener(handler))
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    try {
      const address = server.address()
      if (address === null || typeof address === 'string') throw new Error('no port')
      const options = { apiBaseUrl: `http://localhost:${address.port}`, disableTelemetry: true }
      const bt = await new BasisTheory().init(keys.full, options)
      for (const [type, status, detail] of TYPES) {
        const error = await bt.reactors
          .react(reactor.id, { args: { type, errors: 'My error message' } })
          .then(
            () => {
              throw new Error('expected the react to fail')
            },
            (e: { status: number; data: { detail: string; errors: unknown } }) => e,
          )
        expect({ status: error.status, detail: error.data.detail, errors: error.data.errors }).toEqual({
          status,
          detail,
          errors: { error: ['My error message'] },
        })
      }
    } finally {
      server.close()
    }
  })
})

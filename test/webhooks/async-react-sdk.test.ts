/**
 * node-sdk 5's asynchronous react, unmodified, against the HTTP handler on a real socket:
 * `reactors.reactAsync` (POST /reactors/{id}/react-async → 202 `{ asyncReactorRequestId }`) and
 * `reactors.results.get` (GET /reactors/{id}/results/{request_id}), as developers.basistheory.com ›
 * Reactors › "Invoke a Reactor Asynchronously" and "Retrieve Result" document them.
 */
import { BasisTheoryError } from '@basis-theory/node-sdk'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FormulaRunner } from '../../src/kernel/index.js'
import { type CurrentSdkVault, startCurrentSdkVault } from '../http/current-sdk-vault.js'

/** A stand-in runner: answers `{ raw: { sum: a + b } }` (the outbox is under test, not the sandbox). */
const runner: FormulaRunner = {
  check: async () => null,
  run: async (_code, request) => {
    const { a, b } = request.args as { a: number; b: number }
    return { ok: true, value: { raw: { sum: a + b } }, logs: [] }
  },
  close: async () => {},
}

let vault: CurrentSdkVault
beforeAll(async () => {
  vault = await startCurrentSdkVault(runner)
})
afterAll(() => vault.close())

describe('node-sdk 5 asynchronous reacts', () => {
  it('reactAsync answers a request id; results.get answers the react result once run', async () => {
    const bt = vault.node(vault.management)
    const reactor = await bt.reactors.create({ name: 'Adder', code: 'module.exports = async () => ({})' })
    const user = await vault.key('private', ['token:use'])
    const client = vault.node(user)
    const accepted = await client.reactors.reactAsync(reactor.id!, { args: { a: 2, b: 3 } })
    expect(accepted.asyncReactorRequestId).toMatch(/^[0-9a-f-]{36}$/)
    await vault.service.admin.webhooks.deliverDue()
    const result = await client.reactors.results.get(reactor.id!, accepted.asyncReactorRequestId!)
    expect(result).toEqual({ raw: { sum: 5 }, tokens: {} })
    const missing = await client.reactors.results
      .get(reactor.id!, '0190f3a0-0000-7000-8000-000000000000')
      .catch((e: unknown) => e)
    expect(missing).toBeInstanceOf(BasisTheoryError)
    expect((missing as BasisTheoryError).statusCode).toBe(404)
  }, 60_000)
})

import { afterEach, describe, expect, it } from 'vitest'
import { type VaultMatchers, vaultMatchers } from '../../testing/index.js'
import { createTestVault, type TestVault } from '../../testing/vault.js'
import { fakeRunner } from '../http/fake-runner.js'

expect.extend(vaultMatchers)

declare module 'vitest' {
  // biome-ignore lint/suspicious/noExplicitAny: vitest's own signature
  interface Assertion<T = any> extends VaultMatchers<T> {}
}

const STRIPE = 'https://api.stripe.test'
let vault: TestVault
afterEach(() => vault?.close())

const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 }

async function withCards(n = 2) {
  vault = await createTestVault({ destinations: { [STRIPE]: 'echo' }, runner: fakeRunner() })
  const client = vault.client()
  const ids: string[] = []
  for (let i = 0; i < n; i++) ids.push((await client.tokens.create({ type: 'card', data: card })).id)
  return { client, ids, app: vault.applications.private }
}

describe('exposure: each time plaintext leaves the vault, counted per application, token and operation', () => {
  it('creates and updates reveal nothing; a revealed get counts once per call', async () => {
    const { client, ids, app } = await withCards()
    await client.tokens.update(ids[0]!, { metadata: { a: 'b' } })
    expect(vault.exposure().total).toBe(0)
    await client.tokens.get(ids[0]!)
    await client.tokens.get(ids[0]!)
    expect(vault.exposure()).toEqual({
      total: 2,
      byApplication: { [app.name]: 2 },
      byToken: { [ids[0]!]: 2 },
      byOperation: { 'token.get': 2 },
      rows: [
        {
          application: app.name,
          principal_id: app.id,
          kind: 'application',
          token_id: ids[0],
          operation: 'token.get',
          count: 2,
        },
      ],
    })
  })

  it('a list, a search with data and a detokenize count each token they answer in the clear', async () => {
    const { client, ids } = await withCards(3)
    await client.tokens.list({ type: ['card'] })
    await client.tokens.search({ query: 'type:card' })
    await client.tokens.detokenize({ a: `{{ ${ids[0]} }}`, b: `{{ ${ids[1]} }}`, again: `{{ ${ids[0]} }}` })
    expect(vault.exposure().byOperation).toEqual({
      'token.list': 3,
      'token.search': 3,
      'token.detokenize': 2,
    })
    expect(vault.exposure().byToken).toEqual({ [ids[0]!]: 3, [ids[1]!]: 3, [ids[2]!]: 2 })
  })

  it("a react's arguments and a proxy's expressions count under their operations", async () => {
    const { client, ids } = await withCards(1)
    const mgmt = vault.client('management')
    const reactor = await mgmt.reactors.create({ name: 'charge', code: 'module.exports = async () => ({})' })
    await client.reactors.react(reactor.id, { args: { card: `{{ ${ids[0]} }}` } })
    await client.proxy.invoke({
      method: 'POST',
      url: `${STRIPE}/v1/charges`,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ number: `{{ ${ids[0]} | json: '$.number' }}` }),
    })
    expect(vault.exposure().byOperation).toEqual({ 'reactor.react': 1, 'proxy.invoke': 1 })
  })

  it('masked reads and refused calls count nothing', async () => {
    vault = await createTestVault({
      private: {
        rules: [
          {
            description: 'masked',
            priority: 1,
            container: '/',
            transform: 'mask',
            permissions: ['token:create', 'token:read'],
          },
        ],
      },
    })
    const client = vault.client()
    const t = await client.tokens.create({ type: 'card', data: card })
    expect((await client.tokens.get(t.id)).data).toEqual({
      number: 'XXXXXXXXXXXX4242',
      expiration_month: 12,
      expiration_year: 2030,
    })
    expect(await client.tokens.detokenize({ a: `{{ ${t.id} }}` })).toEqual({
      a: { number: 'XXXXXXXXXXXX4242', expiration_month: 12, expiration_year: 2030 },
    })
    await expect(vault.client('public').tokens.get(t.id)).rejects.toThrow()
    expect(vault.exposure().total).toBe(0)
  })

  it('reset starts the count again', async () => {
    const { client, ids } = await withCards(1)
    await client.tokens.get(ids[0]!)
    await vault.reset()
    expect(vault.exposure().total).toBe(0)
  })
})

describe('toExposeAtMost', () => {
  it('passes at the budget and fails one past it, naming the application', async () => {
    const { client, ids, app } = await withCards(1)
    await client.tokens.get(ids[0]!)
    await client.tokens.get(ids[0]!)
    expect(vault).toExposeAtMost({ [app.name]: 2 })
    expect(vault).toExposeAtMost({ [app.id]: 2 })
    expect(() => expect(vault).toExposeAtMost({ [app.name]: 1 })).toThrow(
      `${app.name} (${app.id}) took 2 plaintexts out, at most 1 allowed`,
    )
    expect(() => expect(vault).toExposeAtMost({ '*': 1 })).toThrow('at most 1 allowed')
    expect(vault).toExposeAtMost({ 'another-app': 0 })
  })
})

describe('toContainVaultPlaintext', () => {
  it('reads as the tests do, with .not', async () => {
    await withCards(1)
    expect(['charged card ending 4242']).not.toContainVaultPlaintext(vault)
    expect([`charged ${card.number}`]).toContainVaultPlaintext(vault)
    expect(() => expect([`charged ${card.number}`]).not.toContainVaultPlaintext(vault)).toThrow(
      /as digits at \$\[0\]/,
    )
    await expect(Response.json({ pan: card.number })).toContainVaultPlaintext(vault)
  })
})

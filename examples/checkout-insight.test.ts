import { createTestVault, type VaultMatchers, vaultMatchers } from 'tokenvault/testing'
import { afterAll, expect, it } from 'vitest'

// The matchers, in vitest (Jest: the same expect.extend, and `namespace jest { interface Matchers<R> … }`).
expect.extend(vaultMatchers)
declare module 'vitest' {
  // biome-ignore lint/suspicious/noExplicitAny: vitest's own signature
  interface Assertion<T = any> extends VaultMatchers<T> {}
}

const PSP = 'https://psp.example'
// The payment service provider runs in the test: it answers, and the vault keeps what it received.
const vault = await createTestVault({
  destinations: { [PSP]: () => Response.json({ id: 'ch_1', status: 'succeeded' }) },
})
afterAll(() => vault.close())

/** The app's own database and logs, as the app under test would keep them. */
const db: { orders: { id: string; card_token: string; last4: string; status: string }[] } = { orders: [] }
const logs: string[] = []

/** The app's payment code: it sends the card through the vault's proxy and keeps only the token. */
async function pay(orderId: string, cardToken: string) {
  const client = vault.client()
  const card = await client.tokens.get(cardToken)
  const answer = await client.proxy.invoke({
    method: 'POST',
    url: `${PSP}/v1/charges`,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ amount: 1000, number: `{{ ${cardToken} | json: '$.number' }}` }),
  })
  const last4 = String((card.data as { number: string }).number).slice(-4)
  logs.push(`order ${orderId}: charged card ending ${last4}, psp answered ${answer.status}`)
  db.orders.push({ id: orderId, card_token: cardToken, last4, status: 'paid' })
}

it('a checkout sends the card to the provider and leaks it nowhere else', async () => {
  const canary = await vault.leaks.canary('card')
  await pay('o-1', canary.id)
  // The provider got the card number (through the proxy), and nothing else did.
  expect(vault.proxy.received(PSP)).toContainVaultPlaintext(vault)
  expect(logs).not.toContainVaultPlaintext(vault)
  expect(db.orders).not.toContainVaultPlaintext(vault)
  // The app read the card once in the clear and sent it once through the proxy: its budget.
  expect(vault).toExposeAtMost({ 'private application': 2 })
  expect(vault.exposure().byOperation).toEqual({ 'token.get': 1, 'proxy.invoke': 1 })
})

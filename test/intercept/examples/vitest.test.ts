import { BasisTheoryClient } from '@basis-theory/node-sdk'
import { type Interception, intercept } from 'tokenvault/intercept'
import { createTestVault, type TestVault } from 'tokenvault/testing'
import { afterEach, beforeEach, expect, it } from 'vitest'

// Production code builds its client with no base URL; the test leaves it that way.
function paymentsClient(apiKey: string) {
  return new BasisTheoryClient({ apiKey })
}

let vault: TestVault
let interception: Interception
beforeEach(async () => {
  vault = await createTestVault()
  interception = intercept(vault) // api.basistheory.com is now this vault, in process
})
afterEach(async () => {
  interception.close() // fetch and http are Node's own again
  await vault.close()
})

it('stores a card through the SDK as production code calls it', async () => {
  const bt = paymentsClient(vault.keys.private)
  const token = await bt.tokens.create({ type: 'card', data: { number: '4242424242424242' } })
  expect((await vault.client().tokens.get(token.id!)).data).toEqual({ number: '4242424242424242' })
})

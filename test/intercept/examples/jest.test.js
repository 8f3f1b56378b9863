const { BasisTheory } = require('@basis-theory/basis-theory-js')
const { BasisTheoryClient } = require('@basis-theory/node-sdk')
const { intercept } = require('tokenvault/intercept')
const { createTestVault } = require('tokenvault/testing')

let vault
let interception
beforeEach(async () => {
  vault = await createTestVault()
  interception = intercept(vault)
})
afterEach(async () => {
  interception.close()
  await vault.close()
})

test('node-sdk 5 and basis-theory-js, with no base URL', async () => {
  const bt = new BasisTheoryClient({ apiKey: vault.keys.private })
  const token = await bt.tokens.create({ type: 'token', data: 'from node-sdk' })
  const legacy = await new BasisTheory().init(vault.keys.private)
  expect((await legacy.tokens.retrieve(token.id)).data).toBe('from node-sdk')
})

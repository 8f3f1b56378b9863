import { BasisTheoryClient } from '@basis-theory/node-sdk'
import { intercept } from 'tokenvault/intercept'
import { createTestVault } from 'tokenvault/testing'
import { afterAll, expect, it } from 'vitest'

const vault = await createTestVault()
const interception = intercept(vault)
afterAll(async () => {
  interception.close()
  await vault.close()
})

it('the production client reaches the test vault', async () => {
  const bt = new BasisTheoryClient({ apiKey: vault.keys.private })
  const token = await bt.tokens.create({ type: 'token', data: { secret: 'x' } })
  expect((await vault.client().tokens.get(token.id!)).data).toEqual({ secret: 'x' })
})

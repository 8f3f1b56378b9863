/**
 * What a proxy body may hold before it is walked for expressions: a JSON body at most 10 000 values
 * (as the API's bodies), a form body at most 10 000 fields when it holds an expression; strings
 * with `{{` but no expression cost no copy of their path; a body a transform gets that is too deep
 * or too wide is handed to it as text, not parsed (it overflowed the stack: a 500).
 */
import { afterEach, expect, it } from 'vitest'
import { createTestVault, type TestVault } from '../../testing/vault.js'
import { failure } from '../core/setup.js'

const DEST = 'https://api.dest.test'
let vault: TestVault
afterEach(() => vault?.close())

async function setup() {
  vault = await createTestVault({ destinations: { [DEST]: 'echo' } })
  const token = await vault.client().tokens.create({ type: 'token', data: 'secret-value' })
  return { token, client: vault.client() }
}

const json = { 'content-type': 'application/json' }

it('walks a JSON body of 10 000 values; 10 001 are a 400 naming body, and nothing is sent', async () => {
  const { token, client } = await setup()
  const values = (n: number) =>
    JSON.stringify([...Array.from({ length: n - 1 }, () => 0), `{{ ${token.id} }}`])
  await client.proxy.invoke({ method: 'POST', url: DEST, headers: json, body: values(10_000) })
  expect(vault.proxy.received()[0]!.body.endsWith('"secret-value"]')).toBe(true)
  const past = await failure(
    client.proxy.invoke({ method: 'POST', url: DEST, headers: json, body: values(10_001) }),
  )
  expect(Object.keys(past.issues ?? {})).toEqual(['body'])
  expect(vault.proxy.received()).toHaveLength(1)
})

it('sends a body of 5 000 strings with `{{` but no expression under a 200 000-character key as it is', async () => {
  const { client } = await setup()
  const body = JSON.stringify({ ['k'.repeat(200_000)]: Array(5_000).fill('{{') })
  await client.proxy.invoke({ method: 'POST', url: DEST, headers: json, body })
  expect(vault.proxy.received()[0]!.body).toBe(body)
})

it('replaces in a form of 10 000 fields; 10 001 with an expression are a 400; without one, any form passes as it is', async () => {
  const { token, client } = await setup()
  const form = { 'content-type': 'application/x-www-form-urlencoded' }
  const fields = (n: number) => `${'a=1&'.repeat(n - 1)}x={{ ${token.id} }}`
  await client.proxy.invoke({ method: 'POST', url: DEST, headers: form, body: fields(10_000) })
  expect(vault.proxy.received()[0]!.body.endsWith('x=secret-value')).toBe(true)
  const past = await failure(
    client.proxy.invoke({ method: 'POST', url: DEST, headers: form, body: fields(10_001) }),
  )
  expect(Object.keys(past.issues ?? {})).toEqual(['body'])
  const plain = 'a=1&'.repeat(20_000)
  await client.proxy.invoke({ method: 'POST', url: DEST, headers: form, body: plain })
  expect(vault.proxy.received()[1]!.body).toBe(plain)
})

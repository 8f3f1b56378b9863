/**
 * Requests answered through `tokenvault/intercept` are bounded as the HTTP handler bounds them: the
 * request body limit (1 MiB, 1048576 bytes, by default) holds for a body sent with `fetch` to
 * Basis Theory's host, and a bad request is a 4xx problem that stores nothing.
 */
import { afterEach, beforeEach, expect, it } from 'vitest'
import { type Interception, intercept } from '../../entry/intercept.js'
import { createTestVault, type TestVault } from '../../testing/index.js'

let vault: TestVault
let interception: Interception
beforeEach(async () => {
  vault = await createTestVault()
  interception = intercept(vault)
})
afterEach(async () => {
  interception.close()
  await vault.close()
})

/** POSTs a token body of exactly `bytes` bytes to the production host. */
function post(bytes: number): Promise<Response> {
  const frame = '{"type":"token","data":""}'
  const body = `{"type":"token","data":"${'x'.repeat(bytes - frame.length)}"}`
  expect(Buffer.byteLength(body)).toBe(bytes)
  return fetch('https://api.basistheory.com/tokens', {
    method: 'POST',
    headers: { 'BT-API-KEY': vault.keys.private, 'content-type': 'application/json' },
    body,
  })
}

it('a body of 1048576 bytes is read; one byte more answers 413 and stores nothing', async () => {
  expect((await post(1_048_576)).status).toBe(201)
  const count = async () => (await vault.client().tokens.list({})).pagination.total_items
  expect(await count()).toBe(1)
  const over = await post(1_048_577)
  expect(over.status).toBe(413)
  expect(over.headers.get('content-type')).toMatch(/application\/problem\+json/)
  expect(await count()).toBe(1)
})

it('a body that is not JSON answers a 4xx problem, not a 5xx', async () => {
  const answer = await fetch('https://api.basistheory.com/tokens', {
    method: 'POST',
    headers: { 'BT-API-KEY': vault.keys.private, 'content-type': 'application/json' },
    body: '{"type":',
  })
  expect(answer.status).toBe(400)
  expect((await vault.client().tokens.list({})).pagination.total_items).toBe(0)
})

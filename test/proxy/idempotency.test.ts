/**
 * A proxy call with an idempotency key (`<prefix>-IDEMPOTENCY-KEY` on POST, PUT, PATCH) is sent
 * once: a repeat with the same key and request answers the first answer without reaching the
 * destination again; the same key with another request is a 400.
 */
import { afterEach, expect, it } from 'vitest'
import { createTestVault, type TestVault } from '../../testing/vault.js'

const DEST = 'https://api.stripe.test'
let vault: TestVault
afterEach(() => vault?.close())

it('a repeated proxy POST with one idempotency key reaches the destination once and answers the first answer', async () => {
  let n = 0
  vault = await createTestVault({ destinations: { [DEST]: () => Response.json({ charge: ++n }) } })
  const client = vault.service.connect(vault.keys.private, { idempotencyKey: 'charge-1' })
  const call = {
    method: 'POST',
    url: DEST,
    headers: { 'content-type': 'application/json' },
    body: '{"amount":1}',
  }
  const first = await client.proxy.invoke(call)
  const again = await client.proxy.invoke(call)
  expect(JSON.parse(first.body)).toEqual({ charge: 1 })
  expect(again).toEqual(first)
  expect(vault.proxy.received()).toHaveLength(1)
  const other = await client.proxy.invoke({ ...call, body: '{"amount":2}' }).catch((e: unknown) => e)
  expect((other as { code?: string }).code).toBe('validation_failed')
  expect(vault.proxy.received()).toHaveLength(1)
})

import { BasisTheoryClient } from '@basis-theory/node-sdk'
import { describe, expect, it } from 'vitest'
import { createTestVault } from '../../testing/vault.js'
import { setup } from './setup.js'

const get = (key: Record<string, string>) => new Request('http://vault.test/tokens/t1', { headers: key })

describe('header prefixes', () => {
  it('by default accepts the key as SVC-API-KEY and as BT-API-KEY (what the official SDKs send)', async () => {
    const { handler, keys, call } = await setup({ runner: null })
    expect(
      (await call('POST', '/tokens', { key: keys.full, body: { id: 't1', type: 'token', data: 'x' } }))
        .status,
    ).toBe(201)
    expect((await handler(get({ 'SVC-API-KEY': keys.full }))).status).toBe(200)
    expect((await handler(get({ 'BT-API-KEY': keys.full }))).status).toBe(200)
    // A transaction header under the BT- prefix enlists the write too.
    const tx = (await (
      await handler(
        new Request('http://vault.test/transactions', {
          method: 'POST',
          headers: { 'BT-API-KEY': keys.full },
        }),
      )
    ).json()) as { id: string }
    const update = await handler(
      new Request('http://vault.test/tokens/t1', {
        method: 'PATCH',
        headers: {
          'BT-API-KEY': keys.full,
          'BT-TRANSACTION-ID': tx.id,
          'content-type': 'application/merge-patch+json',
        },
        body: JSON.stringify({ data: 'y' }),
      }),
    )
    expect(update.status).toBe(200)
    const outside = (await (await handler(get({ 'BT-API-KEY': keys.full }))).json()) as { data: unknown }
    expect(outside.data).toBe('x')
  })

  it('a 401 names both headers it accepts, in its detail and its challenge', async () => {
    const { handler } = await setup({ runner: null })
    const answer = await handler(get({ 'X-API-KEY': 'key_nope' }))
    expect(answer.status).toBe(401)
    expect(answer.headers.get('www-authenticate')).toBe(
      'ApiKey header="SVC-API-KEY", ApiKey header="BT-API-KEY"',
    )
    const body = (await answer.json()) as { detail: string }
    expect(body.detail).toMatch(/SVC-API-KEY or BT-API-KEY header/)
  })

  it('headerPrefix: "SVC" accepts that prefix alone and its 401 names that header', async () => {
    const { handler, keys } = await setup({ runner: null, headerPrefix: 'SVC' })
    const answer = await handler(get({ 'BT-API-KEY': keys.full }))
    expect(answer.status).toBe(401)
    expect(answer.headers.get('www-authenticate')).toBe('ApiKey header="SVC-API-KEY"')
    expect(((await answer.json()) as { detail: string }).detail).toMatch(/in the SVC-API-KEY header\.$/)
    expect((await handler(get({ 'SVC-API-KEY': keys.full }))).status).toBe(404)
  })

  it('the OpenAPI document offers both key headers as alternatives', async () => {
    const { handler } = await setup({ runner: null })
    const doc = (await (await handler(new Request('http://vault.test/openapi.json'))).json()) as {
      security: unknown
      components: { securitySchemes: Record<string, { name: string }> }
    }
    expect(doc.security).toEqual([{ SvcApiKey: [] }, { BtApiKey: [] }])
    expect(Object.values(doc.components.securitySchemes).map((s) => s.name)).toEqual([
      'SVC-API-KEY',
      'BT-API-KEY',
    ])
  })

  it('the official node SDK works against a handler made without options (as npm start serves it)', async () => {
    const vault = await createTestVault()
    const { url } = await vault.listen()
    try {
      const bt = new BasisTheoryClient({ apiKey: vault.keys.private, baseUrl: url })
      const token = await bt.tokens.create({ type: 'token', data: 'from the SDK' })
      expect((await bt.tokens.get(token.id!)).data).toBe('from the SDK')
    } finally {
      await vault.close()
    }
  })
})

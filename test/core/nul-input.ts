import { expect, it } from 'vitest'
import { createHttpHandler } from '../../adapters/http/index.js'
import type { Store } from '../../src/store/contract.js'
import { failure, setup } from './setup.js'

/**
 * The cases of "U+0000 is refused in every input, alike on every store": each path id, the
 * transaction and idempotency ids, query filters (the v2 list's metadata JSON included) and body
 * fields answer one 400 naming the field; token `data` and `mask` (sealed before storage) keep it.
 * Run by `test/core/nul-input.test.ts` on the memory store and `test/postgres/nul-input.test.ts`.
 */
export function nulInputCases(makeStore: () => Promise<Store>) {
  const vaultWith = async () => {
    const { vault, service, client, full } = await setup({ store: await makeStore() })
    const handler = createHttpHandler(service)
    const call = async (method: string, path: string, body?: unknown, key = full.key) => {
      const response = await handler(
        new Request(`http://vault.test${path}`, {
          method,
          headers: {
            'SVC-API-KEY': key,
            'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        }),
      )
      const text = await response.text()
      return { status: response.status, body: text ? JSON.parse(text) : undefined }
    }
    return { vault, service, client, call, management: vault.keys.management }
  }

  it('answers 400 naming the field for U+0000 in every id of a path, before any store is asked', async () => {
    const { call, vault } = await vaultWith()
    try {
      const cases: [string, string, string, unknown?][] = [
        ['GET', '/tokens/%00abc', 'id'],
        ['PATCH', '/tokens/ab%00c', 'id', { metadata: { a: 'b' } }],
        ['DELETE', '/tokens/%00', 'id'],
        ['POST', '/tokens/a%00/children/b', 'parent_id'],
        ['DELETE', '/tokens/a/children/b%00', 'child_id'],
        ['POST', '/tokens/%00/children', 'parent_id', { type: 'token', data: 'x' }],
        ['GET', '/tokens/%00/children', 'parent_id'],
        ['POST', '/transactions/%00/commit', 'id'],
        ['POST', '/transactions/%00/rollback', 'id'],
      ]
      for (const [method, path, field, body] of cases) {
        const answer = await call(method, path, body)
        expect({ method, path, status: answer.status, errors: answer.body?.errors }).toEqual({
          method,
          path,
          status: 400,
          errors: { [field]: ['must not hold the character U+0000 or a lone surrogate'] },
        })
      }
      const managed: [string, string, string][] = [
        ['GET', '/reactor-formulas/%00', 'id'],
        ['DELETE', '/reactor-formulas/%00', 'id'],
        ['GET', '/reactors/%00x', 'id'],
        ['DELETE', '/reactors/%00x', 'id'],
        ['GET', '/applications/%00', 'id'],
        ['DELETE', '/applications/%00', 'id'],
        ['GET', '/applications/%00/keys', 'application_id'],
        ['GET', '/applications/a/keys/%00', 'id'],
      ]
      for (const [method, path, field] of managed) {
        const answer = await call(method, path, undefined, vault.keys.management)
        expect({ path, status: answer.status, errors: answer.body?.errors }).toEqual({
          path,
          status: 400,
          errors: { [field]: ['must not hold the character U+0000 or a lone surrogate'] },
        })
      }
    } finally {
      await vault.close()
    }
  })

  it('answers 400 for U+0000 in query filters, the v2 list metadata JSON included', async () => {
    const { call, vault } = await vaultWith()
    try {
      const json = encodeURIComponent('{"a":"\\u0000"}')
      const v2 = await call('GET', `/v2/tokens?metadata=${json}`)
      expect([v2.status, v2.body?.errors]).toEqual([400, { 'metadata.a': [expect.any(String)] }])
      const key = await call('GET', `/v2/tokens?metadata=${encodeURIComponent('{"\\u0000":"a"}')}`)
      expect(key.status).toBe(400)
      for (const path of [
        '/tokens?type=%00',
        '/tokens?metadata.a=%00',
        '/v2/tokens?type=a%00',
        '/v2/tokens?fingerprint=%00',
        '/v2/tokens?container=%2F%00%2F',
        '/v2/tokens?start=%00',
      ])
        expect([path, (await call('GET', path)).status]).toEqual([path, 400])
      const names = await call('GET', '/reactor-formulas?name=%00', undefined, vault.keys.management)
      expect(names.status).toBe(400)
      const search = await call('POST', '/v2/tokens/search', { query: 'type:\u0000' })
      expect(search.status).toBe(400)
    } finally {
      await vault.close()
    }
  })

  it('answers 400 for U+0000 in body fields stored in the clear: type, containers, metadata, names', async () => {
    const { call, vault } = await vaultWith()
    try {
      for (const [body, field] of [
        [{ type: 't\u0000', data: 'x' }, 'type'],
        [{ type: 'token', data: 'x', containers: ['/a\u0000/'] }, 'containers.0'],
        [{ type: 'token', data: 'x', metadata: { k: 'v\u0000' } }, 'metadata.k'],
        [{ type: 'token', data: 'x', metadata: { 'k\u0000': 'v' } }, 'metadata'],
        [{ id: 'i\u0000', type: 'token', data: 'x' }, 'id'],
      ] as const) {
        const answer = await call('POST', '/tokens', body)
        expect([answer.status, Object.keys(answer.body?.errors ?? {})[0]?.startsWith(field)]).toEqual([
          400,
          true,
        ])
      }
      const app = await call(
        'POST',
        '/applications',
        { name: 'a\u0000', type: 'private' },
        vault.keys.management,
      )
      expect([app.status, app.body?.errors?.name]).toEqual([400, [expect.any(String)]])
    } finally {
      await vault.close()
    }
  })

  it('refuses U+0000 in the in-process client too: ids, transaction and idempotency ids', async () => {
    const { service, client, vault } = await vaultWith()
    try {
      for (const call of [
        () => client.tokens.get('\u0000abc'),
        () => client.tokens.delete('a\u0000'),
        () => client.tokens.children.link('a', 'b\u0000'),
        () => client.transactions.commit('\u0000'),
      ])
        expect((await failure(call())).code).toBe('validation_failed')
      const inTx = service.connect(vault.keys.private, { transactionId: 'tx\u0000' })
      const tx = await failure(inTx.tokens.create({ type: 'token', data: 'x' }))
      expect([tx.code, tx.issues]).toEqual(['validation_failed', { transaction_id: [expect.any(String)] }])
      const once = service.connect(vault.keys.private, { idempotencyKey: 'k\u0000' })
      const idem = await failure(once.tokens.create({ type: 'token', data: 'x' }))
      expect([idem.code, idem.issues]).toEqual([
        'validation_failed',
        { idempotency_key: [expect.any(String)] },
      ])
      expect((await client.tokens.list({})).pagination.total_items).toBe(0)
    } finally {
      await vault.close()
    }
  })

  it('keeps U+0000 inside token data and mask (sealed before storage): they round-trip', async () => {
    const { call, vault } = await vaultWith()
    try {
      const data = { number: '4242\u00004242', nested: ['\u0000', { 'k\u0000': 'v' }] }
      const created = await call('POST', '/tokens', { type: 'token', data, mask: 'mask\u0000' })
      expect([created.status, created.body?.errors]).toEqual([201, undefined])
      const read = await call('GET', `/tokens/${created.body.id}`)
      expect([read.status, read.body.data]).toEqual([200, data])
      const patched = await call('PATCH', `/tokens/${created.body.id}`, { data: 'new\u0000' })
      expect(patched.status).toBe(200)
      expect((await call('GET', `/tokens/${created.body.id}`)).body.data).toBe('new\u0000')
    } finally {
      await vault.close()
    }
  })
}

import { describe, expect, it } from 'vitest'
import { empty, json, problem, setup } from './setup.js'

describe('tokens over HTTP', () => {
  it('POST /tokens 201, GET 200, PATCH (merge patch) 200, DELETE 204, then GET 404', async () => {
    const { call, keys } = await setup()
    const created = await json(
      await call('POST', '/tokens', {
        key: keys.full,
        body: {
          id: 'tok-1',
          type: 'token',
          data: { number: '4242424242424242', cvc: '123' },
          metadata: { a: '1' },
        },
      }),
      201,
    )
    expect(created).toMatchObject({ id: 'tok-1', type: 'token', metadata: { a: '1' } })
    expect(created.created_at).toBe('2030-01-01T00:00:00.000Z')

    const read = await json(await call('GET', '/tokens/tok-1', { key: keys.full }), 200)
    expect(read.data).toEqual({ number: '4242424242424242', cvc: '123' })

    const patched = await json(
      await call('PATCH', '/tokens/tok-1', {
        key: keys.full,
        body: { data: { cvc: null }, metadata: { b: '2' } },
        headers: { 'content-type': 'application/merge-patch+json' },
      }),
      200,
    )
    expect(patched).toMatchObject({ metadata: { a: '1', b: '2' } })
    expect(patched).not.toHaveProperty('data')
    expect((await json(await call('GET', '/tokens/tok-1', { key: keys.full }), 200)).data).toEqual({
      number: '4242424242424242',
    })

    await empty(await call('DELETE', '/tokens/tok-1', { key: keys.full }), 204)
    await problem(await call('GET', '/tokens/tok-1', { key: keys.full }), 404)
    await problem(await call('DELETE', '/tokens/tok-1', { key: keys.full }), 404)
  })

  it('answers 400 naming the field, 409 on a duplicate id, 401 without or with a wrong key, 403 without permission', async () => {
    const { call, keys } = await setup()
    const bad = await problem(await call('POST', '/tokens', { key: keys.full, body: { type: 'card' } }), 400)
    expect(bad.errors).toHaveProperty('data')
    const badContainer = await problem(
      await call('POST', '/tokens', { key: keys.full, body: { type: 'x', data: 1, containers: ['nope'] } }),
      400,
    )
    expect(Object.keys(badContainer.errors!)).toEqual(['containers.0'])

    await json(
      await call('POST', '/tokens', { key: keys.full, body: { id: 'dup', type: 'x', data: 1 } }),
      201,
    )
    await problem(
      await call('POST', '/tokens', { key: keys.full, body: { id: 'dup', type: 'x', data: 2 } }),
      409,
    )

    const anonymous = await call('GET', '/tokens/dup')
    expect(anonymous.headers.get('www-authenticate')).toBe(
      'ApiKey header="SVC-API-KEY", ApiKey header="BT-API-KEY"',
    )
    await problem(anonymous, 401)
    await problem(await call('GET', '/tokens/dup', { key: 'key_unknown' }), 401)
    await problem(await call('GET', '/tokens/dup', { key: keys.public }), 403)
  })

  it("answers 404 for another tenant's token, exactly as for a missing one", async () => {
    const { call, keys, keyFor, service } = await setup()
    const other = await service.admin.createTenant({ name: 'other' })
    const otherKey = await keyFor('private', ['token:read', 'token:create'], undefined, other.id)
    await json(
      await call('POST', '/tokens', { key: keys.full, body: { id: 'mine', type: 'x', data: 1 } }),
      201,
    )
    const theirs = await problem(await call('GET', '/tokens/mine', { key: otherKey }), 404)
    const missing = await problem(await call('GET', '/tokens/nothing', { key: otherKey }), 404)
    expect(theirs).toEqual(missing)
  })

  it('decodes path ids', async () => {
    const { call, keys } = await setup()
    await json(
      await call('POST', '/tokens', { key: keys.full, body: { id: 'a:b~c.d', type: 'x', data: 1 } }),
      201,
    )
    expect((await json(await call('GET', '/tokens/a%3Ab~c.d', { key: keys.full }), 200)).id).toBe('a:b~c.d')
    // An encoded slash stays inside the id: no such token.
    await problem(await call('GET', '/tokens/a%2Fb', { key: keys.full }), 404)
  })
})

describe('associations and children over HTTP', () => {
  it('links (no body or {}) 204, duplicate 409, self 400, unlinks 204, missing 404', async () => {
    const { call, keys } = await setup()
    for (const id of ['p', 'a', 'b']) {
      await json(await call('POST', '/tokens', { key: keys.full, body: { id, type: 't', data: id } }), 201)
    }
    await empty(await call('POST', '/tokens/p/children/a', { key: keys.full }), 204)
    await empty(await call('POST', '/tokens/p/children/b', { key: keys.full, body: {} }), 204)
    await problem(await call('POST', '/tokens/p/children/a', { key: keys.full, body: {} }), 409)
    const self = await problem(await call('POST', '/tokens/p/children/p', { key: keys.full }), 400)
    expect(self.errors).toHaveProperty('child_id')
    await problem(await call('POST', '/tokens/p/children/nope', { key: keys.full }), 404)
    await empty(await call('DELETE', '/tokens/p/children/a', { key: keys.full }), 204)
    await problem(await call('DELETE', '/tokens/p/children/a', { key: keys.full }), 404)
  })

  it('creates a child 201 without data, and lists children 200 with data, filters and pages', async () => {
    const { call, keys } = await setup()
    await json(
      await call('POST', '/tokens', { key: keys.full, body: { id: 'p', type: 'parent', data: 0 } }),
      201,
    )
    const child = await json(
      await call('POST', '/tokens/p/children', { key: keys.full, body: { id: 'c1', type: 'note', data: 1 } }),
      201,
    )
    expect(child).toMatchObject({ id: 'c1', type: 'note' })
    expect(child).not.toHaveProperty('data')
    for (const [id, type] of [
      ['c2', 'memo'],
      ['c3', 'note'],
      ['c4', 'other'],
    ] as const) {
      await json(
        await call('POST', '/tokens/p/children', { key: keys.full, body: { id, type, data: id } }),
        201,
      )
    }

    const all = await json<{ pagination: unknown; data: { id: string; data: unknown }[] }>(
      await call('GET', '/tokens/p/children', { key: keys.full }),
      200,
    )
    expect(all.pagination).toEqual({ total_items: 4, page_number: 1, page_size: 20, total_pages: 1 })
    expect(all.data.map((t) => t.id)).toEqual(['c1', 'c2', 'c3', 'c4'])
    expect(all.data[0]!.data).toBe(1)

    const ids = async (query: string) =>
      (
        await json<{ data: { id: string }[] }>(
          await call('GET', `/tokens/p/children${query}`, { key: keys.full }),
          200,
        )
      ).data.map((t) => t.id)
    expect(await ids('?type=note')).toEqual(['c1', 'c3'])
    expect(await ids('?type=note&type=memo')).toEqual(['c1', 'c2', 'c3'])
    expect(await ids('?type[]=memo&type[]=other')).toEqual(['c2', 'c4'])
    expect(await ids('?type%5B%5D=memo')).toEqual(['c2'])
    expect(await ids('?id=c4&id=c1')).toEqual(['c1', 'c4'])
    expect(await ids('?id=c1&type=memo')).toEqual([])
    expect(await ids('?page=2&size=3')).toEqual(['c4'])
    const paged = await json(await call('GET', '/tokens/p/children/?page=2&size=3', { key: keys.full }), 200)
    expect(paged.pagination).toEqual({ total_items: 4, page_number: 2, page_size: 3, total_pages: 2 })

    expect(
      (await problem(await call('GET', '/tokens/p/children?size=0', { key: keys.full }), 400)).errors,
    ).toHaveProperty('size')
    expect(
      (await problem(await call('GET', '/tokens/p/children?size=101', { key: keys.full }), 400)).errors,
    ).toHaveProperty('size')
    expect(
      (await problem(await call('GET', '/tokens/p/children?page=0', { key: keys.full }), 400)).errors,
    ).toHaveProperty('page')
    await problem(await call('GET', '/tokens/nope/children', { key: keys.full }), 404)
  })
})

describe('transactions over HTTP', () => {
  it('creates 201, enlists with the transaction header, commits 200 with an empty body', async () => {
    const { call, keys } = await setup()
    const tx = await json<{ id: string; created_at: string; created_by: string; expires_at: string }>(
      await call('POST', '/transactions', { key: keys.full }),
      201,
    )
    expect(tx.expires_at).toBe('2030-01-01T01:00:00.000Z')

    await json(
      await call('POST', '/tokens', {
        key: keys.full,
        transactionId: tx.id,
        body: { id: 't1', type: 'x', data: 1 },
      }),
      201,
    )
    // Invisible outside the transaction until commit, visible inside it.
    await problem(await call('GET', '/tokens/t1', { key: keys.full }), 404)
    expect(
      (await json(await call('GET', '/tokens/t1', { key: keys.full, transactionId: tx.id }), 200)).data,
    ).toBe(1)
    // The transaction header is case-insensitive.
    expect(
      (
        await json(
          await call('GET', '/tokens/t1', { key: keys.full, headers: { 'svc-transaction-id': tx.id } }),
          200,
        )
      ).id,
    ).toBe('t1')

    await empty(await call('POST', `/transactions/${tx.id}/commit`, { key: keys.full }), 200)
    expect((await json(await call('GET', '/tokens/t1', { key: keys.full }), 200)).data).toBe(1)
    await problem(await call('POST', `/transactions/${tx.id}/commit`, { key: keys.full }), 409)
    await problem(await call('POST', `/transactions/${tx.id}/rollback`, { key: keys.full }), 409)
  })

  it('rolls back 200 with an empty body; unknown 404, closed 409, enlisting in a closed one 409', async () => {
    const { call, keys, keyFor } = await setup()
    const tx = await json<{ id: string }>(
      await call('POST', '/transactions', { key: keys.full, body: {} }),
      201,
    )
    await json(
      await call('POST', '/tokens', {
        key: keys.full,
        transactionId: tx.id,
        body: { id: 'gone', type: 'x', data: 1 },
      }),
      201,
    )
    const other = await keyFor('private', ['token:read'])
    await problem(await call('POST', `/transactions/${tx.id}/rollback`, { key: other }), 403)
    await empty(await call('POST', `/transactions/${tx.id}/rollback/`, { key: keys.full }), 200)
    await problem(await call('GET', '/tokens/gone', { key: keys.full }), 404)
    await problem(await call('POST', `/transactions/${tx.id}/rollback`, { key: keys.full }), 409)
    await problem(
      await call('POST', '/tokens', { key: keys.full, transactionId: tx.id, body: { type: 'x', data: 1 } }),
      409,
    )
    await problem(
      await call('POST', '/transactions/8d1f7a52-1c1e-4a1e-9d3e-000000000000/commit', { key: keys.full }),
      404,
    )
    await problem(
      await call('POST', '/tokens', {
        key: keys.full,
        transactionId: 'no-such-tx',
        body: { type: 'x', data: 1 },
      }),
      404,
    )
    await problem(await call('POST', '/transactions', { key: keys.full, body: { unexpected: true } }), 400)
  })
})

describe('token search over HTTP', () => {
  it('POST /tokens/search wins over /tokens/{id}; v1 and v2 answer pages; 400 names the position; logs hold no query', async () => {
    const { call, keys, events, service, tenant } = await setup()
    await json(
      await call('POST', '/tokens', {
        key: keys.full,
        body: { id: 'search', type: 'token', data: 'ssn-QWXZ', search_indexes: ['{{ data | last4 }}'] },
      }),
      201,
    )
    // A token may be called "search": GET reads it, POST searches.
    expect((await json(await call('GET', '/tokens/search', { key: keys.full }), 200)).id).toBe('search')
    const v1 = await json(
      await call('POST', '/tokens/search', { key: keys.full, body: { query: 'data:QWXZ' } }),
      200,
    )
    expect(v1).toMatchObject({
      pagination: { total_items: 1, page_number: 1, page_size: 20, total_pages: 1 },
      data: [{ id: 'search', search_indexes: ['{{ data | last4 }}'] }],
    })
    // The body is optional (no body: every token), as the OpenAPI document says.
    const openapi = await json<{ paths: Record<string, { post: { requestBody: { required: boolean } } }> }>(
      await call('GET', '/openapi.json'),
      200,
    )
    expect(openapi.paths['/tokens/search']!.post.requestBody.required).toBe(false)
    expect(openapi.paths['/v2/tokens/search']!.post.requestBody.required).toBe(false)
    const all = await json(await call('POST', '/tokens/search', { key: keys.full }), 200)
    expect(all.pagination).toMatchObject({ total_items: 1 })
    const v2 = await json(
      await call('POST', '/v2/tokens/search', { key: keys.full, body: { query: 'id:search', size: 1 } }),
      200,
    )
    expect(v2).toEqual({ pagination: { page_size: 1 }, data: [expect.objectContaining({ id: 'search' })] })
    const bad = await problem(
      await call('POST', '/tokens/search', { key: keys.full, body: { query: 'data:QWXZ AND (' } }),
      400,
    )
    expect(bad.errors).toEqual({ query: ['expected a term, NOT or ( but the query ended at character 16'] })
    const unknown = await problem(
      await call('POST', '/v2/tokens/search', { key: keys.full, body: { query: 'ssn:QWXZ' } }),
      400,
    )
    expect(unknown.detail).toContain('unknown field "ssn"')
    expect(unknown.detail).not.toContain('QWXZ')
    const reader = await service.admin.createApplication({
      tenantId: tenant.id,
      name: 'r',
      type: 'private',
      permissions: ['token:read'],
    })
    await problem(await call('POST', '/tokens/search', { key: reader.key, body: { query: '' } }), 403)
    expect(JSON.stringify(events)).not.toContain('QWXZ')
    const journal = service.journal.query()
    expect(journal.map((e) => e.operation)).toContain('token.search_v2')
    expect(JSON.stringify(journal)).not.toContain('QWXZ')
  })
})

/**
 * HTTP behaviour the 2023 reference documents (Basis-Theory/developers.basistheory.com at cd98157,
 * basistheory-go api/openapi.yaml): each test names the page it follows.
 */
import { describe, expect, it } from 'vitest'
import { json, problem, setup } from './setup.js'

describe('tokens over HTTP', () => {
  it('PATCH /tokens/{id} requires application/merge-patch+json; any other type is 415 and changes nothing (docs/api/tokens/tokens.mdx#update-token)', async () => {
    const { call, keys } = await setup()
    await json(
      await call('POST', '/tokens', { key: keys.full, body: { id: 't', type: 'token', data: 'a' } }),
      201,
    )
    for (const contentType of ['application/json', 'text/plain', 'application/problem+json', undefined]) {
      const headers: Record<string, string> = contentType === undefined ? {} : { 'content-type': contentType }
      const response = await call('PATCH', '/tokens/t', {
        key: keys.full,
        body: JSON.stringify({ data: 'b' }),
        headers,
      })
      expect((await problem(response, 415)).detail).toContain('application/merge-patch+json')
    }
    expect((await json(await call('GET', '/tokens/t', { key: keys.full }), 200)).data).toBe('a')
    const patched = await call('PATCH', '/tokens/t', {
      key: keys.full,
      body: JSON.stringify({ data: 'c' }),
      headers: { 'content-type': 'Application/Merge-Patch+JSON; charset=utf-8' },
    })
    await json(patched, 200)
    expect((await json(await call('GET', '/tokens/t', { key: keys.full }), 200)).data).toBe('c')
  })

  it('create, tokenize and update answer data under the implicit mask transform of token:create, whatever the caller may read (docs/api/tokens/tokens.mdx#create-token, #update-token; docs/api/tokens/tokenize.mdx)', async () => {
    const { call, keys } = await setup()
    const body = { id: 'm', type: 'token', data: 'Sensitive Value', mask: 'XXXXXXXXXXXalue' }
    const created = await json(await call('POST', '/tokens', { key: keys.full, body }), 201)
    expect(created.data).toBe('XXXXXXXXXXXalue')
    expect(JSON.stringify(created)).not.toContain('Sensitive Value')
    const plain = await json(
      await call('POST', '/tokens', { key: keys.full, body: { id: 'p', type: 'token', data: 'no mask' } }),
      201,
    )
    expect(plain).not.toHaveProperty('data')
    const patched = await json(
      await call('PATCH', '/tokens/m', {
        key: keys.full,
        body: { data: 'Other Value', mask: 'XXXXXXXXXXXalue' },
        headers: { 'content-type': 'application/merge-patch+json' },
      }),
      200,
    )
    expect(patched.data).toBe('XXXXXXXXXXXalue')
    const tokenized = await json<{ card: { data: unknown }; plain: unknown }>(
      await call('POST', '/tokenize', {
        key: keys.full,
        body: { card: { type: 'token', data: 'secret', mask: 'XXXret' }, plain: 'x' },
      }),
      201,
    )
    expect(tokenized.card.data).toBe('XXXret')
    expect(typeof tokenized.plain).toBe('string')
    // A reader with `reveal` still sees the data in the clear on a read.
    expect((await json(await call('GET', '/tokens/m', { key: keys.full }), 200)).data).toBe('Other Value')
  })

  it('list children filters by metadata.<key>=<value> and metadata[<key>]=<value>, case-insensitive exact values, ANDed (docs/api/tokens/tokens.mdx list tokens, basistheory-go api/openapi.yaml)', async () => {
    const { call, keys } = await setup()
    await json(
      await call('POST', '/tokens', { key: keys.full, body: { id: 'p', type: 'token', data: 1 } }),
      201,
    )
    const kids: [string, Record<string, string>][] = [
      ['a', { kind: 'gold', region: 'eu' }],
      ['b', { kind: 'GOLD', region: 'us' }],
      ['c', { kind: 'golden', region: 'eu' }],
      ['d', { region: 'eu' }],
    ]
    for (const [id, metadata] of kids) {
      await json(
        await call('POST', '/tokens/p/children', {
          key: keys.full,
          body: { id, type: 'token', data: id, metadata },
        }),
        201,
      )
    }
    const ids = async (query: string) =>
      (
        await json<{ data: { id: string }[] }>(
          await call('GET', `/tokens/p/children?${query}`, { key: keys.full }),
          200,
        )
      ).data.map((t) => t.id)
    expect(await ids('metadata.kind=gold')).toEqual(['a', 'b'])
    expect(await ids('metadata%5Bkind%5D=Gold')).toEqual(['a', 'b'])
    expect(await ids('metadata.kind=gold&metadata.region=eu')).toEqual(['a'])
    // A repeated key: the first value counts.
    expect(await ids('metadata.kind=golden&metadata.kind=gold')).toEqual(['c'])
    expect(await ids('metadata.region=eu&type=token&size=1&page=2')).toEqual(['c'])
    expect(await ids('metadata.nothing=x')).toEqual([])
    const bad = await problem(
      await call('GET', '/tokens/p/children?metadata.__proto__=x', { key: keys.full }),
      400,
    )
    expect(Object.keys(bad.errors ?? {})).toEqual(['metadata'])
  })
})

describe('applications over HTTP', () => {
  it('create takes expires_at, list filters by id (docs/api/applications/applications.mdx)', async () => {
    const { call, keys, clock, service } = await setup()
    const made: { id: string; key: string; expires_at?: string }[] = []
    for (const expires_at of ['2030-01-01T02:00:00+01:00', undefined, '1/2/2030']) {
      const body = {
        name: 'x',
        type: 'private',
        permissions: ['token:create'],
        ...(expires_at ? { expires_at } : {}),
      }
      made.push(await json(await call('POST', '/applications', { key: keys.management, body }), 201))
    }
    expect(made.map((a) => a.expires_at)).toEqual([
      '2030-01-01T01:00:00.000Z',
      undefined,
      '2030-01-02T00:00:00.000Z',
    ])
    const ids = `id=${made[2]!.id}&id=${made[1]!.id}`
    const listed = await json<{ data: { id: string }[] }>(
      await call('GET', `/applications?${ids}`, { key: keys.management }),
      200,
    )
    expect(listed.data.map((a) => a.id).sort()).toEqual([made[1]!.id, made[2]!.id].sort())
    clock.advance(24 * 60 * 60_000)
    await problem(await call('POST', '/tokens', { key: made[2]!.key, body: { type: 'token', data: 1 } }), 401)
    expect((await service.admin.sweep()).applications).toBe(2)
    const all = `${ids}&id=${made[0]!.id}`
    const after = await json<{ data: { id: string }[] }>(
      await call('GET', `/applications?${all}`, { key: keys.management }),
      200,
    )
    expect(after.data.map((a) => a.id)).toEqual([made[1]!.id])
  })
})

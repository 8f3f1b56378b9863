import { describe, expect, it } from 'vitest'
import { unchecked } from '../../entry/index.js'
import { failure, setup } from './setup.js'

const valid = { type: 'token', data: { a: 1 } }
const deep = (n: number): unknown => (n === 0 ? 1 : { d: deep(n - 1) })

/** [what, body, the field the error must name] */
const tokenCases: [string, Record<string, unknown>, string][] = [
  ['missing type', { data: 1 }, 'type'],
  ['type not a string', { ...valid, type: 5 }, 'type'],
  ['empty type', { ...valid, type: '' }, 'type'],
  ['type over 50', { ...valid, type: 'x'.repeat(51) }, 'type'],
  ['type with spaces', { ...valid, type: 'a b' }, 'type'],
  ['missing data', { type: 'token' }, 'data'],
  ['null data', { type: 'token', data: null }, 'data'],
  ['data nested too deep', { type: 'token', data: deep(80) }, 'data'],
  ['containers not an array', { ...valid, containers: '/a/' }, 'containers'],
  ['empty containers', { ...valid, containers: [] }, 'containers'],
  ['container without slashes', { ...valid, containers: ['general'] }, 'containers.0'],
  ['container without trailing slash', { ...valid, containers: ['/general'] }, 'containers.0'],
  ['container with a bad segment', { ...valid, containers: ['/a b/'] }, 'containers.0'],
  ['container with an empty segment', { ...valid, containers: ['/a//b/'] }, 'containers.0'],
  [
    'too many containers',
    { ...valid, containers: Array.from({ length: 21 }, (_, i) => `/c${i}/`) },
    'containers',
  ],
  ['metadata not an object', { ...valid, metadata: 'x' }, 'metadata'],
  ['metadata value not a string', { ...valid, metadata: { a: 1 } }, 'metadata.a'],
  ['metadata value too long', { ...valid, metadata: { a: 'x'.repeat(1001) } }, 'metadata.a'],
  ['metadata prototype key', { ...valid, metadata: JSON.parse('{"__proto__":"x"}') }, 'metadata'],
  ['expires_at not a date', { ...valid, expires_at: 'tomorrow' }, 'expires_at'],
  ['expires_at not a date', { ...valid, expires_at: 'next tuesday' }, 'expires_at'],
  ['expires_at month 13', { ...valid, expires_at: '13/01/2031' }, 'expires_at'],
  ['expires_at impossible date', { ...valid, expires_at: '2031-02-30T00:00:00Z' }, 'expires_at'],
  ['expires_at in the past', { ...valid, expires_at: '2029-01-01T00:00:00Z' }, 'expires_at'],
  ['expires_at now', { ...valid, expires_at: '2030-01-01T00:00:00Z' }, 'expires_at'],
  ['id empty', { ...valid, id: '' }, 'id'],
  ['id with a slash', { ...valid, id: 'a/b' }, 'id'],
  ['id over 200', { ...valid, id: 'a'.repeat(201) }, 'id'],
  ['id not a string', { ...valid, id: 12 }, 'id'],
  ['unknown field', { ...valid, colour: 'red' }, 'colour'],
  ['status field', { ...valid, tenant_id: 'x' }, 'tenant_id'],
]

describe('token input validation', () => {
  it.each(tokenCases)('create refuses %s, naming the field, storing nothing', async (_what, body, field) => {
    const { client, store } = await setup()
    const before = await store.dump()
    const error = await failure(unchecked(client).tokens.create(body))
    expect(error.code).toBe('validation_failed')
    expect(Object.keys(error.issues ?? {})).toContain(field)
    expect(await store.dump()).toEqual(before)
  })

  it.each(
    tokenCases.filter(
      ([, , f]) => !['type', 'id', 'data'].includes(f) && f !== 'colour' && f !== 'tenant_id',
    ),
  )('child create refuses %s too', async (_what, body, field) => {
    const { client, store } = await setup()
    const parent = await client.tokens.create(valid)
    const before = await store.dump()
    const error = await failure(unchecked(client).tokens.children.create(parent.id, body))
    expect(error.code).toBe('validation_failed')
    expect(Object.keys(error.issues ?? {})).toContain(field)
    expect(await store.dump()).toEqual(before)
  })

  const patchCases: [string, Record<string, unknown>, string][] = [
    ['null data', { data: null }, 'data'],
    ['type change', { type: 'other' }, 'type'],
    ['id change', { id: 'other' }, 'id'],
    ['bad container', { containers: ['x'] }, 'containers.0'],
    ['metadata number', { metadata: { a: 2 } }, 'metadata.a'],
    ['expires_at in the past', { expires_at: '2020-01-01T00:00:00Z' }, 'expires_at'],
  ]
  it.each(patchCases)('update refuses %s', async (_what, patch, field) => {
    const { client, store } = await setup()
    const t = await client.tokens.create(valid)
    const before = await store.dump()
    const error = await failure(client.tokens.update(t.id, patch))
    expect(error.code).toBe('validation_failed')
    expect(Object.keys(error.issues ?? {})).toContain(field)
    expect(await store.dump()).toEqual(before)
  })

  const listCases: [string, Record<string, unknown>, string][] = [
    ['page 0', { page: 0 }, 'page'],
    ['page 1 000 000 000', { page: 1_000_000_000 }, 'page'],
    ['page 1e308', { page: 1e308 }, 'page'],
    ['page not a number', { page: 'two' }, 'page'],
    ['size 0', { size: 0 }, 'size'],
    ['size 101', { size: '101' }, 'size'],
    ['size fraction', { size: 1.5 }, 'size'],
    ['unknown filter', { colour: 'x' }, 'colour'],
  ]
  it('answers page 999 999 999 of a list and a search (empty), and refuses the next', async () => {
    const { client } = await setup()
    await client.tokens.create(valid)
    const list = await client.tokens.list({ page: 999_999_999, size: 100 } as never)
    expect([list.data, list.pagination.page_number]).toEqual([[], 999_999_999])
    const found = await client.tokens.search({ query: 'type:token', page: 999_999_999, size: 100 } as never)
    expect((found as { pagination: { page_number: number } }).pagination.page_number).toBe(999_999_999)
    const past = await failure(client.tokens.search({ query: 'type:token', page: 1_000_000_000 } as never))
    expect(Object.keys(past.issues ?? {})).toContain('page')
  })

  it.each(listCases)('list children refuses %s', async (_what, query, field) => {
    const { client } = await setup()
    const t = await client.tokens.create(valid)
    const error = await failure(unchecked(client).tokens.children.list(t.id, query))
    expect(error.code).toBe('validation_failed')
    expect(Object.keys(error.issues ?? {})).toContain(field)
  })
})

describe('application and session input validation', () => {
  const appCases: [string, Record<string, unknown>, string][] = [
    ['missing name', { type: 'private' }, 'name'],
    ['blank name', { name: '  ', type: 'private' }, 'name'],
    ['bad type', { name: 'a', type: 'root' }, 'type'],
    ['unknown permission', { name: 'a', type: 'private', permissions: ['token:fly'] }, 'permissions.0'],
    [
      'permission of another type',
      { name: 'a', type: 'public', permissions: ['token:read'] },
      'permissions.0',
    ],
    [
      'private with reactor permission',
      { name: 'a', type: 'private', permissions: ['reactor:read'] },
      'permissions.0',
    ],
    [
      'rule with container and conditions',
      {
        name: 'a',
        type: 'private',
        rules: [
          {
            description: 'r',
            priority: 1,
            container: '/a/',
            conditions: [{ attribute: 'id', operator: 'equals', value: 'x' }],
            transform: 'reveal',
            permissions: ['token:read'],
          },
        ],
      },
      'rules.0.conditions',
    ],
    [
      'rule with conditions (sessions only)',
      {
        name: 'a',
        type: 'private',
        rules: [
          {
            priority: 1,
            conditions: [{ attribute: 'id', operator: 'equals', value: 'x' }],
            transform: 'reveal',
            permissions: ['token:read'],
          },
        ],
      },
      'rules.0.conditions',
    ],
    [
      'rule without a container',
      {
        name: 'a',
        type: 'private',
        rules: [{ priority: 1, transform: 'mask', permissions: ['token:read'] }],
      },
      'rules.0.container',
    ],
    [
      'neither permissions nor rules',
      { name: 'a', type: 'private', permissions: [], rules: [] },
      'permissions',
    ],
    [
      'rule with a bad transform',
      {
        name: 'a',
        type: 'private',
        rules: [{ priority: 1, container: '/', transform: 'show', permissions: ['token:read'] }],
      },
      'rules.0.transform',
    ],
    [
      'rule without permissions',
      {
        name: 'a',
        type: 'private',
        rules: [{ priority: 1, container: '/', transform: 'mask', permissions: [] }],
      },
      'rules.0.permissions',
    ],
    [
      'rule with a non-token permission',
      {
        name: 'a',
        type: 'management',
        rules: [{ priority: 1, container: '/', transform: 'mask', permissions: ['reactor:read'] }],
      },
      'rules.0.permissions.0',
    ],
    [
      'rule with a bad condition',
      {
        name: 'a',
        type: 'private',
        rules: [
          {
            priority: 1,
            conditions: [{ attribute: 'type', operator: 'equals', value: 'x' }],
            transform: 'mask',
            permissions: ['token:read'],
          },
        ],
      },
      'rules.0.conditions.0.attribute',
    ],
    [
      'rule permission the type may not hold',
      {
        name: 'a',
        type: 'public',
        rules: [{ priority: 1, container: '/', transform: 'mask', permissions: ['token:read'] }],
      },
      'rules.0.permissions.0',
    ],
    [
      'negative priority',
      {
        name: 'a',
        type: 'private',
        rules: [{ priority: -1, container: '/', transform: 'mask', permissions: ['token:read'] }],
      },
      'rules.0.priority',
    ],
  ]
  it.each(appCases)('application create refuses %s', async (_what, body, field) => {
    const { keyFor, store } = await setup()
    const mgmt = await keyFor('management', ['application:create'])
    const before = await store.dump()
    const error = await failure(unchecked(mgmt.client).applications.create(body))
    expect(error.code).toBe('validation_failed')
    expect(Object.keys(error.issues ?? {})).toContain(field)
    expect(await store.dump()).toEqual(before)
  })

  const authorizeCases: [string, Record<string, unknown>, string][] = [
    ['missing nonce', { permissions: ['token:read'] }, 'nonce'],
    ['no permissions and no rules', { nonce: 'n' }, 'permissions'],
    ['empty permissions and rules', { nonce: 'n', permissions: [], rules: [] }, 'permissions'],
    ['bad expires_at', { nonce: 'n', permissions: ['token:read'], expires_at: 'soon' }, 'expires_at'],
    [
      'past expires_at',
      { nonce: 'n', permissions: ['token:read'], expires_at: '2029-12-31T00:00:00Z' },
      'expires_at',
    ],
    ['unknown permission', { nonce: 'n', permissions: ['token:x'] }, 'permissions.0'],
  ]
  it.each(authorizeCases)('session authorize refuses %s', async (_what, body, field) => {
    const { full, store } = await setup()
    const before = await store.dump()
    const error = await failure(unchecked(full.client).sessions.authorize(body))
    expect(error.code).toBe('validation_failed')
    expect(Object.keys(error.issues ?? {})).toContain(field)
    expect(await store.dump()).toEqual(before)
  })
})

describe('text no store can keep', () => {
  it.each([
    ['a lone surrogate in metadata', { type: 'x', data: 1, metadata: { k: 'half \ud800' } }, 'metadata.k'],
    ['a lone low surrogate in type', { type: '\udc00', data: 1 }, 'type'],
    [
      'a lone surrogate deep in arrays of data, after well-formed siblings',
      { type: 'x', data: { list: ['ok', { deep: ['fine', 'bad\ud800'] }] } },
      'data.list.1.deep.1',
    ],
    ['U+0000 in metadata', { type: 'x', data: 1, metadata: { k: 'nul\u0000byte' } }, 'metadata.k'],
    ['a lone high surrogate after a pair', { type: 'x', data: '\ud83d\ude00\ud800' }, 'data'],
  ])('refuses %s, naming the field', async (_what, body, field) => {
    const { client, store } = await setup()
    const before = await store.dump()
    const error = await failure(unchecked(client).tokens.create(body))
    expect(error.code).toBe('validation_failed')
    expect(Object.keys(error.issues ?? {})).toEqual([field])
    expect(await store.dump()).toEqual(before)
  })

  it('keeps well-formed text beyond the basic plane', async () => {
    const { client } = await setup()
    const t = await client.tokens.create({ type: 'x', data: '🦄 ünïcödé 漢字', metadata: { k: '😀' } })
    expect((await client.tokens.get(t.id)).data).toBe('🦄 ünïcödé 漢字')
  })
})

/**
 * Behaviour the 2023 reference documents (Basis-Theory/developers.basistheory.com at cd98157, and
 * basistheory-go api/openapi.yaml): each test names the page it follows.
 */
import { describe, expect, it } from 'vitest'
import { unchecked } from '../../entry/index.js'
import { PERMISSIONS_BY_TYPE } from '../../src/applications/permissions.js'
import type { Permission } from '../../src/kernel/types.js'
import { failure, setup } from './setup.js'

describe('containers and access rules', () => {
  it('the root container is / and a rule on / covers every token (docs/concepts/what-are-containers.mdx)', async () => {
    const { client, keyFor } = await setup()
    await client.tokens.create({ id: 'root', type: 'token', data: 'r', containers: ['/'] })
    await client.tokens.create({ id: 'deep', type: 'token', data: 'd', containers: ['/pci/high/'] })
    expect((await client.tokens.get('root')).containers).toEqual(['/'])
    const reader = await keyFor(
      'private',
      [],
      [
        {
          description: 'root',
          priority: 1,
          container: '/',
          transform: 'reveal',
          permissions: ['token:read'],
        },
      ],
    )
    expect((await reader.client.tokens.get('root')).data).toBe('r')
    expect((await reader.client.tokens.get('deep')).data).toBe('d')
    // A rule on a sub-container does not reach a token in the root container.
    const pci = await keyFor(
      'private',
      [],
      [
        {
          description: 'pci',
          priority: 1,
          container: '/pci/',
          transform: 'reveal',
          permissions: ['token:read'],
        },
      ],
    )
    expect((await failure(pci.client.tokens.get('root'))).code).toBe('forbidden')
    for (const bad of ['//', '/a//', 'a/', '/a']) {
      const error = await failure(client.tokens.create({ type: 'token', data: 1, containers: [bad] }))
      expect(error.issues).toHaveProperty(['containers.0'])
    }
  })

  it('an application rule needs a container; conditions are for sessions only (docs/api/applications/applications.mdx#access-rules)', async () => {
    const { keyFor, store } = await setup()
    const mgmt = await keyFor('management', ['application:create', 'application:update'])
    const before = await store.dump()
    const conditions = [{ attribute: 'id' as const, operator: 'equals' as const, value: 'x' }]
    const base = {
      description: '',
      priority: 1,
      transform: 'reveal' as const,
      permissions: ['token:read' as const],
    }
    for (const rule of [base, { ...base, conditions }]) {
      const error = await failure(
        mgmt.client.applications.create({ name: 'a', type: 'private', rules: [rule] }),
      )
      expect(error.code).toBe('validation_failed')
    }
    expect(await store.dump()).toEqual(before)
    const app = await mgmt.client.applications.create({
      name: 'a',
      type: 'public',
      rules: [{ ...base, container: '/', permissions: ['token:create'] }],
    })
    expect(app.rules?.[0]?.container).toBe('/')
    const error = await failure(
      mgmt.client.applications.update(app.id, {
        name: 'a',
        rules: [{ ...base, permissions: ['token:create'] }],
      }),
    )
    expect(Object.keys(error.issues ?? {})).toEqual(['rules.0.container'])
  })

  it('permissions or rules must be non-empty on create and on update (docs/api/applications/applications.mdx)', async () => {
    const { keyFor, store } = await setup()
    const mgmt = await keyFor('management', ['application:create', 'application:update', 'application:read'])
    for (const body of [{}, { permissions: [] }, { permissions: [], rules: [] }]) {
      const error = await failure(mgmt.client.applications.create({ name: 'a', type: 'private', ...body }))
      expect(error.code).toBe('validation_failed')
      expect(Object.keys(error.issues ?? {})).toContain('permissions')
    }
    const app = await mgmt.client.applications.create({
      name: 'a',
      type: 'private',
      permissions: ['token:read'],
    })
    const before = await store.dump()
    for (const body of [{ name: 'b' }, { name: 'b', permissions: [], rules: [] }]) {
      const error = await failure(mgmt.client.applications.update(app.id, body))
      expect(Object.keys(error.issues ?? {})).toContain('permissions')
    }
    expect(await store.dump()).toEqual(before)
    const ruled = await mgmt.client.applications.update(app.id, {
      name: 'b',
      rules: [
        { description: '', priority: 1, container: '/', transform: 'mask', permissions: ['token:read'] },
      ],
    })
    expect(ruled.permissions).toEqual([])
  })

  it('the permission catalogue: token:search for private, the management permissions by name (docs/api/applications/permissions.mdx)', async () => {
    const { keyFor } = await setup()
    const mgmt = await keyFor('management', ['application:create'])
    const management: Permission[] = [
      'tenant:read',
      'tenant:update',
      'tenant:delete',
      'application:read',
      'application:create',
      'application:update',
      'application:delete',
      'log:read',
      'reactor:read',
      'reactor:create',
      'reactor:update',
      'reactor:delete',
      'proxy:read',
      'proxy:create',
      'proxy:update',
      'proxy:delete',
      'tenant:member:read',
      'tenant:member:update',
      'tenant:member:delete',
      'tenant:invitation:create',
      'tenant:invitation:read',
      'tenant:invitation:update',
      'tenant:invitation:delete',
      'report:read',
      'webhook:create',
      'webhook:read',
      'webhook:update',
      'webhook:delete',
      'keys:create',
      'keys:read',
      'keys:delete',
    ]
    const priv: Permission[] = [
      'token:create',
      'token:update',
      'token:read',
      'token:search',
      'token:delete',
      'token:use',
      'token-intent:create',
      'token-intent:read',
      'token-intent:delete',
      'documents:create',
      'documents:read',
      'documents:reveal',
      'documents:delete',
    ]
    expect([...PERMISSIONS_BY_TYPE.management].sort()).toEqual([...management].sort())
    expect([...PERMISSIONS_BY_TYPE.private].sort()).toEqual([...priv].sort())
    expect(PERMISSIONS_BY_TYPE.public).toEqual(['token:create', 'token:update', 'token-intent:create'])
    const m = await mgmt.client.applications.create({
      name: 'm',
      type: 'management',
      permissions: management,
    })
    expect(m.permissions).toEqual(management)
    const p = await mgmt.client.applications.create({ name: 'p', type: 'private', permissions: priv })
    expect(p.permissions).toEqual(priv)
    const searchRule = await mgmt.client.applications.create({
      name: 's',
      type: 'private',
      rules: [
        { description: '', priority: 1, container: '/', transform: 'mask', permissions: ['token:search'] },
      ],
    })
    expect(searchRule.rules?.[0]?.permissions).toEqual(['token:search'])
    for (const [type, permission] of [
      ['public', 'token:search'],
      ['private', 'log:read'],
      ['management', 'token:search'],
      ['private', 'token:everything'],
    ] as const) {
      const error = await failure(
        mgmt.client.applications.create({ name: 'x', type, permissions: [permission as Permission] }),
      )
      expect(error.code).toBe('validation_failed')
      expect(Object.keys(error.issues ?? {})).toEqual(['permissions.0'])
    }
  })
})

describe('applications', () => {
  it('expires_at: the key answers 401 from then on and the sweep deletes the application (docs/api/applications/applications.mdx#create-application)', async () => {
    const { keyFor, clock, service, store } = await setup()
    const mgmt = await keyFor('management', ['application:create', 'application:read', 'application:update'])
    const temp = await mgmt.client.applications.create({
      name: 'temp',
      type: 'private',
      permissions: ['token:create'],
      expires_at: '1/1/2030 12:05:00 AM',
    })
    expect(temp.expires_at).toBe('2030-01-01T00:05:00.000Z')
    const kept = await mgmt.client.applications.create({
      name: 'kept',
      type: 'private',
      permissions: ['token:create'],
    })
    expect(kept).not.toHaveProperty('expires_at')
    // An update keeps expires_at.
    const updated = await mgmt.client.applications.update(temp.id, {
      name: 'temp2',
      permissions: ['token:create'],
    })
    expect(updated.expires_at).toBe('2030-01-01T00:05:00.000Z')
    const client = service.connect(temp.key)
    await client.tokens.create({ type: 'token', data: 1 })
    clock.advance(5 * 60_000 - 1)
    expect((await service.admin.sweep()).applications).toBe(0)
    await client.tokens.create({ type: 'token', data: 2 })
    clock.advance(1)
    expect((await failure(client.tokens.create({ type: 'token', data: 3 }))).code).toBe('unauthenticated')
    expect((await service.admin.sweep()).applications).toBe(1)
    expect(await store.getApplication(temp.tenant_id, temp.id)).toBeNull()
    expect((await failure(mgmt.client.applications.get(temp.id))).code).toBe('not_found')
    expect((await failure(client.tokens.create({ type: 'token', data: 3 }))).code).toBe('unauthenticated')
    expect((await mgmt.client.applications.get(kept.id)).name).toBe('kept')
    for (const past of ['2030-01-01T00:05:00Z', '2029-12-31']) {
      const error = await failure(
        mgmt.client.applications.create({
          name: 'x',
          type: 'private',
          permissions: ['token:read'],
          expires_at: past,
        }),
      )
      expect(Object.keys(error.issues ?? {})).toEqual(['expires_at'])
    }
  })

  it('list filters by id, one or several (docs/api/applications/applications.mdx#list-applications)', async () => {
    const { keyFor } = await setup()
    const mgmt = await keyFor('management', ['application:create', 'application:read'])
    const made = []
    for (const name of ['a', 'b', 'c']) {
      made.push(await mgmt.client.applications.create({ name, type: 'private', permissions: ['token:read'] }))
    }
    const one = await mgmt.client.applications.list({ id: made[1]!.id })
    expect(one.data.map((a) => a.name)).toEqual(['b'])
    const two = await mgmt.client.applications.list({ id: [made[2]!.id, made[0]!.id, 'unknown'] })
    expect(two.data.map((a) => a.name).sort()).toEqual(['a', 'c'])
    expect(two.pagination.total_items).toBe(2)
    const all = await mgmt.client.applications.list()
    expect(all.data.length).toBeGreaterThanOrEqual(4)
  })
})

describe('tokens', () => {
  it('expires_at accepts the documented formats (docs/api/tokens/tokens.mdx#expiration-date-formats)', async () => {
    const { client } = await setup()
    const cases: [string, string][] = [
      ['8/26/2030 7:23:57 PM -07:00', '2030-08-27T02:23:57.000Z'],
      ['8/26/2030 7:23:57 AM +02:00', '2030-08-26T05:23:57.000Z'],
      ['8/26/2030 12:00:00 AM', '2030-08-26T00:00:00.000Z'],
      ['8/26/2030 12:30 PM', '2030-08-26T12:30:00.000Z'],
      ['8/26/2030 19:23:57', '2030-08-26T19:23:57.000Z'],
      ['9/27/2030', '2030-09-27T00:00:00.000Z'],
      ['2030-08-26T19:23:57-07:00', '2030-08-27T02:23:57.000Z'],
      ['2030-08-26T19:23:57', '2030-08-26T19:23:57.000Z'],
      ['2030-08-26T19:23:57.1234567Z', '2030-08-26T19:23:57.123Z'],
      ['2030-08-26', '2030-08-26T00:00:00.000Z'],
      ['2030-08-26T19:23Z', '2030-08-26T19:23:00.000Z'],
    ]
    for (const [given, stored] of cases) {
      const token = await client.tokens.create({ type: 'token', data: 1, expires_at: given })
      expect(token.expires_at, given).toBe(stored)
      const patched = await client.tokens.update(token.id, { expires_at: given })
      expect(patched.expires_at, given).toBe(stored)
    }
    for (const bad of [
      '2/30/2030',
      '13/1/2030',
      '8/26/2030 13:00:00 PM',
      '8/26/2030 24:00:00',
      '8/26/2030 7:23:57 PM -25:00',
      '2030-02-30',
      'tomorrow',
      '8/26/30',
    ]) {
      const error = await failure(client.tokens.create({ type: 'token', data: 1, expires_at: bad }))
      expect(Object.keys(error.issues ?? {}), bad).toEqual(['expires_at'])
    }
  })
})

describe('reactor formulas', () => {
  it('the icon may have whitespace after base64, as the docs example does (docs/api/reactors/reactor-formulas.mdx)', async () => {
    const { keyFor } = await setup()
    const mgmt = await keyFor('management', ['reactor:create'])
    const png =
      'iVBORw0KGgoAAAANSUhEUgAAAAUAAAAFCAYAAACNbyblAAAAHElEQVQI12P4//8/w38GIAXDIBKE0DHxgljNBAAO9TXL0Y4OHwAAAABJRU5ErkJggg=='
    const body = {
      name: 'f',
      type: 'private' as const,
      code: 'module.exports = async function (req) { return { raw: req.args } }',
      configuration: [],
      request_parameters: [],
    }
    for (const icon of [`data:image/png;base64, ${png}`, `data:image/png;base64,${png}`]) {
      const formula = await mgmt.client.reactorFormulas.create({ ...body, icon })
      expect(formula.icon).toBe(icon)
    }
    for (const icon of [
      `data:image/gif;base64, ${png}`,
      'data:image/png;base64, !!!!',
      `data:image/png;base64, ${png} x`,
    ]) {
      const error = await failure(unchecked(mgmt.client).reactorFormulas.create({ ...body, icon }))
      expect(Object.keys(error.issues ?? {})).toEqual(['icon'])
    }
  })
})

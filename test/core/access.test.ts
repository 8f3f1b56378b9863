import { describe, expect, it } from 'vitest'
import type { AccessRule, Condition, Transform } from '../../src/kernel/types.js'
import { failure, setup } from './setup.js'

const TRANSFORMS: Transform[] = ['redact', 'mask', 'reveal']
const expected = { reveal: 'secret', mask: 'm*sk', redact: undefined }

/** Scopes, and whether each covers the card token (id card-1 in /pci/high/) and the other (id ssn-1 in /general/low/). */
const scopes: [string, Pick<AccessRule, 'container' | 'conditions'>, boolean, boolean][] = [
  ['root container /', { container: '/' }, true, true],
  ['container /pci/', { container: '/pci/' }, true, false],
  ['container /pci/high/', { container: '/pci/high/' }, true, false],
  ['container /pci/low/', { container: '/pci/low/' }, false, false],
  ['container /general/', { container: '/general/' }, false, true],
  ['container equals /pci/high/', { conditions: [c('container', 'equals', '/pci/high/')] }, true, false],
  ['container equals /pci/', { conditions: [c('container', 'equals', '/pci/')] }, false, false],
  ['container starts_with /pci', { conditions: [c('container', 'starts_with', '/pci')] }, true, false],
  ['id equals card-1', { conditions: [c('id', 'equals', 'card-1')] }, true, false],
  ['id starts_with ssn', { conditions: [c('id', 'starts_with', 'ssn')] }, false, true],
  [
    'id starts_with card AND container starts_with /general/',
    { conditions: [c('id', 'starts_with', 'card'), c('container', 'starts_with', '/general/')] },
    false,
    false,
  ],
  [
    'id starts_with card AND container starts_with /pci/',
    { conditions: [c('id', 'starts_with', 'card'), c('container', 'starts_with', '/pci/')] },
    true,
    false,
  ],
]

function c(attribute: Condition['attribute'], operator: Condition['operator'], value: string): Condition {
  return { attribute, operator, value }
}

/**
 * A client holding exactly `rules`: an application for container rules; for rules with conditions
 * (which apply to sessions only), a session the full-access key authorized.
 */
async function holder(s: Awaited<ReturnType<typeof setup>>, rules: AccessRule[]) {
  if (!rules.some((r) => r.conditions)) return (await s.keyFor('private', [], rules)).client
  const pub = await s.keyFor('public', ['token:create'])
  const { session_key, nonce } = await pub.client.sessions.create()
  await s.client.sessions.authorize({ nonce, rules })
  return s.service.connect(session_key)
}

async function world() {
  const s = await setup()
  await s.client.tokens.create({
    id: 'card-1',
    type: 'token',
    data: 'secret',
    mask: 'm*sk',
    containers: ['/pci/high/'],
  })
  await s.client.tokens.create({
    id: 'ssn-1',
    type: 'ssn',
    data: 'secret',
    mask: 'm*sk',
    containers: ['/general/low/'],
  })
  await s.client.tokens.create({ id: 'plain-1', type: 'ssn', data: 'secret', containers: ['/pci/high/'] })
  return s
}

describe('access rules: transform × container × condition', () => {
  for (const transform of TRANSFORMS) {
    for (const [name, scope, coversCard, coversOther] of scopes) {
      it(`${transform} with ${name}`, async () => {
        const s = await world()
        const rule: AccessRule = {
          description: name,
          priority: 1,
          transform,
          permissions: ['token:read'],
          ...scope,
        }
        const client = await holder(s, [rule])
        for (const [id, covered] of [
          ['card-1', coversCard],
          ['ssn-1', coversOther],
        ] as const) {
          if (covered) {
            const token = await client.tokens.get(id)
            expect(token.data).toEqual(expected[transform])
            if (transform === 'redact') expect('data' in token).toBe(false)
          } else {
            expect((await failure(client.tokens.get(id))).code).toBe('forbidden')
          }
        }
      })
    }
  }

  it('mask without a mask on the token shows no data', async () => {
    const { keyFor } = await world()
    const { client } = await keyFor(
      'private',
      [],
      [{ description: '', priority: 1, container: '/', transform: 'mask', permissions: ['token:read'] }],
    )
    expect('data' in (await client.tokens.get('plain-1'))).toBe(false)
  })

  it('the matching rule with the lowest priority number wins, whatever the order', async () => {
    const s = await world()
    const rules: AccessRule[] = [
      {
        description: 'broad',
        priority: 20,
        container: '/',
        transform: 'redact',
        permissions: ['token:read'],
      },
      {
        description: 'pci',
        priority: 10,
        container: '/pci/',
        transform: 'reveal',
        permissions: ['token:read'],
      },
      {
        description: 'card',
        priority: 5,
        conditions: [c('id', 'equals', 'card-1')],
        transform: 'mask',
        permissions: ['token:read'],
      },
    ]
    const client = await holder(s, rules)
    expect((await client.tokens.get('card-1')).data).toBe('m*sk')
    expect((await client.tokens.get('plain-1')).data).toBe('secret')
    expect((await client.tokens.get('ssn-1')).data).toBeUndefined()
    const reversed = await holder(s, [...rules].reverse())
    expect((await reversed.tokens.get('card-1')).data).toBe('m*sk')
  })

  it('a rule counts only for the permissions it grants', async () => {
    const { keyFor } = await world()
    const { client } = await keyFor(
      'private',
      [],
      [{ description: '', priority: 1, container: '/', transform: 'reveal', permissions: ['token:create'] }],
    )
    expect((await failure(client.tokens.get('card-1'))).code).toBe('forbidden')
    await client.tokens.create({ type: 'token', data: 1 })
  })

  it('with rules, the rules alone decide: permissions do not widen token access', async () => {
    const { keyFor } = await world()
    const { client } = await keyFor(
      'private',
      ['token:read', 'token:create'],
      [
        {
          description: '',
          priority: 1,
          container: '/general/',
          transform: 'reveal',
          permissions: ['token:read', 'token:create'],
        },
      ],
    )
    expect((await failure(client.tokens.get('card-1'))).code).toBe('forbidden')
    expect((await client.tokens.get('ssn-1')).data).toBe('secret')
    expect(
      (await failure(client.tokens.create({ type: 't', data: 1, containers: ['/pci/high/'] }))).code,
    ).toBe('forbidden')
    await client.tokens.create({ type: 't', data: 1, containers: ['/general/x/'] })
  })

  it('without rules a permission covers every token with default transforms', async () => {
    const { keyFor } = await world()
    const reader = await keyFor('private', ['token:read'])
    expect((await reader.client.tokens.get('card-1')).data).toBe('m*sk')
    expect((await failure(reader.client.tokens.create({ type: 't', data: 1 }))).code).toBe('forbidden')
    expect((await failure(reader.client.tokens.update('card-1', { data: 2 }))).code).toBe('forbidden')
    expect((await failure(reader.client.tokens.delete('card-1'))).code).toBe('forbidden')
  })

  it('public applications create and update tokens but cannot read them', async () => {
    const { keyFor, client } = await world()
    const pub = await keyFor('public', ['token:create', 'token:update'])
    const t = await pub.client.tokens.create({ type: 't', data: 'from browser' })
    expect('data' in t).toBe(false)
    await pub.client.tokens.update(t.id, { data: 'changed' })
    expect((await failure(pub.client.tokens.get(t.id))).code).toBe('forbidden')
    expect((await client.tokens.get(t.id)).data).toBe('changed')
  })

  it('updating a token into a container needs update access there', async () => {
    const { keyFor } = await world()
    const { client } = await keyFor(
      'private',
      [],
      [
        {
          description: '',
          priority: 1,
          container: '/general/',
          transform: 'reveal',
          permissions: ['token:update', 'token:read'],
        },
      ],
    )
    expect((await failure(client.tokens.update('ssn-1', { containers: ['/pci/high/'] }))).code).toBe(
      'forbidden',
    )
    await client.tokens.update('ssn-1', { containers: ['/general/high/'] })
  })

  it('unknown and missing keys are unauthenticated; management keys cannot touch tokens', async () => {
    const { service, keyFor } = await world()
    expect((await failure(service.connect('key_nope').tokens.get('card-1'))).code).toBe('unauthenticated')
    expect((await failure(service.connect('').tokens.get('card-1'))).code).toBe('unauthenticated')
    const mgmt = await keyFor('management', ['application:read'])
    expect((await failure(mgmt.client.tokens.get('card-1'))).code).toBe('forbidden')
  })
})

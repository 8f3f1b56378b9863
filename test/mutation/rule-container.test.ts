/**
 * An access rule's `container` covers that container and the ones below it: a prefix of the
 * token's container path, never a path that merely contains it (`/pci/` does not cover
 * `/general/pci/`). The same holds for a session's `container starts_with` condition.
 */
import { describe, expect, it } from 'vitest'
import type { AccessRule } from '../../src/kernel/types.js'
import { failure, setup } from '../core/setup.js'

const PCI_REVEAL: AccessRule = {
  description: 'pci',
  priority: 1,
  container: '/pci/',
  transform: 'reveal',
  permissions: ['token:read'],
}

async function world() {
  const s = await setup()
  await s.client.tokens.create({ id: 'inside', type: 'token', data: 'in', containers: ['/pci/high/'] })
  await s.client.tokens.create({ id: 'elsewhere', type: 'token', data: 'out', containers: ['/general/pci/'] })
  await s.client.tokens.create({ id: 'suffix', type: 'token', data: 'out', containers: ['/x/pci/'] })
  return s
}

describe("a rule's container is a prefix, not a substring", () => {
  it('an application rule for /pci/ reveals /pci/high/ and nothing in /general/pci/ or /x/pci/', async () => {
    const s = await world()
    const { client } = await s.keyFor('private', [], [PCI_REVEAL])
    expect((await client.tokens.get('inside')).data).toBe('in')
    for (const id of ['elsewhere', 'suffix'])
      expect((await failure(client.tokens.get(id))).code).toBe('forbidden')
    expect((await client.tokens.listV2()).data.map((t) => t.id)).toEqual(['inside'])
  })

  it('a session rule `container starts_with /pci/` covers /pci/high/ only', async () => {
    const s = await world()
    const pub = await s.keyFor('public', ['token:create'])
    const { session_key, nonce } = await pub.client.sessions.create()
    await s.client.sessions.authorize({
      nonce,
      rules: [
        {
          description: 'pci',
          priority: 1,
          conditions: [{ attribute: 'container', operator: 'starts_with', value: '/pci/' }],
          transform: 'reveal',
          permissions: ['token:read'],
        },
      ],
    })
    const session = s.service.connect(session_key)
    expect((await session.tokens.get('inside')).data).toBe('in')
    for (const id of ['elsewhere', 'suffix'])
      expect((await failure(session.tokens.get(id))).code).toBe('forbidden')
  })
})

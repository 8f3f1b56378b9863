import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { countingReads } from '../core/read-probes.js'
import { setup } from '../core/setup.js'

describe('search work does not tell what an unreadable token holds', () => {
  it('a key limited to /general/ probing a /pci/ token for a value does the same reads whether it holds it or not', async () => {
    const { store, count } = countingReads(memoryStore())
    const { client, keyFor } = await setup({ store })
    await client.tokens.create({
      id: 'pci-09998-cust-jane',
      type: 'card_like',
      data: '4242424242424242',
      containers: ['/pci/'],
      search_indexes: ['{{ data }}'],
    })
    await client.tokens.create({ id: 'gen-1', type: 'card_like', data: 'x', containers: ['/general/'] })
    const limited = (
      await keyFor(
        'private',
        [],
        [
          {
            description: 'general only',
            priority: 1,
            container: '/general/',
            transform: 'reveal',
            permissions: ['token:read', 'token:search'],
          },
        ],
      )
    ).client
    const work = async (query: string) => {
      Object.assign(count, { entries: 0, heads: 0, tokens: 0 })
      const page = await limited.tokens.searchV2({ query, size: 10 })
      expect(page.data).toEqual([])
      return { ...count }
    }
    for (const shape of ['id:pci-09998-cust-jane AND data:%', 'type:card_like AND data:%']) {
      const holds = await work(shape.replace('%', '4242424242424242'))
      const lacks = await work(shape.replace('%', '4000000000000002'))
      expect(holds).toEqual(lacks)
    }
  })
})

/**
 * A tenant where `/pci/` holds the value V1 (not V2) and `/general/` holds both, each once: a key
 * that reads `/general/` alone finds one token for either value, and must do the same work for
 * both, whatever `/pci/` holds.
 */
async function probedTenant() {
  const { store, count } = countingReads(memoryStore())
  const kit = await setup({ store })
  const { client } = kit
  const indexed = { type: 'token', search_indexes: ['{{ data }}'] }
  await client.tokens.create({ id: 'pci-1', data: 'V1-4242', containers: ['/pci/'], ...indexed })
  await client.tokens.create({ id: 'gen-1', data: 'V1-4242', containers: ['/general/'], ...indexed })
  await client.tokens.create({ id: 'gen-2', data: 'V2-4000', containers: ['/general/'], ...indexed })
  for (let i = 0; i < 5; i++)
    await client.tokens.create({ id: `gen-x${i}`, data: `other-${i}`, containers: ['/general/'], ...indexed })
  const fingerprint = async (id: string) => (await client.tokens.get(id)).fingerprint as string
  const fingerprints = { V1: await fingerprint('gen-1'), V2: await fingerprint('gen-2') }
  expect(await fingerprint('pci-1')).toBe(fingerprints.V1)
  /** The store reads `call` makes, and its answer's ids. */
  const work = async (call: () => Promise<{ data: Array<{ id?: string }> }>) => {
    Object.assign(count, { entries: 0, heads: 0, tokens: 0 })
    const ids = (await call()).data.map((t) => t.id)
    return { reads: { ...count }, ids }
  }
  return { ...kit, fingerprints, work }
}

const readsGeneral = (permissions: Array<'token:read' | 'token:search'>) => ({
  description: 'general only',
  priority: 1,
  container: '/general/',
  transform: 'reveal' as const,
  permissions,
})

describe('a query made only of value terms does not tell what an unreadable token holds', () => {
  it('a key with rules: data: alone, fingerprint: alone (search and v2 list) do the same reads for a held and a missing value', async () => {
    const { keyFor, fingerprints, work } = await probedTenant()
    const limited = (await keyFor('private', [], [readsGeneral(['token:read', 'token:search'])])).client
    const shapes = {
      'data: (v2)': (v: 'V1' | 'V2') =>
        limited.tokens.searchV2({ query: `data:${v}-${v === 'V1' ? 4242 : 4000}` }),
      'data: (v1)': (v: 'V1' | 'V2') =>
        limited.tokens.search({ query: `data:${v}-${v === 'V1' ? 4242 : 4000}` }),
      'fingerprint:': (v: 'V1' | 'V2') =>
        limited.tokens.searchV2({ query: `fingerprint:${fingerprints[v]}` }),
      'OR of data:': (v: 'V1' | 'V2') =>
        limited.tokens.searchV2({ query: `data:${v}-${v === 'V1' ? 4242 : 4000} OR data:nothing` }),
      'v2 list ?fingerprint=': (v: 'V1' | 'V2') => limited.tokens.listV2({ fingerprint: fingerprints[v] }),
    }
    for (const [shape, call] of Object.entries(shapes)) {
      const held = await work(() => call('V1'))
      const missing = await work(() => call('V2'))
      expect({ shape, ids: held.ids }).toEqual({ shape, ids: ['gen-1'] })
      expect({ shape, ids: missing.ids }).toEqual({ shape, ids: ['gen-2'] })
      expect({ shape, reads: held.reads }).toEqual({ shape, reads: missing.reads })
    }
  })

  it('a key with permissions only and no token:read can read no token: it reads nothing for either value', async () => {
    const { keyFor, work } = await probedTenant()
    const blind = (await keyFor('private', ['token:search'])).client
    const held = await work(() => blind.tokens.searchV2({ query: 'data:V1-4242' }))
    const missing = await work(() => blind.tokens.searchV2({ query: 'data:V2-4000' }))
    expect(held).toEqual(missing)
    expect(held).toEqual({ reads: { entries: 0, heads: 0, tokens: 0 }, ids: [] })
  })

  it('a key that reads every token (permissions, or a rule on /) has nothing to hide: the index answers it', async () => {
    const { keyFor, work } = await probedTenant()
    const broad = [
      (await keyFor('private', ['token:read', 'token:search'])).client,
      (await keyFor('private', [], [{ ...readsGeneral(['token:read', 'token:search']), container: '/' }]))
        .client,
    ]
    for (const key of broad) {
      const found = await work(() => key.tokens.searchV2({ query: 'data:V1-4242' }))
      // Both holders answered (masked or revealed), and nothing but their heads read.
      expect(found).toEqual({ reads: { entries: 2, heads: 2, tokens: 2 }, ids: ['gen-1', 'pci-1'] })
    }
  })
})

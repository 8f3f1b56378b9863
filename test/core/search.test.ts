import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { unchecked } from '../../src/index.js'
import type { Token } from '../../src/types.js'
import { failure, setup } from './setup.js'

const ids = (page: { data: Token[] }) => page.data.map((t) => t.id)

// Basis Theory's docs/api/tokens/search.mdx (Search Tokens v1 and v2, "Query Syntax", "Searching
// Data"): a Lucene-based query over token fields, `data` only through `search_indexes`.
describe('token search', () => {
  it('matches id, type, containers, metadata (case-insensitive), with AND, OR, NOT, parentheses and wildcards', async () => {
    const { client } = await setup()
    await client.tokens.create({ id: 'a1', type: 'token', data: 'x', metadata: { customer_id: 'Cus_1' } })
    await client.tokens.create({
      id: 'a2',
      type: 'card_like',
      data: 'x',
      containers: ['/pci/high/'],
      metadata: { customer_id: 'cus_2', user_id: '1234' },
    })
    await client.tokens.create({ id: 'b1', type: 'token', data: 'x', containers: ['/pii/low/', '/pci/low/'] })
    const q = async (query: string) => ids(await client.tokens.search({ query }))
    expect(await q('')).toEqual(['a1', 'a2', 'b1'])
    expect(await q('id:a2')).toEqual(['a2'])
    expect(await q('id:a*')).toEqual(['a1', 'a2'])
    expect(await q('id:?1')).toEqual(['a1', 'b1'])
    expect(await q('type:token')).toEqual(['a1', 'b1'])
    expect(await q('type:TOKEN')).toEqual([])
    expect(await q('container:/pci/high/')).toEqual(['a2'])
    expect(await q('containers:/pci/*')).toEqual(['a2', 'b1'])
    expect(await q('containers:/general/high/')).toEqual(['a1'])
    expect(await q('metadata.customer_id:cus_1')).toEqual(['a1'])
    expect(await q('metadata.customer_id:CUS_*')).toEqual(['a1', 'a2'])
    expect(await q('metadata.customer_id:cus_2 AND metadata.user_id:1234')).toEqual(['a2'])
    expect(await q('metadata.customer_id:cus_1 OR metadata.user_id:1234')).toEqual(['a1', 'a2'])
    expect(await q('metadata.customer_id:*')).toEqual(['a1', 'a2'])
    expect(await q('NOT metadata.customer_id:*')).toEqual(['b1'])
    expect(await q('type:token AND NOT (id:a1 OR id:zz)')).toEqual(['b1'])
    expect(await q('(type:token OR type:card_like) AND id:a2')).toEqual(['a2'])
    expect(await q('type:token OR id:a2')).toEqual(['a1', 'a2', 'b1'])
    expect(await q('type:token AND (id:a1 OR id:a2)')).toEqual(['a1'])
    expect(await q('id:nope OR id:b1')).toEqual(['b1'])
    expect(await q('metadata.nope:1')).toEqual([])
    expect(await q('metadata.customer_id:"cus_1"')).toEqual(['a1'])
  })

  it('matches created_by and modified_by, the applications that wrote the token', async () => {
    const { client, full, keyFor } = await setup()
    const other = await keyFor('private', ['token:create', 'token:update', 'token:read'])
    await client.tokens.create({ id: 'mine', type: 'token', data: 'x' })
    await other.client.tokens.create({ id: 'theirs', type: 'token', data: 'x' })
    await other.client.tokens.update('mine', { metadata: { by: 'other' } })
    const q = async (query: string) => ids(await client.tokens.search({ query }))
    expect(await q(`created_by:${full.application.id}`)).toEqual(['mine'])
    expect(await q(`created_by:${other.application.id}`)).toEqual(['theirs'])
    expect(await q(`modified_by:${other.application.id}`)).toEqual(['mine'])
    expect(await q(`updated_by:${other.application.id} AND created_by:${full.application.id}`)).toEqual([
      'mine',
    ])
    expect(await q(`NOT modified_by:*`)).toEqual(['theirs'])
    expect(await q('created_by:nobody')).toEqual([])
  })

  it('matches fingerprints exactly (alone, the store filters by it)', async () => {
    const { client } = await setup()
    const a = await client.tokens.create({ id: 'a', type: 'token', data: 'same' })
    await client.tokens.create({ id: 'b', type: 'token', data: 'same' })
    await client.tokens.create({ id: 'c', type: 'token', data: 'other' })
    expect(a.fingerprint).toBeTypeOf('string')
    const q = async (query: string) => ids(await client.tokens.search({ query }))
    expect(await q(`fingerprint:${a.fingerprint}`)).toEqual(['a', 'b'])
    expect(await q(`fingerprint:"${a.fingerprint}" AND NOT id:a`)).toEqual(['b'])
    expect(await q(`fingerprint:${a.fingerprint} OR id:c`)).toEqual(['a', 'b', 'c'])
    expect(await q('fingerprint:nope')).toEqual([])
    expect(await q('fingerprint:*')).toEqual(['a', 'b', 'c'])
  })

  it('matches timestamps by range, comparison and day; expired tokens never match', async () => {
    const { client, clock } = await setup()
    // The clock starts at 2030-01-01T00:00:00.000Z.
    await client.tokens.create({ id: 'old', type: 'token', data: 'x' })
    clock.advance(2 * 86_400_000)
    await client.tokens.create({ id: 'new', type: 'token', data: 'x', expires_at: '2030-01-10T00:00:00Z' })
    await client.tokens.create({ id: 'soon', type: 'token', data: 'x', expires_at: '2030-01-03T01:00:00Z' })
    clock.advance(60_000)
    await client.tokens.update('old', { metadata: { touched: 'yes' } })
    const q = async (query: string) => ids(await client.tokens.search({ query }))
    expect(await q('created_at:[2030-01-02 TO *]')).toEqual(['new', 'soon'])
    expect(await q('created_at:[* TO 2030-01-01]')).toEqual(['old'])
    expect(await q('created_at:{2030-01-01 TO *]')).toEqual(['new', 'soon'])
    expect(await q('created_at:2030-01-03')).toEqual(['new', 'soon'])
    expect(await q('created_at:"2030-01-01T00:00:00Z"')).toEqual(['old'])
    expect(await q('created_at:<2030-01-03T00:00:00Z')).toEqual(['old'])
    expect(await q('created_at:<=2030-01-03T00:00:00Z')).toEqual(['new', 'old', 'soon'])
    expect(await q('updated_at:*')).toEqual(['old'])
    expect(await q('updated_at:>=2030-01-03T00:01:00Z')).toEqual(['old'])
    expect(await q('expires_at:[2030-01-05 TO 2030-01-31]')).toEqual(['new'])
    expect(await q('NOT expires_at:*')).toEqual(['old'])
    clock.advance(60 * 60_000)
    // `soon` expired: no query finds it, not even one that names it.
    expect(await q('id:soon')).toEqual([])
    expect(await q('NOT id:new')).toEqual(['old'])
    expect(await q('')).toEqual(['new', 'old'])
  })

  it('matches data only through search_indexes: every index value, and data.<path> for bare references', async () => {
    const { client } = await setup()
    const card = await client.tokens.create({
      id: 'card',
      type: 'token',
      data: { number: '4242424242424242', name: 'Ann Lee' },
      search_indexes: [
        '{{ data.number }}',
        '{{ data.number | last4 }}',
        "{{ data.name | replace: ' ', '-' }}",
      ],
    })
    expect(card.search_indexes).toEqual([
      '{{ data.number }}',
      '{{ data.number | last4 }}',
      "{{ data.name | replace: ' ', '-' }}",
    ])
    await client.tokens.create({
      id: 'ssn',
      type: 'token',
      data: '123-45-6789',
      search_indexes: ['{{ data }}', "{{ data | remove: '-' }}"],
    })
    await client.tokens.create({ id: 'plain', type: 'token', data: '4242' })
    const q = async (query: string) => ids(await client.tokens.search({ query }))
    expect(await q('data:4242424242424242')).toEqual(['card'])
    expect(await q('data:4242')).toEqual(['card'])
    expect(await q('data.number:4242424242424242')).toEqual(['card'])
    expect(await q('data.number:4242')).toEqual([])
    expect(await q('data:Ann-Lee')).toEqual(['card'])
    expect(await q('data:ann-lee')).toEqual([])
    expect(await q('data:123-45-6789')).toEqual(['ssn'])
    expect(await q('data:123456789')).toEqual(['ssn'])
    expect(await q('data:"123-45-6789"')).toEqual(['ssn'])
    expect(await q('data:6789')).toEqual([])
    expect(await q('data:*')).toEqual(['card', 'ssn'])
    expect(await q('data:4242 OR data:123456789')).toEqual(['card', 'ssn'])
    // The answer shows the expressions, never the hashes or the evaluated values.
    const found = (await client.tokens.search({ query: 'data:4242' })).data[0]!
    expect(Object.keys(found)).not.toContain('search_index_hashes')
    expect(Object.keys(found)).not.toContain('search_index_values')
    expect((await client.tokens.get('card')).search_indexes).toHaveLength(3)

    // An update of data re-indexes; new expressions replace the old; null removes them.
    await client.tokens.update('card', { data: { number: '5555555555554444', name: 'Ann Lee' } })
    expect(await q('data:4242')).toEqual([])
    expect(await q('data:4444')).toEqual(['card'])
    await client.tokens.update('card', { metadata: { k: 'v' } })
    expect(await q('data:4444')).toEqual(['card'])
    await client.tokens.update('card', { search_indexes: ['{{ data.name }}'] })
    expect(await q('data:4444')).toEqual([])
    expect(await q('data.name:"Ann Lee"')).toEqual(['card'])
    await client.tokens.update('card', { search_indexes: null })
    expect(await q('data:*')).toEqual(['ssn'])
    expect((await client.tokens.get('card')).search_indexes).toBeUndefined()
  })

  it('indexes tokens made by tokenize and child create the same way', async () => {
    const { client } = await setup()
    await client.tokens.create({ id: 'parent', type: 'token', data: 'p' })
    await client.tokens.tokenize({
      a: { id: 'tk', type: 'token', data: { n: '555' }, search_indexes: ['{{ data.n }}'] },
    })
    await client.tokens.children.create('parent', {
      id: 'kid',
      type: 'token',
      data: { n: '666' },
      search_indexes: ['{{ data.n }}'],
    })
    expect(ids(await client.tokens.search({ query: 'data.n:555 OR data.n:666' }))).toEqual(['kid', 'tk'])
    const bad = await failure(
      client.tokens.tokenize({ a: { type: 'token', data: { n: '1' }, search_indexes: ['{{ data.x }}'] } }),
    )
    expect(bad.code).toBe('validation_failed')
    expect(JSON.stringify(bad.issues)).toContain('search_indexes.0')
  })

  it('refuses bad search_indexes with 400 and writes nothing', async () => {
    const { client } = await setup()
    const bad = async (search_indexes: unknown, data: unknown = { a: '1' }) =>
      (await failure(unchecked(client).tokens.create({ id: 't', type: 'token', data, search_indexes })))
        .message
    expect(await bad(['{{ data.missing }}'])).toContain('search_indexes.0')
    expect(await bad(['{{ data }}'])).toContain('must result in a single value')
    expect(await bad(['{{ data.a | nope }}'])).toContain('unknown filter')
    expect(await bad(['{{ data.a'])).toContain('search_indexes.0')
    expect(await bad(['{{ tenant_id }}'])).toContain('search_indexes.0: must result in a value')
    expect(await bad(Array.from({ length: 21 }, (_, i) => `{{ data.a | slice: ${i} }}`))).toContain(
      'at most 20',
    )
    expect(await bad(['{{ data.a | slice: 5 }}'])).toContain('must result in a value')
    expect(await bad('{{ data }}')).toContain('search_indexes')
    expect((await client.tokens.list()).data).toEqual([])
    await client.tokens.create({ id: 't', type: 'token', data: { a: '1' }, search_indexes: ['{{ data.a }}'] })
    expect((await failure(client.tokens.update('t', { data: { a: null, b: '2' } }))).message).toContain(
      'search_indexes.0',
    )
    expect((await client.tokens.search({ query: 'data:1' })).data.map((t) => t.id)).toEqual(['t'])
  })

  it('keeps search indexes only as keyed hashes: the store never holds the indexed values', async () => {
    const store = memoryStore()
    const { client, service, tenant, keyFor } = await setup({ store })
    const secret = 'Zq9-unique-index-value'
    await client.tokens.create({
      id: 'secret',
      type: 'token',
      data: { note: 'ignored', code: secret },
      search_indexes: ['{{ data.code }}', '{{ data.code | upcase }}', '{{ data.code | last4 }}'],
    })
    const dump = JSON.stringify(await store.dump())
    for (const needle of [secret, secret.toUpperCase(), 'alue', Buffer.from(secret).toString('base64')])
      expect(dump).not.toContain(needle)
    expect(dump).toContain('search_index_hashes')
    expect((await client.tokens.search({ query: `data:${secret.toUpperCase()}` })).data).toHaveLength(1)
    // The same value in another tenant hashes differently: its hashes never match across tenants.
    const other = await service.admin.createTenant({ name: 'other' })
    const stranger = await keyFor(
      'private',
      ['token:create', 'token:read', 'token:search'],
      undefined,
      other.id,
    )
    await stranger.client.tokens.create({
      id: 'x',
      type: 'token',
      data: secret,
      search_indexes: ['{{ data }}'],
    })
    const tokens = (await store.dump()).tokens.filter((t) => t.search_index_hashes)
    expect(tokens.map((t) => t.tenant_id).sort()).toEqual([tenant.id, other.id].sort())
    const [mine, theirs] = tokens
    expect(mine!.search_index_hashes!.filter((h) => theirs!.search_index_hashes!.includes(h))).toEqual([])
    expect(ids(await stranger.client.tokens.search({ query: `data:${secret}` }))).toEqual(['x'])
    expect(ids(await client.tokens.search({ query: `data:${secret}` }))).toEqual(['secret'])
  })

  it('needs token:search (403 without it), and shows only what the caller may read, under its transform', async () => {
    const { client, keyFor } = await setup()
    await client.tokens.create({
      id: 'g',
      type: 'token',
      data: 'general',
      mask: 'g-mask',
      search_indexes: ['{{ data }}'],
    })
    await client.tokens.create({
      id: 'p',
      type: 'token',
      data: 'pci',
      mask: 'p-mask',
      containers: ['/pci/high/'],
      search_indexes: ['{{ data }}'],
    })
    const reader = await keyFor('private', ['token:read'])
    expect((await failure(reader.client.tokens.search({ query: '' }))).code).toBe('forbidden')
    expect((await failure(reader.client.tokens.searchV2({}))).code).toBe('forbidden')
    const searcherOnly = await keyFor('private', ['token:search'])
    expect((await searcherOnly.client.tokens.search()).data).toEqual([])
    const both = await keyFor('private', ['token:read', 'token:search'])
    const seen = await both.client.tokens.search({ query: 'data:pci OR data:general' })
    expect(seen.data.map((t) => [t.id, t.data])).toEqual([
      ['g', 'g-mask'],
      ['p', 'p-mask'],
    ])
    const scoped = await keyFor(
      'private',
      [],
      [
        {
          description: 'pci reveal',
          priority: 1,
          container: '/pci/',
          transform: 'reveal',
          permissions: ['token:read', 'token:search'],
        },
        {
          description: 'general read only',
          priority: 2,
          container: '/general/',
          transform: 'mask',
          permissions: ['token:read'],
        },
      ],
    )
    const scopedSeen = await scoped.client.tokens.search({ query: '' })
    expect(scopedSeen.data.map((t) => [t.id, t.data])).toEqual([['p', 'pci']])
    expect(scopedSeen.pagination.total_items).toBe(1)
    const noSearchRule = await keyFor(
      'private',
      ['token:search'],
      [
        {
          description: 'read',
          priority: 1,
          container: '/',
          transform: 'reveal',
          permissions: ['token:read'],
        },
      ],
    )
    expect((await noSearchRule.client.tokens.search({ query: 'data:pci' })).data).toEqual([])
  })

  it('pages v1 by page and size, v2 by cursor (top-level or page: {start, size}), across store pages', async () => {
    // 325 tokens: more than three of the search's first store pages (100 each).
    const { client } = await setup()
    const count = 325
    const made: string[] = []
    for (let i = 0; i < count; i++) {
      const id = `t${String(i).padStart(4, '0')}`
      made.push(id)
      await client.tokens.create({ id, type: i % 2 ? 'odd' : 'even', data: i, metadata: { n: String(i) } })
    }
    const odd = made.filter((_, i) => i % 2)
    const pages = Math.ceil(odd.length / 10)
    const first = await client.tokens.search({ query: 'type:odd', size: 10 })
    expect(first.pagination).toEqual({
      total_items: odd.length,
      page_number: 1,
      page_size: 10,
      total_pages: pages,
    })
    expect(ids(first)).toEqual(odd.slice(0, 10))
    const last = await client.tokens.search({ query: 'type:odd', size: 10, page: pages })
    expect(ids(last)).toEqual(odd.slice((pages - 1) * 10))
    expect((await client.tokens.search({ query: 'type:odd', page: pages + 1, size: 10 })).data).toEqual([])
    // Not pushed down to the store: the whole query matches every token read.
    const notEven = await client.tokens.search({ query: 'NOT type:even', size: 100, page: 2 })
    expect(ids(notEven)).toEqual(odd.slice(100, 200))
    expect((await client.tokens.search()).pagination.total_items).toBe(count)

    const seen: string[] = []
    let start: string | undefined
    let v2Pages = 0
    do {
      const page = await client.tokens.searchV2({ query: 'type:even', size: 30, ...(start ? { start } : {}) })
      expect(page.pagination.page_size).toBe(30)
      seen.push(...ids(page))
      start = page.pagination.next
      v2Pages++
    } while (start)
    expect(seen).toEqual(made.filter((_, i) => i % 2 === 0))
    expect(v2Pages).toBe(Math.ceil((count - odd.length) / 30))
    const nested = await client.tokens.searchV2({ query: 'type:even', page: { size: 2 } })
    const after = await client.tokens.searchV2({
      query: 'type:even',
      page: { size: 2, start: nested.pagination.next },
    })
    expect([...ids(nested), ...ids(after)]).toEqual(['t0000', 't0002', 't0004', 't0006'])
    expect((await failure(client.tokens.searchV2({ start: 'Zm9yZ2Vk' }))).message).toContain('start')
    expect((await failure(client.tokens.searchV2({ size: 2, page: { size: 2 } }))).code).toBe(
      'validation_failed',
    )
    expect((await failure(client.tokens.search({ size: 101 }))).code).toBe('validation_failed')
    expect((await failure(unchecked(client).tokens.search({ query: 'x', extra: 1 }))).code).toBe(
      'validation_failed',
    )
    expect((await failure(client.tokens.search({ query: 'type:odd AND' }))).message).toContain('character 13')
  }, 60_000)

  it('lets other work run between store pages of a long scan', async () => {
    const { client } = await setup()
    for (let i = 0; i < 300; i += 100) {
      await client.tokens.tokenize(Array.from({ length: 100 }, (_, j) => ({ type: 'token', data: i + j })))
    }
    let ranBefore = false
    let done = false
    setImmediate(() => {
      ranBefore = !done
    })
    const page = await client.tokens.search({ query: 'NOT type:none' })
    done = true
    expect(page.pagination.total_items).toBe(300)
    expect(ranBefore).toBe(true)
  })

  it('sees the caller transaction: staged creates, updates and deletes', async () => {
    const { service, client, vault } = await setup()
    await client.tokens.create({ id: 'b', type: 'token', data: 'b', search_indexes: ['{{ data }}'] })
    await client.tokens.create({ id: 'd', type: 'token', data: 'd' })
    const tx = await client.transactions.create()
    const inTx = service.connect(vault.keys.private, { transactionId: tx.id })
    await inTx.tokens.create({ id: 'a', type: 'token', data: 'a', search_indexes: ['{{ data }}'] })
    await inTx.tokens.create({ id: 'c', type: 'token', data: 'c', search_indexes: ['{{ data }}'] })
    await inTx.tokens.delete('d')
    await inTx.tokens.update('b', { data: 'bb' })
    expect(ids(await inTx.tokens.search({ query: 'data:*' }))).toEqual(['a', 'b', 'c'])
    expect(ids(await inTx.tokens.search({ query: 'data:bb OR data:c' }))).toEqual(['b', 'c'])
    expect(
      ids(
        await inTx.tokens.searchV2({
          size: 1,
          start: (await inTx.tokens.searchV2({ size: 1 })).pagination.next,
        }),
      ),
    ).toEqual(['b'])
    expect(ids(await client.tokens.search({ query: '' }))).toEqual(['b', 'd'])
    expect(ids(await client.tokens.search({ query: 'data:b' }))).toEqual(['b'])
    await client.transactions.commit(tx.id)
    expect(ids(await client.tokens.search({ query: 'data:bb OR data:a' }))).toEqual(['a', 'b'])
  })

  it('search indexes survive an export and an import (hashed again under the new tenant key)', async () => {
    const { client, service, vault } = await setup()
    await client.tokens.create({
      id: 's',
      type: 'token',
      data: { n: '42' },
      search_indexes: ['{{ data.n }}'],
    })
    const tx = await client.transactions.create()
    const inTx = service.connect(vault.keys.private, { transactionId: tx.id })
    await inTx.tokens.create({ id: 't', type: 'token', data: { n: '43' }, search_indexes: ['{{ data.n }}'] })
    const snapshot = await service.admin.exportState()
    // Hashes under the tenant key are not part of a snapshot: a restore makes them again.
    expect(JSON.stringify(snapshot)).not.toContain('search_index_hashes')
    await service.admin.clearState()
    await service.admin.importState(snapshot)
    expect(ids(await client.tokens.search({ query: 'data.n:42 OR data.n:43' }))).toEqual(['s'])
    expect(ids(await inTx.tokens.search({ query: 'data.n:42 OR data.n:43' }))).toEqual(['s', 't'])
  })
})

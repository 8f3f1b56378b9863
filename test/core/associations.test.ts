import { describe, expect, it } from 'vitest'
import { failure, setup } from './setup.js'

describe('token associations', () => {
  it('links, lists, unlinks; duplicate 409, self 400, missing 404', async () => {
    const { client } = await setup()
    const p = await client.tokens.create({ type: 'parent', data: 'p' })
    const a = await client.tokens.create({ type: 'a', data: 'a' })
    await client.tokens.children.link(p.id, a.id)
    expect((await failure(client.tokens.children.link(p.id, a.id))).code).toBe('conflict')
    const self = await failure(client.tokens.children.link(p.id, p.id))
    expect(self.code).toBe('validation_failed')
    expect(self.issues).toHaveProperty('child_id')
    expect((await failure(client.tokens.children.link(p.id, 'nope'))).code).toBe('not_found')
    expect((await failure(client.tokens.children.link('nope', a.id))).code).toBe('not_found')
    // The reverse direction is a separate association.
    await client.tokens.children.link(a.id, p.id)
    const list = await client.tokens.children.list(p.id)
    expect(list.data.map((t) => t.id)).toEqual([a.id])
    expect(list.data[0]!.data).toBe('a')
    await client.tokens.children.unlink(p.id, a.id)
    expect((await failure(client.tokens.children.unlink(p.id, a.id))).code).toBe('not_found')
    expect((await client.tokens.children.list(p.id)).data).toEqual([])
    expect((await client.tokens.children.list(a.id)).data.map((t) => t.id)).toEqual([p.id])
  })

  it('creates a child atomically; the answer has no data; the child is a real token', async () => {
    const { client, store } = await setup()
    const p = await client.tokens.create({ type: 'parent', data: 'p' })
    const child = await client.tokens.children.create(p.id, {
      type: 'note',
      data: { n: 1 },
      metadata: { k: 'v' },
    })
    expect('data' in child).toBe(false)
    expect(child).toMatchObject({ type: 'note', metadata: { k: 'v' } })
    expect((await client.tokens.get(child.id)).data).toEqual({ n: 1 })
    expect((await store.dump()).associations).toMatchObject([{ parent_id: p.id, child_id: child.id }])
    const before = await store.dump()
    expect((await failure(client.tokens.children.create('nope', { type: 'x', data: 1 }))).code).toBe(
      'not_found',
    )
    expect((await failure(client.tokens.children.create(p.id, { id: p.id, type: 'x', data: 1 }))).code).toBe(
      'conflict',
    )
    expect(await store.dump()).toEqual(before)
  })

  it('filters children by id[] and type[], pages them, and reports pagination', async () => {
    const { client } = await setup()
    const p = await client.tokens.create({ type: 'parent', data: 'p' })
    const ids: string[] = []
    for (let i = 0; i < 25; i++) {
      ids.push((await client.tokens.children.create(p.id, { type: i % 2 ? 'odd' : 'even', data: i })).id)
    }
    const first = await client.tokens.children.list(p.id)
    expect(first.pagination).toEqual({ total_items: 25, page_number: 1, page_size: 20, total_pages: 2 })
    expect(first.data.map((t) => t.id)).toEqual(ids.slice(0, 20))
    const second = await client.tokens.children.list(p.id, { page: '2', size: '20' })
    expect(second.data.map((t) => t.id)).toEqual(ids.slice(20))
    const odd = await client.tokens.children.list(p.id, { type: 'odd', size: 5, page: 2 })
    expect(odd.pagination.total_items).toBe(12)
    expect(odd.data.map((t) => t.data)).toEqual([11, 13, 15, 17, 19])
    const some = await client.tokens.children.list(p.id, { id: [ids[3]!, ids[4]!, 'ghost'], type: ['odd'] })
    expect(some.data.map((t) => t.id)).toEqual([ids[3]])
    expect((await client.tokens.children.list(p.id, { page: 9 })).data).toEqual([])
  })

  it('applies each child its own read transform', async () => {
    const { client, keyFor } = await setup()
    const p = await client.tokens.create({ type: 'parent', data: 'p', containers: ['/pub/'] })
    await client.tokens.children.create(p.id, {
      id: 'c-pci',
      type: 'note',
      data: 'pan',
      mask: '****',
      containers: ['/pci/'],
    })
    await client.tokens.children.create(p.id, {
      id: 'c-pub',
      type: 'note',
      data: 'hello',
      containers: ['/pub/'],
    })
    await client.tokens.children.create(p.id, {
      id: 'c-hidden',
      type: 'note',
      data: 'x',
      containers: ['/hidden/'],
    })
    const { client: limited } = await keyFor(
      'private',
      [],
      [
        { description: '', priority: 1, container: '/pci/', transform: 'mask', permissions: ['token:read'] },
        {
          description: '',
          priority: 2,
          container: '/pub/',
          transform: 'reveal',
          permissions: ['token:read'],
        },
      ],
    )
    const list = await limited.tokens.children.list(p.id)
    expect(list.data.map((t) => [t.id, t.data])).toEqual([
      ['c-pci', '****'],
      ['c-pub', 'hello'],
    ])
    expect(list.pagination.total_items).toBe(2)
  })

  it('needs token:read on both to link, token:delete to unlink, token:create + read on the parent for a child', async () => {
    const { client, keyFor } = await setup()
    const p = await client.tokens.create({ type: 'parent', data: 'p', containers: ['/open/'] })
    const secret = await client.tokens.create({ type: 'x', data: 's', containers: ['/closed/'] })
    const c = await client.tokens.create({ type: 'x', data: 'c', containers: ['/open/'] })
    const rule = (permissions: ('token:read' | 'token:create' | 'token:delete')[]) => ({
      description: '',
      priority: 1,
      container: '/open/',
      transform: 'reveal' as const,
      permissions,
    })
    const reader = await keyFor('private', [], [rule(['token:read'])])
    expect((await failure(reader.client.tokens.children.link(p.id, secret.id))).code).toBe('forbidden')
    await reader.client.tokens.children.link(p.id, c.id)
    expect((await failure(reader.client.tokens.children.unlink(p.id, c.id))).code).toBe('forbidden')
    expect(
      (
        await failure(
          reader.client.tokens.children.create(p.id, { type: 'x', data: 1, containers: ['/open/'] }),
        )
      ).code,
    ).toBe('forbidden')
    const creator = await keyFor('private', [], [rule(['token:create'])])
    expect(
      (
        await failure(
          creator.client.tokens.children.create(p.id, { type: 'x', data: 1, containers: ['/open/'] }),
        )
      ).code,
    ).toBe('forbidden')
    const both = await keyFor('private', [], [rule(['token:create', 'token:read', 'token:delete'])])
    await both.client.tokens.children.create(p.id, { type: 'x', data: 1, containers: ['/open/'] })
    await both.client.tokens.children.unlink(p.id, c.id)
  })

  it('deleting a token removes its links both ways', async () => {
    const { client, store } = await setup()
    const a = await client.tokens.create({ type: 'x', data: 'a' })
    const b = await client.tokens.create({ type: 'x', data: 'b' })
    const c = await client.tokens.create({ type: 'x', data: 'c' })
    await client.tokens.children.link(a.id, b.id)
    await client.tokens.children.link(b.id, c.id)
    await client.tokens.delete(b.id)
    expect((await client.tokens.children.list(a.id)).data).toEqual([])
    expect((await failure(client.tokens.children.list(b.id))).code).toBe('not_found')
    expect((await store.dump()).associations).toEqual([])
  })

  it('expired children are not listed', async () => {
    const { client, clock } = await setup()
    const p = await client.tokens.create({ type: 'x', data: 'p' })
    await client.tokens.children.create(p.id, { type: 'x', data: 1, expires_at: '2030-01-01T00:00:10Z' })
    await client.tokens.children.create(p.id, { type: 'x', data: 2 })
    expect((await client.tokens.children.list(p.id)).pagination.total_items).toBe(2)
    clock.advance(10_000)
    const list = await client.tokens.children.list(p.id)
    expect(list.data.map((t) => t.data)).toEqual([2])
    expect(list.pagination.total_items).toBe(1)
  })

  it('an expired token is not found by link, unlink, child create or child list, the moment it expires', async () => {
    const { client, clock } = await setup()
    const p = await client.tokens.create({ type: 'x', data: 'p', expires_at: '2030-01-01T00:00:10Z' })
    const a = await client.tokens.create({ type: 'x', data: 'a' })
    const b = await client.tokens.create({ type: 'x', data: 'b', expires_at: '2030-01-01T00:00:10Z' })
    await client.tokens.children.link(p.id, a.id)
    await client.tokens.children.link(a.id, b.id)
    clock.advance(9_999)
    expect((await client.tokens.children.list(p.id)).data.map((t) => t.id)).toEqual([a.id])
    clock.advance(1)
    const notFound = async (call: Promise<unknown>) => expect((await failure(call)).code).toBe('not_found')
    await notFound(client.tokens.children.link(a.id, p.id))
    await notFound(client.tokens.children.link(b.id, a.id))
    await notFound(client.tokens.children.unlink(p.id, a.id))
    await notFound(client.tokens.children.unlink(a.id, b.id))
    await notFound(client.tokens.children.create(p.id, { type: 'x', data: 1 }))
    await notFound(client.tokens.children.list(p.id))
  })
})

import { describe, expect, it } from 'vitest'
import { failure, setup } from './setup.js'

describe('tokens', () => {
  it('creates, reads, patches and deletes a token', async () => {
    const { client, clock, full } = await setup()
    const created = await client.tokens.create({
      type: 'token',
      data: { number: '4242', exp: '12/30' },
      metadata: { owner: 'ann' },
      containers: ['/pci/high/'],
    })
    expect(created).toMatchObject({
      type: 'token',
      containers: ['/pci/high/'],
      metadata: { owner: 'ann' },
      created_by: full.application.id,
      created_at: '2030-01-01T00:00:00.000Z',
    })
    expect(created.id).toMatch(/^[0-9a-f-]{36}$/)
    clock.advance(1000)
    const patched = await client.tokens.update(created.id, {
      data: { exp: null, cvc: '123' },
      metadata: { owner: null, team: 'x' },
    })
    expect(patched).not.toHaveProperty('data')
    expect(patched.metadata).toEqual({ team: 'x' })
    expect(patched.modified_at).toBe('2030-01-01T00:00:01.000Z')
    expect(patched.modified_by).toBe(full.application.id)
    expect((await client.tokens.get(created.id)).data).toEqual({ number: '4242', cvc: '123' })
    await client.tokens.delete(created.id)
    expect((await failure(client.tokens.get(created.id))).code).toBe('not_found')
    expect((await failure(client.tokens.delete(created.id))).code).toBe('not_found')
  })

  it('defaults containers and metadata, keeps a custom id, refuses a duplicate id', async () => {
    const { client } = await setup()
    const t = await client.tokens.create({ id: 'my-id', type: 'token', data: 'x' })
    expect(t).toMatchObject({ id: 'my-id', containers: ['/general/high/'], metadata: {} })
    expect((await failure(client.tokens.create({ id: 'my-id', type: 'token', data: 'y' }))).code).toBe(
      'conflict',
    )
    expect((await client.tokens.get('my-id')).data).toBe('x')
  })

  it('does not read an expired token', async () => {
    const { client, clock } = await setup()
    const t = await client.tokens.create({ type: 'token', data: 1, expires_at: '2030-01-01T00:01:00Z' })
    expect(t.expires_at).toBe('2030-01-01T00:01:00.000Z')
    expect((await client.tokens.get(t.id)).data).toBe(1)
    clock.advance(60_000)
    expect((await failure(client.tokens.get(t.id))).code).toBe('not_found')
  })

  it('patch removes expires_at and mask with null, and resets containers', async () => {
    const { client } = await setup()
    const t = await client.tokens.create({
      type: 'token',
      data: 1,
      mask: '*',
      expires_at: '2031-01-01T00:00:00Z',
      containers: ['/a/'],
    })
    const p = await client.tokens.update(t.id, { expires_at: null, mask: null, containers: null })
    expect(p.expires_at).toBeUndefined()
    expect(p.mask).toBeUndefined()
    expect(p.containers).toEqual(['/general/high/'])
  })

  it('masks reads without rules and reveals only through a reveal rule', async () => {
    const { client, keyFor } = await setup()
    const t = await client.tokens.create({ type: 'ssn', data: '123-45-6789', mask: '***-**-6789' })
    const plain = await client.tokens.get(t.id)
    expect(plain.data).toBe('123-45-6789')
    const reader = await keyFor('private', ['token:read'])
    expect((await reader.client.tokens.get(t.id)).data).toBe('***-**-6789')
    const noMask = await client.tokens.create({ type: 'ssn', data: 'secret' })
    expect((await reader.client.tokens.get(noMask.id)).data).toBeUndefined()
  })

  it('loses no acknowledged patch when patches race: each merges on top of the others', async () => {
    const { client } = await setup()
    const t = await client.tokens.create({ type: 'token', data: { base: true }, metadata: {} })
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) =>
        client.tokens.update(t.id, { data: { [`k${i}`]: i }, metadata: { [`m${i}`]: String(i) } }),
      ),
    )
    const acknowledged = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []))
    expect(acknowledged).toHaveLength(6)
    const final = await client.tokens.get(t.id)
    for (const i of acknowledged) {
      expect((final.data as Record<string, unknown>)[`k${i}`]).toBe(i)
      expect(final.metadata[`m${i}`]).toBe(String(i))
    }
    expect((final.data as Record<string, unknown>).base).toBe(true)
  })
})

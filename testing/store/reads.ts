import { expect, it } from 'vitest'
import type { Store, TokenTerm } from '../../src/store/index.js'
import { link, put, T, token, U } from './records.js'

/** Every id `term` answers, read in keyset pages of `limit`. */
async function walk(store: Store, tenant: string, term: TokenTerm | undefined, limit: number) {
  const out: string[] = []
  let after: string | undefined
  for (;;) {
    const ids = await store.findTokenIds(tenant, {
      limit,
      ...(term ? { term } : {}),
      ...(after ? { after } : {}),
    })
    expect(ids.length).toBeLessThanOrEqual(limit)
    out.push(...ids)
    if (ids.length < limit) return out
    after = ids[ids.length - 1]
  }
}

/** Index-shaped reads: exact-term keyset reads, link keysets, heads and batch gets. Registered inside the store suite's `describe`. */
export function readsTests(fresh: () => Promise<Store>): void {
  it('findTokenIds answers each exact term in id order, after a key, up to a limit, per tenant', async () => {
    const store = await fresh()
    await store.write({
      ops: [
        put(
          token('b', {
            type: 'card',
            fingerprint: 'fp1',
            metadata: { Order: 'ORD-1' },
            containers: ['/pci/'],
          }),
        ),
        put(token('a', { type: 'card', metadata: { Order: 'ord-2' }, search_index_hashes: ['h1', 'h2'] })),
        put(token('c', { type: 'bank', fingerprint: 'fp1', metadata: { order: 'ord-1' } })),
        put(token('d', { search_index_hashes: ['h2'], containers: ['/pci/', '/general/high/'] })),
        put(token('a', { tenant_id: U, type: 'card', fingerprint: 'fp1' })),
      ],
    })
    const ids = (term: TokenTerm | undefined, after?: string, limit = 10) =>
      store.findTokenIds(T, { limit, ...(term ? { term } : {}), ...(after ? { after } : {}) })
    expect(await ids(undefined)).toEqual(['a', 'b', 'c', 'd'])
    expect(await walk(store, T, undefined, 3)).toEqual(['a', 'b', 'c', 'd'])
    expect(await walk(store, T, { kind: 'search_index', value: 'h2' }, 1)).toEqual(['a', 'd'])
    expect(await ids(undefined, 'b')).toEqual(['c', 'd'])
    expect(await ids(undefined, 'a', 2)).toEqual(['b', 'c'])
    expect(await ids(undefined, undefined, 0)).toEqual([])
    expect(await ids({ kind: 'type', value: 'card' })).toEqual(['a', 'b'])
    expect(await ids({ kind: 'type', value: 'Card' })).toEqual([])
    expect(await ids({ kind: 'fingerprint', value: 'fp1' })).toEqual(['b', 'c'])
    expect(await ids({ kind: 'fingerprint', value: 'fp1' }, 'b')).toEqual(['c'])
    expect(await ids({ kind: 'container', value: '/pci/' })).toEqual(['b', 'd'])
    expect(await ids({ kind: 'container', value: '/pci' })).toEqual([])
    // Metadata: the key as stored, the value lower-cased.
    expect(await ids({ kind: 'metadata', key: 'Order', value: 'ord-1' })).toEqual(['b'])
    expect(await ids({ kind: 'metadata', key: 'order', value: 'ord-1' })).toEqual(['c'])
    expect(await ids({ kind: 'metadata', key: 'Order', value: 'ORD-1' })).toEqual([])
    expect(await ids({ kind: 'search_index', value: 'h2' })).toEqual(['a', 'd'])
    expect(await ids({ kind: 'search_index', value: 'h2' }, undefined, 1)).toEqual(['a'])
    expect(await ids({ kind: 'id', value: 'c' })).toEqual(['c'])
    expect(await ids({ kind: 'id', value: 'c' }, 'c')).toEqual([])
    expect(await ids({ kind: 'id', value: 'zz' })).toEqual([])
    expect(await store.findTokenIds(U, { limit: 10, term: { kind: 'fingerprint', value: 'fp1' } })).toEqual([
      'a',
    ])
    expect(await store.findTokenIds('nobody', { limit: 10 })).toEqual([])
    await store.close()
  })

  it('findTokenIds follows every put and delete: old terms leave the index in the same write', async () => {
    const store = await fresh()
    await store.write({
      ops: [put(token('a', { type: 'x', metadata: { k: 'One' }, search_index_hashes: ['h'] }))],
    })
    await store.write({ ops: [put(token('a', { type: 'y', metadata: { k: 'two' } }))] })
    const ids = (term: TokenTerm) => store.findTokenIds(T, { term, limit: 10 })
    expect(await ids({ kind: 'type', value: 'x' })).toEqual([])
    expect(await ids({ kind: 'type', value: 'y' })).toEqual(['a'])
    expect(await ids({ kind: 'metadata', key: 'k', value: 'one' })).toEqual([])
    expect(await ids({ kind: 'metadata', key: 'k', value: 'two' })).toEqual(['a'])
    expect(await ids({ kind: 'search_index', value: 'h' })).toEqual([])
    await store.write({ ops: [{ op: 'token.delete', tenant_id: T, id: 'a' }] })
    expect(await ids({ kind: 'type', value: 'y' })).toEqual([])
    expect(await store.findTokenIds(T, { limit: 10 })).toEqual([])
    // A refused batch indexes nothing.
    await store.write({
      checks: [{ check: 'token.present', tenant_id: T, id: 'zz' }],
      ops: [put(token('b'))],
    })
    expect(await store.findTokenIds(T, { limit: 10 })).toEqual([])
    await store.close()
  })

  it('keyset pages under concurrent writes never repeat or skip a token that exists for the whole walk', async () => {
    const store = await fresh()
    const stable = Array.from({ length: 60 }, (_, i) => `s${String(i).padStart(3, '0')}`)
    await store.write({ ops: stable.map((id) => put(token(id, { type: 'k' }))) })
    const seen: string[] = []
    let after: string | undefined
    let previous: string[] = []
    for (let round = 0; ; round++) {
      const ids = await store.findTokenIds(T, {
        limit: 7,
        term: { kind: 'type', value: 'k' },
        ...(after ? { after } : {}),
      })
      seen.push(...ids)
      // Between pages: tokens come and go before, among and after the stable ones.
      const churn = [`a${round}`, `s${String(round * 3).padStart(3, '0')}x`, `z${round}`]
      await store.write({
        ops: [
          ...churn.map((id) => put(token(id, { type: 'k' }))),
          ...previous.map((id) => ({ op: 'token.delete' as const, tenant_id: T, id })),
        ],
      })
      previous = churn
      if (ids.length < 7) break
      after = ids[ids.length - 1]
    }
    const stableSeen = seen.filter((id) => stable.includes(id))
    expect(stableSeen).toEqual(stable)
    expect(new Set(seen).size).toBe(seen.length)
    expect([...seen].sort()).toEqual(seen.slice().sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)))
    await store.close()
  })

  it('findChildIds answers a parent links in link order from a key, a relinked child last', async () => {
    const store = await fresh()
    await store.write({ ops: ['p', 'c1', 'c2', 'c3', 'c4'].map((id) => put(token(id))) })
    await store.write({ ops: [link('p', 'c3'), link('p', 'c1'), link('p', 'c4'), link('p', 'c2')] })
    const all = await store.findChildIds(T, 'p', { limit: 10 })
    expect(all.map((c) => c.id)).toEqual(['c3', 'c1', 'c4', 'c2'])
    const first = await store.findChildIds(T, 'p', { limit: 2 })
    expect(first.map((c) => c.id)).toEqual(['c3', 'c1'])
    const rest = await store.findChildIds(T, 'p', { limit: 10, after: first[1]!.key })
    expect(rest.map((c) => c.id)).toEqual(['c4', 'c2'])
    await store.write({
      ops: [{ op: 'association.delete', tenant_id: T, parent_id: 'p', child_id: 'c1' }, link('p', 'c1')],
    })
    expect((await store.findChildIds(T, 'p', { limit: 10 })).map((c) => c.id)).toEqual([
      'c3',
      'c4',
      'c2',
      'c1',
    ])
    // A key whose link is gone still resumes after its place.
    expect((await store.findChildIds(T, 'p', { limit: 10, after: first[1]!.key })).map((c) => c.id)).toEqual([
      'c4',
      'c2',
      'c1',
    ])
    expect(await store.findChildIds(U, 'p', { limit: 10 })).toEqual([])
    expect(await store.findChildIds(T, 'p', { limit: 0 })).toEqual([])
    await store.close()
  })

  it('getTokenHeads answers plain fields only, getTokens whole records, both in the order asked', async () => {
    const store = await fresh()
    const a = token('a', { mask: { m: 1 }, metadata: { k: 'v' }, expires_at: '2000-01-01T00:00:00.000Z' })
    await store.write({ ops: [put(a), put(token('b')), put(token('c', { tenant_id: U }))] })
    const heads = await store.getTokenHeads(T, ['b', 'missing', 'a', 'b', 'c'])
    expect(heads.map((h) => h.id)).toEqual(['b', 'a'])
    const { data: _d, mask: _m, ...head } = a
    // A store may add `stored_bytes` (what the sealed fields take): the rest is the plain fields.
    const { stored_bytes: bytes, ...plain } = heads[1]!
    expect(plain).toEqual(head)
    if (bytes !== undefined) expect(bytes).toBeGreaterThan(0)
    expect(heads[1]).not.toHaveProperty('data')
    expect(heads[1]).not.toHaveProperty('mask')
    const whole = await store.getTokens(T, ['a', 'b', 'a', 'c'])
    expect(whole).toEqual([a, token('b')])
    ;(whole[0]!.metadata as Record<string, string>).k = 'changed'
    expect((await store.getTokens(T, ['a']))[0]!.metadata).toEqual({ k: 'v' })
    expect(await store.getTokens(T, [])).toEqual([])
    expect(await store.getTokenHeads(U, ['a', 'b'])).toEqual([])
    await store.close()
  })
}

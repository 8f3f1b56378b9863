import { expect, it } from 'vitest'
import type { StoredToken } from '../../src/kernel/index.js'
import type { Check, Op, Store } from '../../src/store/index.js'
import { LATER, link, NOW, put, T, token, U } from './records.js'

/** Tokens and their links: copies, refused batches, token and link guards, links of a token, child lists, compare-and-set races. Registered inside the store suite's `describe`. */
export function tokensTests(fresh: () => Promise<Store>): void {
  it('writes tokens and reads back copies scoped by tenant', async () => {
    const store = await fresh()
    expect(await store.write({ ops: [put(token('a'))] })).toEqual({ ok: true })
    const got = await store.getToken(T, 'a')
    expect(got).toEqual(token('a'))
    ;(got!.data as { value: string }).value = 'mutated'
    expect((await store.getToken(T, 'a'))!.data).toEqual({ value: 'a' })
    expect(await store.getToken(U, 'a')).toBeNull()
    expect(await store.getToken(T, 'missing')).toBeNull()
    await store.close()
  })

  it('refuses a whole batch when one check fails, and writes nothing', async () => {
    const store = await fresh()
    await store.write({ ops: [put(token('a'))] })
    const before = await store.dump()
    const result = await store.write({
      checks: [
        { check: 'token.absent', tenant_id: T, id: 'b' },
        { check: 'token.absent', tenant_id: T, id: 'a' },
      ],
      ops: [put(token('b')), put(token('c'))],
    })
    expect(result).toEqual({ ok: false, failed: { check: 'token.absent', tenant_id: T, id: 'a' } })
    expect(await store.dump()).toEqual(before)
    await store.close()
  })

  it('evaluates token and association checks', async () => {
    const store = await fresh()
    await store.write({ ops: [put(token('p')), put(token('c')), link('p', 'c')] })
    const ok = async (check: Parameters<Store['write']>[0]['checks']) =>
      (await store.write({ checks: check ?? [], ops: [] })).ok
    expect(await ok([{ check: 'token.present', tenant_id: T, id: 'p' }])).toBe(true)
    expect(await ok([{ check: 'token.present', tenant_id: U, id: 'p' }])).toBe(false)
    expect(await ok([{ check: 'association.present', tenant_id: T, parent_id: 'p', child_id: 'c' }])).toBe(
      true,
    )
    expect(await ok([{ check: 'association.present', tenant_id: T, parent_id: 'c', child_id: 'p' }])).toBe(
      false,
    )
    expect(await ok([{ check: 'association.absent', tenant_id: T, parent_id: 'p', child_id: 'c' }])).toBe(
      false,
    )
    expect(await store.hasAssociation(T, 'p', 'c')).toBe(true)
    expect(await store.hasAssociation(U, 'p', 'c')).toBe(false)
    await store.close()
  })

  it('token.unchanged holds only for the token exactly as stored', async () => {
    const store = await fresh()
    const t = token('a', { metadata: { k: 'v' }, data: { x: [1, { y: 'z' }] } })
    await store.write({ ops: [put(t)] })
    const holds = async (candidate: StoredToken, tenant = T) =>
      (
        await store.write({
          checks: [{ check: 'token.unchanged', tenant_id: tenant, id: 'a', token: candidate }],
          ops: [],
        })
      ).ok
    expect(await holds(t)).toBe(true)
    expect(await holds({ ...t, data: { x: [1, { y: 'z' }] }, metadata: { k: 'v' } })).toBe(true)
    expect(await holds({ ...t, metadata: { k: 'w' } })).toBe(false)
    expect(await holds({ ...t, data: { x: [1, { y: 'z' }], extra: 1 } })).toBe(false)
    expect(await holds(t, U)).toBe(false)
    await store.write({ ops: [put({ ...t, modified_at: LATER })] })
    expect(await holds(t)).toBe(false)
    await store.write({ ops: [{ op: 'token.delete', tenant_id: T, id: 'a' }] })
    expect(await holds(t)).toBe(false)
    await store.close()
  })

  it('lists the links a token is part of both ways; token.delete deletes the token alone', async () => {
    const store = await fresh()
    await store.write({
      ops: [
        put(token('a')),
        put(token('b')),
        put(token('c')),
        link('a', 'b'),
        link('b', 'c'),
        link('a', 'c'),
        link('b', 'b'),
        link('a', 'b', U),
      ],
    })
    const keys = async (id: string, tenant = T) =>
      (await store.listLinks(tenant, id)).map((l) => `${l.parent_id}>${l.child_id}`).sort()
    expect(await keys('b')).toEqual(['a>b', 'b>b', 'b>c'])
    expect(await keys('a')).toEqual(['a>b', 'a>c'])
    expect(await keys('b', U)).toEqual(['a>b'])
    expect(await keys('none')).toEqual([])
    expect((await store.listLinks(T, 'c')).find((l) => l.parent_id === 'b')).toEqual({
      tenant_id: T,
      parent_id: 'b',
      child_id: 'c',
      created_at: NOW,
    })
    // The core deletes a token with its links, each by its own op.
    await store.write({ ops: [{ op: 'token.delete', tenant_id: T, id: 'b' }] })
    expect(await keys('b')).toEqual(['a>b', 'b>b', 'b>c'])
    // A link to an absent token is no child: skipped by lists, counted nowhere.
    const children = await store.listChildren(T, 'a', { offset: 0, limit: 10, now: NOW })
    expect(children).toMatchObject({ total: 1, items: [{ id: 'c' }] })
    // Lists are plain reads: the core decides that a deleted token's children are not asked for.
    expect(await store.listChildren(T, 'b', { offset: 0, limit: 10, now: NOW })).toMatchObject({
      total: 1,
      items: [{ id: 'c' }],
    })
    await store.write({
      ops: [
        { op: 'association.delete', tenant_id: T, parent_id: 'a', child_id: 'b' },
        { op: 'association.delete', tenant_id: T, parent_id: 'b', child_id: 'b' },
        { op: 'association.delete', tenant_id: T, parent_id: 'b', child_id: 'c' },
      ],
    })
    expect(await keys('b')).toEqual([])
    expect(await store.hasAssociation(T, 'a', 'c')).toBe(true)
    // A re-created token with the same id has no links.
    await store.write({ ops: [put(token('b'))] })
    expect((await store.listChildren(T, 'b', { offset: 0, limit: 10, now: NOW })).total).toBe(0)
    expect((await store.dump()).associations).toHaveLength(2)
    await store.close()
  })

  it('puts a link whatever its tokens, keeps a link put again in its place, and lists it once the child exists', async () => {
    const store = await fresh()
    await store.write({ ops: [put(token('a')), link('a', 'ghost'), link('ghost', 'a'), put(token('b'))] })
    await store.write({ ops: [link('a', 'b')] })
    expect(await store.hasAssociation(T, 'a', 'ghost')).toBe(true)
    expect(await store.hasAssociation(T, 'ghost', 'a')).toBe(true)
    expect(
      (await store.listChildren(T, 'a', { offset: 0, limit: 10, now: NOW })).items.map((t) => t.id),
    ).toEqual(['b'])
    await store.write({ ops: [put(token('ghost')), link('a', 'ghost')] })
    const page = await store.listChildren(T, 'a', { offset: 0, limit: 10, now: NOW })
    expect(page.items.map((t) => t.id)).toEqual(['ghost', 'b'])
    expect(page.total).toBe(2)
    expect(
      (await store.listChildren(T, 'a', { offset: 1, limit: 1, now: NOW })).items.map((t) => t.id),
    ).toEqual(['b'])
    await store.close()
  })

  it('links.within fails once the token is part of a link beyond those read', async () => {
    const store = await fresh()
    await store.write({ ops: [put(token('a')), put(token('b')), put(token('c')), link('a', 'b')] })
    const read = await store.listLinks(T, 'b')
    const within = (links: { parent_id: string; child_id: string }[]): Check => ({
      check: 'links.within',
      tenant_id: T,
      token_id: 'b',
      links,
    })
    const known = read.map((l) => ({ parent_id: l.parent_id, child_id: l.child_id }))
    const deleteB = (links: { parent_id: string; child_id: string }[]) =>
      store.write({
        checks: [within(links)],
        ops: [
          { op: 'token.delete', tenant_id: T, id: 'b' },
          ...links.map(
            (l): Op => ({
              op: 'association.delete',
              tenant_id: T,
              parent_id: l.parent_id,
              child_id: l.child_id,
            }),
          ),
        ],
      })
    // Linked after the read, as parent: the delete built on the read is refused and writes nothing.
    await store.write({ ops: [link('b', 'c')] })
    expect(await deleteB(known)).toEqual({ ok: false, failed: within(known) })
    expect(await store.getToken(T, 'b')).not.toBeNull()
    // The other way round (b → a, not a → b) is another link.
    await store.write({
      ops: [{ op: 'association.delete', tenant_id: T, parent_id: 'b', child_id: 'c' }, link('c', 'b')],
    })
    expect((await deleteB([...known, { parent_id: 'b', child_id: 'c' }])).ok).toBe(false)
    // A link deleted meanwhile does not matter; a foreign tenant's link is not this token's.
    await store.write({
      ops: [{ op: 'association.delete', tenant_id: T, parent_id: 'a', child_id: 'b' }, link('c', 'b', U)],
    })
    expect((await deleteB([...known, { parent_id: 'c', child_id: 'b' }])).ok).toBe(true)
    expect(await store.getToken(T, 'b')).toBeNull()
    expect(await store.listLinks(T, 'b')).toEqual([])
    expect(await store.hasAssociation(U, 'c', 'b')).toBe(true)
    await store.close()
  })

  it("lists a tenant's tokens by id with id and type filters, paging and expiry", async () => {
    const store = await fresh()
    await store.write({
      ops: [
        put(token('m')),
        put(token('b', { type: 'card' })),
        put(token('z', { type: 'card' })),
        put(token('gone', { expires_at: NOW })),
        put(token('later', { expires_at: LATER })),
        put({ ...token('other'), tenant_id: U }),
      ],
    })
    const ids = async (q: { ids?: string[]; types?: string[]; offset?: number; limit?: number }) => {
      const page = await store.listTokens(T, { offset: 0, limit: 100, now: NOW, ...q })
      return [page.items.map((t) => t.id), page.total]
    }
    expect(await ids({})).toEqual([['b', 'later', 'm', 'z'], 4])
    expect(await ids({ types: ['card'] })).toEqual([['b', 'z'], 2])
    expect(await ids({ ids: ['z', 'm', 'nope', 'other'] })).toEqual([['m', 'z'], 2])
    expect(await ids({ offset: 1, limit: 2 })).toEqual([['later', 'm'], 4])
    expect((await store.listTokens(U, { offset: 0, limit: 10, now: NOW })).items.map((t) => t.id)).toEqual([
      'other',
    ])
    const got = (await store.listTokens(T, { offset: 0, limit: 1, now: NOW })).items[0]!
    expect(got).toEqual(token('b', { type: 'card' }))
    await store.close()
  })

  it('filters tokens by fingerprint and guards on token.fingerprint_absent, live tokens only', async () => {
    const store = await fresh()
    const absent = (fingerprint: string, tenant = T): Check => ({
      check: 'token.fingerprint_absent',
      tenant_id: tenant,
      fingerprint,
      now: NOW,
    })
    await store.write({
      ops: [
        put(token('a', { fingerprint: 'f1' })),
        put(token('b', { fingerprint: 'f1' })),
        put(token('c', { fingerprint: 'f2' })),
        put(token('gone', { fingerprint: 'f3', expires_at: NOW })),
        put({ ...token('other', { fingerprint: 'f4' }), tenant_id: U }),
      ],
    })
    const byFp = async (fingerprint: string, tenant = T) =>
      (await store.listTokens(tenant, { offset: 0, limit: 10, now: NOW, fingerprint })).items.map((t) => t.id)
    expect(await byFp('f1')).toEqual(['a', 'b'])
    expect(await byFp('f3')).toEqual([])
    expect(await byFp('f4')).toEqual([])
    expect(await byFp('f4', U)).toEqual(['other'])
    expect(await store.write({ checks: [absent('f1')], ops: [] })).toEqual({
      ok: false,
      failed: absent('f1'),
    })
    expect((await store.write({ checks: [absent('f3'), absent('f4'), absent('new')], ops: [] })).ok).toBe(
      true,
    )
    // A token's fingerprint follows its puts and deletes.
    await store.write({
      ops: [put(token('c', { fingerprint: 'f5' })), { op: 'token.delete', tenant_id: T, id: 'a' }],
    })
    expect(await byFp('f2')).toEqual([])
    expect(await byFp('f5')).toEqual(['c'])
    expect(await byFp('f1')).toEqual(['b'])
    expect((await store.write({ checks: [absent('f2')], ops: [] })).ok).toBe(true)
    await store.close()
  })

  it('lists children in link order with id and type filters, paging and expiry', async () => {
    const store = await fresh()
    const ops: Op[] = [put(token('p'))]
    for (let i = 0; i < 7; i++) {
      ops.push(put(token(`c${i}`, { type: i % 2 ? 'odd' : 'even' })), link('p', `c${i}`))
    }
    ops.push(put(token('old', { expires_at: NOW })), link('p', 'old'))
    await store.write({ ops })
    const list = (q: { ids?: string[]; types?: string[]; offset?: number; limit?: number }) =>
      store.listChildren(T, 'p', { offset: 0, limit: 100, now: NOW, ...q })
    const all = await list({})
    expect(all.total).toBe(7)
    expect(all.items.map((t) => t.id)).toEqual(['c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6'])
    const page = await list({ offset: 2, limit: 3 })
    expect(page).toMatchObject({ total: 7 })
    expect(page.items.map((t) => t.id)).toEqual(['c2', 'c3', 'c4'])
    expect((await list({ types: ['odd'] })).items.map((t) => t.id)).toEqual(['c1', 'c3', 'c5'])
    const byId = await list({ ids: ['c4', 'c1', 'nope', 'old'] })
    expect(byId.items.map((t) => t.id)).toEqual(['c1', 'c4'])
    expect((await list({ ids: ['c1', 'c2'], types: ['even'] })).items.map((t) => t.id)).toEqual(['c2'])
    expect((await store.listChildren(U, 'p', { offset: 0, limit: 10, now: NOW })).total).toBe(0)
    // Not yet expired one millisecond earlier.
    const before = await store.listChildren(T, 'p', {
      offset: 0,
      limit: 100,
      now: '2029-12-31T23:59:59.999Z',
    })
    expect(before.total).toBe(8)
    await store.close()
  })

  it('honours an expiry given to a child after it was linked, and one taken away', async () => {
    const store = await fresh()
    await store.write({
      ops: [put(token('p')), put(token('a')), put(token('b')), link('p', 'a'), link('p', 'b')],
    })
    const ids = async () =>
      (await store.listChildren(T, 'p', { offset: 0, limit: 10, now: NOW })).items.map((t) => t.id)
    await store.write({ ops: [put(token('a', { expires_at: NOW }))] })
    expect(await ids()).toEqual(['b'])
    expect((await store.listChildren(T, 'p', { offset: 0, limit: 10, now: NOW })).total).toBe(1)
    await store.write({ ops: [put(token('a'))] })
    expect(await ids()).toEqual(['a', 'b'])
    await store.write({
      ops: [put(token('b', { expires_at: NOW })), { op: 'token.delete', tenant_id: T, id: 'b' }],
    })
    expect(await ids()).toEqual(['a'])
    expect((await store.listChildren(T, 'p', { offset: 0, limit: 10, now: NOW })).total).toBe(1)
    await store.close()
  })

  it('of 100 concurrent compare-and-set puts of one token exactly one wins', async () => {
    const store = await fresh()
    const t = token('cas')
    await store.write({ ops: [put(t)] })
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        store.write({
          checks: [{ check: 'token.unchanged', tenant_id: T, id: 'cas', token: t }],
          ops: [put(token('cas', { metadata: { by: String(i) } }))],
        }),
      ),
    )
    const winners = results.flatMap((r, i) => (r.ok ? [i] : []))
    expect(winners).toHaveLength(1)
    expect((await store.getToken(T, 'cas'))?.metadata).toEqual({ by: String(winners[0]) })
    await store.close()
  })
}

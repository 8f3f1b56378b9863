/**
 * A v2 list cursor (`pagination.next`) continues the query that made it and no other: reused with
 * any filter added, dropped or changed — type, container, metadata, fingerprint — it is refused
 * with 400 (`validation_failed`), so a page never mixes two queries' positions.
 */
import { describe, expect, it } from 'vitest'
import type { ServiceError } from '../../entry/index.js'
import { createTestVault } from '../../testing/vault.js'

type Filters = { type?: string | string[]; container?: string; metadata?: string; fingerprint?: string }

async function world() {
  const vault = await createTestVault()
  const c = vault.client()
  const made = []
  for (const id of ['a', 'b', 'c'])
    made.push(
      await c.tokens.create({
        id,
        type: 'note',
        data: 'same',
        fingerprint_expression: '{{ data }}',
        containers: ['/pci/high/'],
        metadata: { owner: 'ann' },
      }),
    )
  const other = await c.tokens.create({
    id: 'd',
    type: 'token',
    data: 'other',
    fingerprint_expression: '{{ data }}',
  })
  return { vault, c, fingerprint: made[0]!.fingerprint!, otherFingerprint: other.fingerprint! }
}

describe('a v2 list cursor is bound to its filters', () => {
  it('reused under a changed filter of each kind (added, dropped or another value): 400; under its own: the next page', async () => {
    const { vault, c, fingerprint, otherFingerprint } = await world()
    const outcome = (filters: Filters, start: string) =>
      c.tokens.listV2({ size: 1, ...filters, start }).then(
        (page) => page.data.map((t) => t.id).join(),
        (e: ServiceError) => e.code,
      )
    const kinds: [string, Filters, Filters[]][] = [
      ['type', { type: 'note' }, [{}, { type: 'token' }, { type: ['note', 'token'] }]],
      ['container', { container: '/pci/' }, [{}, { container: '/pci/high/' }, { container: '/' }]],
      [
        'metadata',
        { metadata: JSON.stringify({ owner: 'ann' }) },
        [{}, { metadata: JSON.stringify({ owner: 'bob' }) }, { metadata: JSON.stringify({ team: 'ann' }) }],
      ],
      ['fingerprint', { fingerprint }, [{}, { fingerprint: otherFingerprint }]],
    ]
    const unfiltered = (await c.tokens.listV2({ size: 1 })).pagination.next!
    for (const [kind, filters, changed] of kinds) {
      const first = await c.tokens.listV2({ size: 1, ...filters })
      expect(
        first.data.map((t) => t.id),
        kind,
      ).toEqual(['a'])
      const next = first.pagination.next!
      expect(await outcome(filters, next), kind).toBe('b')
      for (const other of changed)
        expect(await outcome(other, next), `${kind}: ${JSON.stringify(other)}`).toBe('validation_failed')
      // And the other way: an unfiltered list's cursor under this filter.
      expect(await outcome(filters, unfiltered), `${kind} added`).toBe('validation_failed')
    }
    await vault.close()
  })

  it('a cursor past a token id of 200 characters (the longest an id may be) pages on', async () => {
    const vault = await createTestVault()
    const c = vault.client()
    const ids = ['a', 'b', 'c'].map((x) => x.repeat(200))
    for (const id of ids) await c.tokens.create({ id, type: 'note', data: 'x' })
    const seen: string[] = []
    let start: string | undefined
    do {
      const page = await c.tokens.listV2({ size: 1, ...(start ? { start } : {}) })
      seen.push(...page.data.map((t) => t.id))
      start = page.pagination.next
    } while (start)
    expect(seen).toEqual(ids)
    await vault.close()
  })

  it('a refused cursor is a 400 on the `start` field that says why, whatever was wrong with it', async () => {
    const { vault, c } = await world()
    const next = (await c.tokens.listV2({ size: 1 })).pagination.next!
    // Cut short, a character past base64url, too short to hold a sealed position, one byte too many.
    for (const start of [next.slice(0, -1), `${next}!`, 'AAAA', `${next}A`]) {
      const error = await c.tokens.listV2({ size: 1, start }).then(
        () => expect.fail(`accepted ${start}`),
        (e: ServiceError) => e,
      )
      expect(error.code, start).toBe('validation_failed')
      expect(error.message).toBe('start: is not a cursor this API answered for this query')
    }
    await vault.close()
  })
})

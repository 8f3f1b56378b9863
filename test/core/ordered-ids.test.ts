import { describe, expect, it } from 'vitest'
import { newOrderedId } from '../../src/kernel/ids.js'
import { setup } from './setup.js'

/** RFC 9562's UUID version 7: 48 bits of time, version 7, a 12-bit counter, variant 10, 62 random bits. */
const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** The id's 48-bit timestamp, in milliseconds since the epoch. */
const msOf = (id: string) => Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16)

describe('time-ordered ids (UUID v7)', () => {
  it('carry the given instant in their first 48 bits, then version 7 and the variant', () => {
    const id = newOrderedId('2026-11-26T15:00:00.123Z', 'tenant-a')
    expect(id).toMatch(V7)
    // 2026-11-26T15:00:00.123Z is 1 795 186 800 123 ms since the epoch: 0x01a2185eddfb.
    expect(id.slice(0, 14)).toBe('01a2185e-ddfb-')
    expect(newOrderedId('1970-01-01T00:00:00.001Z', 'tenant-a').slice(0, 15)).toBe('00000000-0001-7')
  })

  it('clamp an instant a v7 id cannot hold instead of failing', () => {
    expect(newOrderedId('+010889-08-02T05:31:50.655Z', 'tenant-a')).toMatch(/^ffffffff-ffff-7/)
    expect(newOrderedId('+010889-08-02T05:31:50.656Z', 'tenant-a')).toMatch(/^ffffffff-ffff-7/)
    expect(newOrderedId('1969-12-31T23:59:59.999Z', 'tenant-a')).toMatch(/^00000000-0000-7/)
    expect(newOrderedId('not a date', 'tenant-a')).toMatch(/^00000000-0000-7/)
  })

  it("take each call's own instant, whatever instant the tenant or another tenant asked before", () => {
    const a = '2027-03-01T10:00:00.000Z'
    const b = '2027-03-01T10:00:05.000Z'
    expect(msOf(newOrderedId(a, 'instant-p'))).toBe(Date.parse(a))
    expect(msOf(newOrderedId(b, 'instant-q'))).toBe(Date.parse(b))
    expect(msOf(newOrderedId(b, 'instant-p'))).toBe(Date.parse(b))
    expect(msOf(newOrderedId(a, 'instant-r'))).toBe(Date.parse(a))
    expect(msOf(newOrderedId(b, 'instant-r'))).toBe(Date.parse(b))
  })

  it('sort by instant, and differ within one millisecond in 62 random bits', () => {
    const instants = [
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T00:00:00.001Z',
      '2026-01-01T00:00:01.000Z',
      '2027-06-01T12:00:00.000Z',
    ]
    const ids = instants.flatMap((at) => Array.from({ length: 50 }, () => newOrderedId(at, 'tenant-a')))
    // Ids of a later instant sort after every id of an earlier one, whatever their random bits.
    for (let i = 1; i < instants.length; i++) {
      const before = ids.slice(0, i * 50)
      const after = ids.slice(i * 50)
      expect(after.every((a) => before.every((b) => b < a))).toBe(true)
    }
    const same = Array.from({ length: 2_000 }, () => newOrderedId('2028-01-01T00:00:00.000Z', 'tenant-a'))
    for (const id of same) expect(id).toMatch(V7)
    // Every random hex digit takes all 16 values over 2 000 ids (a fixed digit would not).
    for (const at of [20, 21, 22, 24, 30, 35]) expect(new Set(same.map((id) => id[at])).size).toBe(16)
    // The variant digit takes its 4 values.
    expect(new Set(same.map((id) => id[19])).size).toBe(4)
  })

  it('come out in increasing order within a millisecond, past 4 096 of them, and when the clock steps back', () => {
    const at = '2029-01-01T00:00:00.000Z'
    const ms = Date.parse(at)
    const ids = Array.from({ length: 10_000 }, () => newOrderedId(at, 'tenant-a'))
    for (let i = 1; i < ids.length; i++) expect(ids[i - 1]! < ids[i]!).toBe(true)
    // The first id is the instant's; the counter (12 bits) starts below 2 048, so 10 000 ids of one
    // millisecond reach at most 5 milliseconds past it.
    expect(msOf(ids[0]!)).toBe(ms)
    expect(Number.parseInt(ids[0]!.slice(15, 18), 16)).toBeLessThan(2048)
    const last = msOf(ids.at(-1)!)
    expect(last).toBeGreaterThan(ms)
    expect(last).toBeLessThanOrEqual(ms + 5)
    // A clock stepped back by up to a second goes on after the last id.
    const back = newOrderedId('2028-12-31T23:59:59.500Z', 'tenant-a')
    expect(back > ids.at(-1)!).toBe(true)
    expect(msOf(back)).toBe(last)
    // One set back further starts again from its instant.
    expect(msOf(newOrderedId('2028-12-31T23:59:58.000Z', 'tenant-a'))).toBe(
      Date.parse('2028-12-31T23:59:58.000Z'),
    )
  })

  it("count each tenant's ids on their own: another tenant's creates leave no gap", () => {
    const at = '2029-06-01T00:00:00.000Z'
    const first = newOrderedId(at, 'tenant-b')
    const others = Array.from({ length: 100 }, () => newOrderedId(at, 'tenant-c'))
    const second = newOrderedId(at, 'tenant-b')
    const counter = (id: string) => Number.parseInt(id.slice(15, 18), 16)
    expect(counter(second)).toBe(counter(first) + 1)
    expect(second > first).toBe(true)
    // The other tenant's ids count up too, from a start of their own.
    for (let i = 1; i < others.length; i++) expect(counter(others[i]!)).toBe(counter(others[i - 1]!) + 1)
  })

  it("give a token the id of its creation time from the service's clock, in creation order", async () => {
    const { client, clock, service, full } = await setup()
    const first = await client.tokens.create({ type: 'token', data: 'a' })
    clock.advance(1)
    const second = await client.tokens.create({ type: 'token', data: 'b' })
    clock.advance(60_000)
    const tokenized = (await client.tokens.tokenize({ x: 'c' })) as { x: string }
    clock.advance(1)
    const tx = await client.transactions.create()
    const staged = await service
      .connect(full.key, { transactionId: tx.id })
      .tokens.create({ type: 'token', data: 'd' })
    await client.transactions.commit(tx.id)
    clock.advance(1)
    const given = await client.tokens.create({
      id: '00000000-0000-4000-8000-000000000000',
      type: 'token',
      data: 'e',
    })

    const made = [first, second, { id: tokenized.x }, staged]
    for (const t of made) expect(t.id).toMatch(V7)
    expect(made.map((t) => msOf(t.id) - Date.parse(first.created_at))).toEqual([0, 1, 60_001, 60_002])
    expect(msOf(first.id)).toBe(Date.parse('2030-01-01T00:00:00.000Z'))
    // A caller's own id is kept as given.
    expect(given.id).toBe('00000000-0000-4000-8000-000000000000')
    // Lists go by id: the made ids in the order they were made.
    const listed = (await client.tokens.list()).data.map((t) => t.id)
    expect(listed).toEqual([given.id, ...made.map((t) => t.id)])
  })
})

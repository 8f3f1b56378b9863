import { describe, expect, it } from 'vitest'
import { TenantLru } from '../../src/kernel/tenant-lru.js'

const keys = (lru: TenantLru<number>, tenant: string, names: string[]) =>
  names.filter((name) => lru.has(tenant, name))

describe('TenantLru', () => {
  it('a hit on the entry moved least recently keeps it; the next one goes instead', () => {
    const lru = new TenantLru<number>(4, 100)
    for (const [i, name] of ['a', 'b', 'c', 'd'].entries()) lru.set('t', name, i)
    expect(lru.get('t', 'a')).toBe(0)
    lru.set('t', 'e', 4)
    expect(keys(lru, 't', ['a', 'b', 'c', 'd', 'e'])).toEqual(['a', 'c', 'd', 'e'])
  })

  it('a hit on an entry in the newer half leaves the order as it is', () => {
    const lru = new TenantLru<number>(4, 100)
    for (const [i, name] of ['a', 'b', 'c', 'd'].entries()) lru.set('t', name, i)
    expect(lru.get('t', 'd')).toBe(3)
    expect(lru.get('t', 'c')).toBe(2)
    lru.set('t', 'e', 4)
    expect(keys(lru, 't', ['a', 'b', 'c', 'd', 'e'])).toEqual(['b', 'c', 'd', 'e'])
  })

  it('an entry hit once every two new entries of four outlives 1000 of them; one never hit goes', () => {
    const lru = new TenantLru<number>(4, 100)
    lru.set('t', 'hot', -1)
    lru.set('t', 'cold', -2)
    for (let n = 0; n < 1000; n++) {
      lru.set('t', `k${n}`, n)
      if (n % 2 === 1) expect(lru.get('t', 'hot')).toBe(-1)
    }
    expect(lru.has('t', 'hot')).toBe(true)
    expect(lru.has('t', 'cold')).toBe(false)
    expect(lru.size('t')).toBe(4)
  })

  it('with one place per tenant, each new entry replaces the last; other tenants keep theirs', () => {
    const lru = new TenantLru<number>(1, 100)
    lru.set('a', 'x', 1)
    lru.set('b', 'x', 2)
    expect(lru.get('a', 'x')).toBe(1)
    lru.set('a', 'y', 3)
    expect([lru.get('a', 'x'), lru.get('a', 'y'), lru.get('b', 'x')]).toEqual([undefined, 3, 2])
    expect(lru.size()).toBe(2)
  })
})

describe('TenantLru at 500 entries a tenant', () => {
  /** Whether an entry hit once every `every` new entries (the first hit after `phase` of them) outlives 2 500. */
  const outlives = (every: number, phase: number) => {
    const lru = new TenantLru<number>(500, 10_000)
    for (let i = 0; i < 500; i++) lru.set('t', `old${i}`, i)
    lru.set('t', 'hot', -1)
    for (let n = 0; n < 2500; n++) {
      lru.set('t', `new${n}`, n)
      if (n % every === phase && lru.get('t', 'hot') === undefined) return false
    }
    return lru.has('t', 'hot')
  }

  it('an entry hit once in every 374 new entries is never evicted; once in every 375, it can be', () => {
    expect(Array.from({ length: 374 }, (_, phase) => outlives(374, phase)).every(Boolean)).toBe(true)
    expect(Array.from({ length: 375 }, (_, phase) => outlives(375, phase)).every(Boolean)).toBe(false)
  })
})

describe('TenantLru full in all', () => {
  it('over 20 000 new entries of 40 tenants in random order, each evicts only from a tenant holding the most', () => {
    const lru = new TenantLru<number>(9, 60)
    const tenants = Array.from({ length: 40 }, (_, t) => `t${t}`)
    // A fixed sequence (a linear congruential generator): the same on every run.
    let state = 11
    const next = () => {
      state = (state * 1103515245 + 12345) % 2 ** 31
      return state
    }
    const sizes = () => new Map(tenants.map((t) => [t, lru.size(t)]))
    let before = sizes()
    for (let n = 0; n < 20_000; n++) {
      const tenant = tenants[next() % 4 === 0 ? next() % 40 : next() % 5]!
      lru.set(tenant, `k${n}`, n)
      const after = sizes()
      const total = [...after.values()].reduce((sum, size) => sum + size, 0)
      expect(total).toBe(lru.size())
      expect(total).toBeLessThanOrEqual(60)
      expect(after.get(tenant)).toBeLessThanOrEqual(9)
      const most = Math.max(...before.values())
      for (const t of tenants) {
        if (t === tenant || after.get(t)! >= before.get(t)!) continue
        expect(after.get(t)).toBe(before.get(t)! - 1)
        expect(before.get(t)).toBe(most)
      }
      before = after
    }
  })
})

import { describe, expect, it } from 'vitest'
import { rank, SortedIds, SortedRecords } from '../../src/store/sorted-ids.js'

/** A deterministic pseudo-random source (mulberry32). */
function random(seed: number) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32
  }
}

// Code units on both sides of where `rank` stops encoding (126), the ends of the range, and plain
// ones: ids made of them share prefixes, differ past the 7th unit, and are prefixes of each other.
const UNITS = ['\u0000', 'a', 'b', '}', '~', '\u007f', '\u0080', '\u00e9', '\ud83d', '\uffff']
const idOf = (next: () => number) => {
  const length = Math.floor(next() * 11)
  let id = ''
  for (let i = 0; i < length; i++) id += UNITS[Math.floor(next() * UNITS.length)]
  return next() < 0.3 ? `${id}` : `aaaaaaa${id}`
}
/** Whether `a` and `b` have the same code units up to the 7th, or up to a first unit of 126 or more in both. */
const alike = (a: string, b: string) => {
  for (let i = 0; i < 7; i++) {
    if (i >= a.length && i >= b.length) return true
    const [ua, ub] = [a.charCodeAt(i), b.charCodeAt(i)]
    if (ua >= 126 && ub >= 126) return true
    if (ua !== ub) return false
  }
  return true
}
const codeUnitSort = (ids: Iterable<string>) => [...ids].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))

describe('SortedIds', () => {
  it('rank never orders two ids against their code-unit order, and ties only ids alike in their first 7 units or past a unit of 126 or more', () => {
    const next = random(7)
    for (let i = 0; i < 50_000; i++) {
      const a = idOf(next)
      const b = idOf(next)
      if (a < b) expect(rank(a)).toBeLessThanOrEqual(rank(b))
      if (rank(a) < rank(b)) expect(a < b).toBe(true)
      if (rank(a) === rank(b)) expect(alike(a, b)).toBe(true)
    }
    expect(rank('')).toBe(0)
    expect(rank('a')).toBeLessThan(rank('a\u0000'))
    expect(rank('ab')).toBeLessThan(rank('ac'))
    expect(rank('abcdefgh')).toBe(rank('abcdefgz'))
    expect(rank('\u0080z')).toBe(rank('\u0081a'))
    expect(Number.isSafeInteger(rank('}}}}}}}'))).toBe(true)
  })

  it('holds what a sorted array holds through 30 000 random adds and deletes over splits and emptied chunks', () => {
    const next = random(11)
    const set = new SortedIds()
    const model = new Set<string>()
    const pool = Array.from({ length: 3000 }, () => idOf(next))
    let largest = 0
    for (let i = 0; i < 30_000; i++) {
      const id = pool[Math.floor(next() * pool.length)]!
      // Mostly adds until the set is large enough to split chunks, then as many deletes.
      if (next() < (i < 15_000 ? 0.8 : 0.35)) {
        expect(set.add(id)).toBe(!model.has(id))
        model.add(id)
      } else {
        expect(set.delete(id)).toBe(model.has(id))
        model.delete(id)
      }
      largest = Math.max(largest, model.size)
      if (i % 1000 === 0 || i === 29_999) {
        const sorted = codeUnitSort(model)
        expect(set.size).toBe(sorted.length)
        expect([...set.from(undefined)]).toEqual(sorted)
        for (let k = 0; k < 20; k++) {
          const probe = pool[Math.floor(next() * pool.length)]!
          expect(set.has(probe)).toBe(model.has(probe))
          expect(set.after(probe, 7)).toEqual(sorted.filter((s) => s > probe).slice(0, 7))
          const offset = Math.floor(next() * (sorted.length + 2))
          expect([...set.fromOffset(offset)].slice(0, 5)).toEqual(sorted.slice(offset, offset + 5))
        }
      }
    }
    // Past several splits of a chunk, and back down through deletes.
    expect(largest).toBeGreaterThan(1100)
    expect(model.size).toBeLessThan(largest)
  })

  it('keeps 5 000 random UUIDs in order, across many chunks, and empties to nothing', () => {
    const set = new SortedIds()
    const ids = Array.from({ length: 5000 }, () => crypto.randomUUID())
    for (const id of ids) expect(set.add(id)).toBe(true)
    expect(set.add(ids[0]!)).toBe(false)
    const sorted = codeUnitSort(ids)
    expect([...set.from(undefined)]).toEqual(sorted)
    expect(set.after(sorted[2499], 3)).toEqual(sorted.slice(2500, 2503))
    for (const id of ids) expect(set.delete(id)).toBe(true)
    expect(set.size).toBe(0)
    expect([...set.from(undefined)]).toEqual([])
    expect(set.delete(ids[0]!)).toBe(false)
  })

  it('reads backwards what it holds (before), from the end or strictly before any probe, through random adds and deletes', () => {
    const next = random(23)
    const set = new SortedIds()
    const model = new Set<string>()
    const pool = Array.from({ length: 2000 }, () => idOf(next))
    for (let i = 0; i < 12_000; i++) {
      const id = pool[Math.floor(next() * pool.length)]!
      if (next() < (i < 6000 ? 0.8 : 0.4)) {
        set.add(id)
        model.add(id)
      } else {
        set.delete(id)
        model.delete(id)
      }
      if (i % 1000 === 0 || i === 11_999) {
        const backwards = codeUnitSort(model).reverse()
        expect([...set.before(undefined)]).toEqual(backwards)
        for (let k = 0; k < 20; k++) {
          const probe = pool[Math.floor(next() * pool.length)]!
          const got: string[] = []
          for (const x of set.before(probe)) if (got.push(x) >= 7) break
          expect(got).toEqual(backwards.filter((s) => s < probe).slice(0, 7))
        }
      }
    }
  })

  it('takes 1 000 ids added in order (each after every other, as a log appends) and 1 000 more interleaved, in order', () => {
    const set = new SortedIds()
    const ids = Array.from(
      { length: 1000 },
      (_, i) => `2030-01-01T00:00:00.000Z\u0001lane:${String(i).padStart(12, '0')}`,
    )
    for (const id of ids) expect(set.add(id)).toBe(true)
    expect(set.add(ids[999]!)).toBe(false)
    const between = ids.map((id) => `${id}~`)
    for (const id of between) expect(set.add(id)).toBe(true)
    expect([...set.from(undefined)]).toEqual(codeUnitSort([...ids, ...between]))
    expect([...set.before(undefined)].length).toBe(2000)
    expect(set.size).toBe(2000)
  })
})

describe('SortedRecords', () => {
  it('holds what a Map holds, each value beside its id, through 20 000 random puts, replacements and deletes over splits', () => {
    const next = random(31)
    const records = new SortedRecords<number>()
    const model = new Map<string, number>()
    const pool = Array.from({ length: 2500 }, () => idOf(next))
    let largest = 0
    for (let i = 0; i < 20_000; i++) {
      const id = pool[Math.floor(next() * pool.length)]!
      if (next() < (i < 10_000 ? 0.8 : 0.35)) {
        expect(records.add(id, i)).toBe(!model.has(id))
        model.set(id, i)
      } else {
        expect(records.delete(id)).toBe(model.has(id))
        model.delete(id)
      }
      largest = Math.max(largest, model.size)
      if (i % 1000 === 0 || i === 19_999) {
        const sorted = codeUnitSort(model.keys())
        expect([...records.from(undefined)]).toEqual(sorted)
        expect([...records.values()]).toEqual(sorted.map((id) => model.get(id)))
        for (let k = 0; k < 20; k++) {
          const probe = pool[Math.floor(next() * pool.length)]!
          expect(records.get(probe)).toBe(model.get(probe))
        }
      }
    }
    expect(largest).toBeGreaterThan(600)
  })

  it('a set of ids alone keeps no values', () => {
    const set = new SortedIds()
    set.add('a')
    expect(set.get('a')).toBeUndefined()
    expect([...set.values()]).toEqual([])
  })
})

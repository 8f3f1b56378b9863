import { describe, expect, it } from 'vitest'
import { FairQueue } from '../../adapters/sandbox/fair-queue.js'
import { reliefWait } from '../../adapters/sandbox/pool.js'

/** Takes everything, answering the items in the order served. */
function takeAll<T>(queue: FairQueue<T>): T[] {
  const out: T[] = []
  for (let item = queue.take(); item !== undefined; item = queue.take()) out.push(item)
  return out
}

describe('FairQueue serves tenants in turns', () => {
  it('round-robin between the tenants waiting, each in its own order', () => {
    const queue = new FairQueue<string>(10)
    for (const item of ['a1', 'a2', 'a3', 'b1', 'c1', 'c2']) queue.push(item[0]!, item)
    expect(takeAll(queue)).toEqual(['a1', 'b1', 'c1', 'a2', 'c2', 'a3'])
  })

  it('a tenant served last and refilled at once goes after the tenants that were waiting', () => {
    const queue = new FairQueue<string>(10)
    queue.push('a', 'a1')
    queue.push('b', 'b1')
    expect(queue.take()).toBe('a1')
    queue.push('a', 'a2')
    expect(takeAll(queue)).toEqual(['b1', 'a2'])
  })

  it('also once its place in the turns is gone: a tenant that arrives later goes before it', () => {
    // A's run was taken and A's empty queue left the ring (nothing else waited); A's next runs and
    // then B's arrive. B has not been served: it goes first.
    const queue = new FairQueue<string>(100)
    queue.push('a', 'a1')
    expect(queue.take()).toBe('a1')
    expect(queue.take()).toBeUndefined()
    for (let i = 2; i <= 5; i++) queue.push('a', `a${i}`)
    queue.push('b', 'b1')
    expect(takeAll(queue)).toEqual(['b1', 'a2', 'a3', 'a4', 'a5'])
  })

  it('a tenant served last that comes back goes last, after every tenant waiting', () => {
    const queue = new FairQueue<string>(100)
    for (const item of ['c1', 'c2', 'd1', 'a1']) queue.push(item[0]!, item)
    expect(queue.take()).toBe('c1')
    expect(queue.take()).toBe('d1')
    expect(queue.take()).toBe('a1')
    // A's queue is empty; its place goes once its turn comes round again.
    expect(queue.take()).toBe('c2')
    expect(queue.take()).toBeUndefined()
    queue.push('c', 'c3')
    queue.push('a', 'a2')
    queue.push('e', 'e1')
    expect(takeAll(queue)).toEqual(['a2', 'e1', 'c3'])
  })

  it('work that comes back goes first in its tenant’s queue, whatever the bounds', () => {
    const queue = new FairQueue<string>(1, 2)
    expect(queue.push('a', 'a2')).toBe(true)
    expect(queue.push('a', 'a3')).toBe(false)
    expect(queue.push('b', 'b1')).toBe(true)
    expect(queue.push('c', 'c1')).toBe(false)
    queue.unshift('a', 'a1')
    expect(queue.size).toBe(3)
    expect(takeAll(queue)).toEqual(['a1', 'b1', 'a2'])
  })

  it('skips a tenant that is not eligible, keeping its place and its items', () => {
    const queue = new FairQueue<string>(10)
    for (const item of ['a1', 'b1', 'b2']) queue.push(item[0]!, item)
    expect(queue.take((tenant) => tenant !== 'a')).toBe('b1')
    expect(queue.take((tenant) => tenant !== 'a')).toBe('b2')
    expect(queue.take((tenant) => tenant !== 'a')).toBeUndefined()
    expect(queue.take()).toBe('a1')
  })
})

describe('the relief worker (docs/limits.md: "while every worker has run one run for 250 ms")', () => {
  it('is due once the youngest run has run 250 ms, not at 249', () => {
    expect(reliefWait(249)).toBe(1)
    expect(reliefWait(250)).toBe(0)
    expect(reliefWait(0)).toBe(250)
    expect(reliefWait(60_000)).toBe(0)
  })
})

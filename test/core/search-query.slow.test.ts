/**
 * A glob matches in time linear in its text whatever the pattern: a 15 times longer pattern (the
 * backtracking worst case, `*aaa…b` against `aaa…`) costs about the same per match, not 15 times
 * more. Timed in CPU time (test/timing.ts), as a ratio of two patterns measured in the same run.
 */
import { describe, expect, it } from 'vitest'
import { type GlobPart, globMatches } from '../../src/search/query.js'
import { leastCpuMs } from '../timing.js'

describe('glob matching', () => {
  it('a 15 times longer worst-case pattern costs less than 5 times as much per match', () => {
    const text = 'a'.repeat(1000)
    const cost = (parts: GlobPart[]) =>
      leastCpuMs(() => {
        let matched = 0
        for (let i = 0; i < 3000; i++) if (globMatches(parts, text)) matched++
        expect(matched).toBe(0)
      }, 5)
    cost(['*', { lit: 'aaab' }])
    const short = cost(['*', { lit: `${'a'.repeat(7)}b` }])
    const long = cost(['*', { lit: `${'a'.repeat(119)}b` }])
    if (process.env.TIMING_DEBUG) console.log({ short, long })
    expect(long / short).toBeLessThan(5)
  })
})

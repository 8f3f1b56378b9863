/**
 * strip_html takes time linear in its text, even with tags that never close: four times the text
 * costs about four times as much, not sixteen. Timed in CPU time (test/timing.ts), as a ratio of two
 * sizes measured in the same run.
 */
import { describe, expect, it } from 'vitest'
import { evaluateTemplate } from '../../src/expressions/index.js'
import { leastCpuMs } from '../timing.js'

describe('Liquid text filters', () => {
  it('strip_html of four times as many unclosed tags costs less than eight times as much', () => {
    const strip = (count: number) => {
      const hostile = '<script'.repeat(count)
      return leastCpuMs(() => {
        let left = 0
        for (let i = 0; i < 20; i++)
          left += String(evaluateTemplate('{{ data | strip_html }}', { data: hostile }, 'field')).length
        expect(left).toBe(0)
      }, 5)
    }
    // 140 000 tags are 980 000 characters, just within the string limit.
    strip(35_000)
    const small = strip(35_000)
    const large = strip(140_000)
    if (process.env.TIMING_DEBUG) console.log({ small, large })
    expect(large / small).toBeLessThan(8)
  })
})

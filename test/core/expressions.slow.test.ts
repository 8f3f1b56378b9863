/**
 * What a refused expression costs: an expression past the string or work limit is refused before
 * the work is done, so its refusal costs a small multiple of the reference workload (serializing
 * 4 MiB twice, test/timing.ts) measured in the same process, in CPU time — where doing the work
 * would cost hundreds of times more, or could not be held at all. The messages and limits are
 * pinned in expressions.test.ts; these tests time them only.
 */
import { describe, expect, it } from 'vitest'
import { applyMask, evaluateTemplate } from '../../src/expressions/index.js'
import { ExpressionBudget } from '../../src/kernel/budget.js'
import { ServiceError } from '../../src/kernel/errors.js'
import type { Json } from '../../src/kernel/types.js'
import { cpuMs, referenceMs } from '../timing.js'

const ev = (template: string, data: Json) => evaluateTemplate(template, { data }, 'field')

/** The code of the ServiceError `f` throws. */
function refusedCode(f: () => unknown): string {
  try {
    f()
  } catch (error) {
    if (error instanceof ServiceError) return error.code
    throw error
  }
  return 'not refused'
}

/** Runs `f` once to warm up, then answers the least CPU time of three runs against the reference's. */
function costInReferences(f: () => void): number {
  f()
  const reference = referenceMs()
  let least = Number.POSITIVE_INFINITY
  for (let i = 0; i < 3; i++) least = Math.min(least, cpuMs(f))
  if (process.env.TIMING_DEBUG) console.log({ reference, least, ratio: least / reference })
  return least / reference
}

describe('refused expressions cost a few reference workloads', () => {
  it('a replace that would outgrow the string limit, and a chain past the work limit', () => {
    const big = 'x'.repeat(200_000)
    const glue = 'y'.repeat(3000)
    const half = 'z'.repeat(500_000)
    const chain = `{{ data${' | append: data | slice: 0, 500000'.repeat(20)} }}`
    const cost = costInReferences(() => {
      expect(refusedCode(() => ev(`{{ data | replace: '', '${glue}' }}`, big))).toBe('validation_failed')
      expect(refusedCode(() => ev(`{{ data | split: '' | join: '${glue}' }}`, big))).toBe('validation_failed')
      expect(refusedCode(() => ev(chain, half))).toBe('validation_failed')
    })
    expect(cost).toBeLessThan(10)
  })

  it('a JSON Path recursive descent over deep data stops at the budget', () => {
    let data: Json = 'leaf'
    for (let i = 0; i < 60; i++) data = { a: data, b: [i, { c: i }] }
    const cost = costInReferences(() => {
      const budget = new ExpressionBudget()
      const refused = refusedCode(() =>
        evaluateTemplate('{{ data | json: "$..*..*..*..*..*" }}', { data }, 'f', budget),
      )
      expect([refused, budget.exhausted]).toEqual(['validation_failed', true])
    })
    expect(cost).toBeLessThan(10)
  })

  it('a mask of 3000 `size` filters over 100 000 keys is refused at its third', () => {
    const wide = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i]))
    const sizes = Array.from({ length: 3000 }, () => '{{ data | size }}')
    const cost = costInReferences(() => {
      expect(refusedCode(() => applyMask(sizes, wide))).toBe('validation_failed')
    })
    // About 6 references on a 2-core VM; each `size` past the third would add about two more.
    expect(cost).toBeLessThan(20)
  })
})

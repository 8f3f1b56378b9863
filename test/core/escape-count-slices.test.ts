import { afterEach, describe, expect, it, vi } from 'vitest'
import { Work } from '../../src/expressions/cost.js'
import { evaluateTemplate } from '../../src/expressions/index.js'
import { ExpressionBudget } from '../../src/kernel/budget.js'

/**
 * `escape` and `escape_once` count a text's replacements 16 384 characters at a time, charging each
 * slice's before counting the next: a text whose replacements the budget cannot hold is refused
 * soon after the budget runs out, not after a pass over all of it (a 1 MB text of `&` held the
 * event loop for the whole pass before its 400).
 */
afterEach(() => vi.restoreAllMocks())

describe('escape counts its replacements slice by slice', () => {
  it.each(['escape', 'escape_once'])(
    '%s over 1 000 000 `&`: refused at the 12th slice of 16 384, not after one pass',
    (filter) => {
      const charged = vi.spyOn(Work.prototype, 'elements')
      expect(() =>
        evaluateTemplate(
          `{{ data | ${filter} }}`,
          { data: '&'.repeat(1_000_000) },
          'f',
          new ExpressionBudget(),
        ),
      ).toThrow('is past the expression budget')
      const slices = charged.mock.calls.map(([n]) => n)
      // 4 000 000 units less 256 (template) and 1 000 001 (read) leave room for 187 483 replacements
      // at 16: 11 whole slices (180 224) are charged, the 12th is refused; 196 608 characters counted.
      expect(slices).toEqual(Array.from({ length: 12 }, () => 16_384))
    },
  )

  it('a text of 16 385 characters is counted in two slices, 16 384 in one; the answer is the same', () => {
    const charged = vi.spyOn(Work.prototype, 'elements')
    const text = (n: number) => `<${'a'.repeat(n - 2)}>`
    expect(evaluateTemplate('{{ data | escape }}', { data: text(16_384) }, 'f')).toBe(
      `&lt;${'a'.repeat(16_382)}&gt;`,
    )
    expect(charged.mock.calls.map(([n]) => n)).toEqual([2])
    charged.mockClear()
    expect(evaluateTemplate('{{ data | escape }}', { data: text(16_385) }, 'f')).toBe(
      `&lt;${'a'.repeat(16_383)}&gt;`,
    )
    expect(charged.mock.calls.map(([n]) => n)).toEqual([1, 1])
  })
})

import { afterEach, describe, expect, it, vi } from 'vitest'
import { Work } from '../../src/expressions/cost.js'
import { evaluateTemplate } from '../../src/expressions/index.js'
import { ExpressionBudget } from '../../src/kernel/budget.js'

/**
 * `escape` and `escape_once` count a text's replacements 16 384 characters at a time, charging each
 * slice's and checking the length it will certainly make before counting the next: a text whose
 * replacements the budget cannot hold, or that would make too long a text, is refused soon after,
 * not after a pass over all of it (a 1 MB text of `&` held the event loop for the whole pass before
 * its 400).
 */
afterEach(() => vi.restoreAllMocks())

describe('escape counts its replacements slice by slice', () => {
  it.each(['escape', 'escape_once'])(
    '%s over 1 000 000 `&`: refused after the first slice of 16 384, once it must make too long a text',
    (filter) => {
      const charged = vi.spyOn(Work.prototype, 'elements')
      expect(() =>
        evaluateTemplate(
          `{{ data | ${filter} }}`,
          { data: '&'.repeat(1_000_000) },
          'f',
          new ExpressionBudget(),
        ),
      ).toThrow('makes a string longer than 1000000 characters')
      // 1 000 000 + 4 × 16 384 characters at least: past the string limit after one slice.
      expect(charged.mock.calls.map(([n]) => n)).toEqual([16_384])
    },
  )

  it('escape_once over `&amp;` that it may keep: counted until the budget runs out, not refused by length', () => {
    const charged = vi.spyOn(Work.prototype, 'elements')
    expect(() =>
      evaluateTemplate(
        '{{ data | escape_once }}',
        { data: '&amp;'.repeat(200_000) },
        'f',
        new ExpressionBudget(),
      ),
    ).toThrow('is past the expression budget')
    // 4 000 000 units less 256 (template) and 1 000 001 (read) leave 2 999 743; the budget must
    // still hold the text's 1 000 000 characters beside the replacements charged at 16 each, so
    // past 124 983 replacements it is refused: slices of 16 384 characters hold 3 277 or 3 276 `&`,
    // 38 of them fewer, 39 more.
    const slices = charged.mock.calls.map(([n]) => n)
    expect(slices).toHaveLength(39)
    expect(slices.slice(0, -1).reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(124_983)
    expect(slices.reduce((a, b) => a + b, 0)).toBeGreaterThan(124_983)
  })

  it('a `&` before a letter or `#` may begin an entity; before anything else escape_once escapes it', () => {
    expect(evaluateTemplate('{{ data | escape_once }}', { data: '&amp; &#39; &x &1 & &' }, 'f')).toBe(
      '&amp; &#39; &amp;x &amp;1 &amp; &amp;',
    )
  })

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

import { afterEach, describe, expect, it, type MockInstance, vi } from 'vitest'
import { evaluateTemplate } from '../../src/expressions/index.js'
import { ExpressionBudget } from '../../src/kernel/budget.js'
import { ServiceError } from '../../src/kernel/errors.js'
import type { Json } from '../../src/kernel/types.js'

/**
 * Every filter step is paid for before it runs: what it reads, the pieces or replacements it makes
 * and the most characters it could make are charged (or checked against the budget) first, so a
 * step past the budget is refused without doing its work. The work not done is seen by spying on
 * the string functions the filters call: none is called on the hostile input.
 */
const BUDGET = 'is past the expression budget'
/** `escape` refuses a text it would make past the string limit within its first slice, before the budget does. */
const TOO_LONG = 'makes a string longer than 1000000 characters'

function refusal(template: string, data: Json): ServiceError {
  try {
    evaluateTemplate(template, { data }, 'field', new ExpressionBudget())
  } catch (error) {
    if (error instanceof ServiceError) return error
    throw error
  }
  throw new Error(`${template} was not refused`)
}

let spies: MockInstance[] = []
afterEach(() => {
  for (const spy of spies) spy.mockRestore()
  spies = []
})

/** Spies on the string work filters do; answers how many calls were made on a text of 100 000+ characters. */
function watchBigWork(): () => number {
  spies = [
    vi.spyOn(String.prototype, 'replace'),
    vi.spyOn(String.prototype, 'split'),
    vi.spyOn(globalThis, 'encodeURIComponent'),
  ]
  const big = (x: unknown) => (typeof x === 'string' || x instanceof String) && x.length >= 100_000
  return () =>
    spies.reduce(
      (n, spy) =>
        n +
        spy.mock.calls.filter((args, i) => big(spy.mock.contexts[i]) || big((args as unknown[])[0])).length,
      0,
    )
}

describe('a filter step is refused before it runs when the budget cannot hold it', () => {
  it.each([
    ['escape', "'".repeat(1_000_000)],
    ['escape_once', '&'.repeat(1_000_000)],
    ['url_encode', ' '.repeat(1_000_000)],
    ['strip_newlines', '\n'.repeat(1_000_000)],
    ['newline_to_br', '\n'.repeat(300_000)],
    ["split: ''", 'a'.repeat(300_000)],
    ["split: 'a'", 'a'.repeat(300_000)],
    ["replace: 'a', 'b'", 'a'.repeat(300_000)],
    ["remove: 'a'", 'a'.repeat(300_000)],
    ['truncatewords: 999999', 'a '.repeat(500_000)],
  ])('%s over a hostile text: refused, and the text is never processed', (filter, data) => {
    const bigWork = watchBigWork()
    expect(refusal(`{{ data | ${filter} | size }}`, data).message).toContain(
      filter.startsWith('escape') ? TOO_LONG : BUDGET,
    )
    expect(bigWork()).toBe(0)
  })

  it('each replacement escape makes is paid for (16) with the most characters it can make', () => {
    // 256 for the template; escape reads 1 + 3, makes 2 replacements (32), makes 12 characters;
    // the answer is 14 characters of JSON + 8.
    const budget = new ExpressionBudget()
    expect(evaluateTemplate('{{ data | escape }}', { data: '<a>' }, 'f', budget)).toBe('&lt;a&gt;')
    expect(budget.used).toBe(256 + 4 + 32 + 9 + 19)
    // Within the budget it still works on large text: 200 000 plain characters.
    expect(evaluateTemplate('{{ data | escape | size }}', { data: 'a'.repeat(200_000) }, 'f')).toBe(200_000)
  })

  it('the budget must hold the replacements and the most escape could make: one unit short, nothing is escaped', () => {
    // 100 000 quotes: 256 (template) + 100 001 read + 16 × 100 000 replacements + 600 000 made
    // (each `"` becomes `&quot;`) = 2 300 257 units before escape may run.
    const quotes = '"'.repeat(100_000)
    const attempt = (limit: number) => {
      const bigWork = watchBigWork()
      try {
        evaluateTemplate('{{ data | escape | size }}', { data: quotes }, 'f', new ExpressionBudget(limit))
      } catch (error) {
        expect((error as Error).message).toContain(BUDGET)
      }
      const calls = bigWork()
      for (const spy of spies) spy.mockRestore()
      return calls
    }
    expect(attempt(2_300_256)).toBe(0)
    expect(attempt(2_300_257)).toBeGreaterThan(0)
  })

  it('arguments a filter walks are paid for: a card_mask preserve list, a date format, a card_exp format', () => {
    const long = 'a'.repeat(200_000)
    expect(refusal(`{{ 'bbbb' | card_mask: false, false, 'X', data }}`, long).message).toContain(BUDGET)
    expect(refusal(`{{ 'bbbb' | card_bin: data }}`, long).message).toContain(BUDGET)
    expect(refusal('{{ 0 | date: data }}', '%Y'.repeat(100_000)).message).toContain(BUDGET)
    const card = { expiration_month: 1, expiration_year: 2030 }
    const format = 'MM'.repeat(100_000)
    expect(() =>
      evaluateTemplate('{{ data.card | card_exp: data.format }}', { data: { card, format } }, 'f'),
    ).toThrow(BUDGET)
  })

  it('concat pays for the elements of its argument; a JSON Path for each of its characters', () => {
    const items = Array.from({ length: 150_000 }, () => 0)
    expect(refusal('{{ data | concat: data | size }}', items).message).toContain(BUDGET)
    expect(refusal('{{ data | json: data }}', `$${'.a'.repeat(65_000)}`).message).toContain(BUDGET)
  })

  it('url_encode of text with a lone surrogate is a 400, not a URIError', () => {
    const error = refusal('{{ data | url_encode }}', 'a\ud800b')
    expect(error.code).toBe('validation_failed')
    expect(error.message).toContain('well-formed')
  })
})

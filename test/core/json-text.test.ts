/**
 * Whether a string's JSON text is the string between quotes (`mayEscapeInJson`): a regular
 * expression below 4 096 characters, a scan for each escaped character from there (a quarter of
 * the time on a long string). Either way it never says "no" for a string `JSON.stringify` escapes.
 */
import { describe, expect, it } from 'vitest'
import { mayEscapeInJson } from '../../src/kernel/index.js'

const escaped = [
  ...Array.from({ length: 0x20 }, (_, c) => String.fromCharCode(c)),
  '"',
  '\\',
  '\ud800',
  '\udfff',
]

describe('mayEscapeInJson', () => {
  it.each([4095, 4096, 70_000])(
    'over %i characters, finds every character JSON escapes, wherever it is',
    (n) => {
      const base = 'é€😀y'.repeat(Math.ceil(n / 5)).slice(0, n - 1)
      for (const c of escaped)
        for (const text of [c + base, base + c, base.slice(0, 100) + c + base.slice(100)]) {
          expect(JSON.stringify(text) === `"${text}"`).toBe(false)
          expect(mayEscapeInJson(text)).toBe(true)
        }
    },
  )

  it('says no for text JSON leaves as it is: paired surrogates from 4 096 characters on', () => {
    const long = `${'😀é€ '.repeat(1000)}\u2028\u007f`
    expect(long.length).toBeGreaterThanOrEqual(4096)
    expect(JSON.stringify(long)).toBe(`"${long}"`)
    expect(mayEscapeInJson(long)).toBe(false)
    // Below it, the expression still answers "may" for any surrogate, to be safe.
    expect(mayEscapeInJson('😀'.repeat(10))).toBe(true)
    expect(mayEscapeInJson('plain text')).toBe(false)
  })
})

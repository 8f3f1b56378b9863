import { describe, expect, it } from 'vitest'
import { ServiceError } from '../../src/kernel/errors.js'
import { parseQuery } from '../../src/search/query.js'

/**
 * The search query limits docs/search.md states, each at its boundary with the number
 * written out: 4000 characters, 64 terms, 8 wildcard patterns of at most 128 characters, 32
 * levels of nesting. The limit parses; one past it is refused with the exact message.
 */
function problem(text: string): string {
  try {
    parseQuery(text)
  } catch (error) {
    expect(error).toBeInstanceOf(ServiceError)
    expect((error as ServiceError).code).toBe('validation_failed')
    return (error as ServiceError).message
  }
  throw new Error('parsed')
}
const ok = (text: string) => expect(() => parseQuery(text)).not.toThrow()
const many = (n: number, term: (i: number) => string, glue = ' OR ') =>
  Array.from({ length: n }, (_, i) => term(i)).join(glue)

describe('search query limits', () => {
  it('4000 characters parse; 4001 are refused', () => {
    ok(`id:a${' '.repeat(3996)}`)
    expect(problem(`id:a${' '.repeat(3997)}`)).toBe('query: must be at most 4000 characters')
  })

  it('64 terms parse (operators and parentheses are not terms); 65 are refused', () => {
    ok(many(64, (i) => `id:${i}`))
    ok(`(${many(32, (i) => `NOT id:${i}`, ' AND ')}) OR (${many(32, (i) => `type:t${i}`)})`)
    expect(problem(many(65, (i) => `id:${i}`))).toBe('query: must hold at most 64 terms')
  })

  it('8 wildcard patterns parse (a lone * is not one); 9 are refused', () => {
    ok(many(8, (i) => `id:a${i}*`))
    ok(`${many(8, (i) => `id:a${i}*`)} OR ${many(20, () => 'fingerprint:*')}`)
    ok(`${many(8, (i) => `id:a${i}*`)} OR ${many(20, (i) => `id:"phrase ${i}"`)}`)
    expect(problem(many(9, (i) => `id:a${i}*`))).toBe('query: must hold at most 8 wildcard patterns')
  })

  it('a pattern of 128 characters (wildcards counted) parses; 129 are refused', () => {
    ok(`id:${'a'.repeat(127)}*`)
    ok(`id:*${'é'.repeat(126)}*`)
    expect(problem(`id:${'a'.repeat(128)}*`)).toBe(
      'query: a wildcard pattern is at most 128 characters at character 1',
    )
    expect(problem(`id:*${'é'.repeat(127)}*`)).toContain('a wildcard pattern is at most 128 characters')
  })

  it('32 levels of parentheses or NOTs parse; 33 are refused, naming where', () => {
    ok(`${'('.repeat(32)}id:a${')'.repeat(32)}`)
    ok(`${'NOT '.repeat(32)}id:a`)
    expect(problem(`${'('.repeat(33)}id:a${')'.repeat(33)}`)).toBe(
      'query: nesting deeper than 32 levels at character 34',
    )
    expect(problem(`${'NOT '.repeat(33)}id:a`)).toBe('query: nesting deeper than 32 levels at character 133')
  })
})

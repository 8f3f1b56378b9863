import { describe, expect, it } from 'vitest'
import { ServiceError } from '../../entry/index.js'
import { globMatches, parseQuery } from '../../src/search/query.js'

/** The validation message `parseQuery` throws for `text`. */
function problem(text: string): string {
  try {
    parseQuery(text)
  } catch (error) {
    expect(error).toBeInstanceOf(ServiceError)
    expect((error as ServiceError).code).toBe('validation_failed')
    return (error as ServiceError).message
  }
  throw new Error(`parsed: ${text}`)
}

describe('search query parser', () => {
  it('parses terms, phrases, AND/OR/NOT with precedence, and parentheses', () => {
    expect(parseQuery('')).toEqual({ kind: 'all' })
    expect(parseQuery('   ')).toEqual({ kind: 'all' })
    expect(parseQuery('metadata.customer_id:cus_12345')).toEqual({
      kind: 'term',
      field: { kind: 'metadata', key: 'customer_id' },
      value: { kind: 'exact', text: 'cus_12345' },
    })
    expect(parseQuery('data:"data containing multiple words"')).toEqual({
      kind: 'term',
      field: { kind: 'data', path: 'data' },
      value: { kind: 'exact', text: 'data containing multiple words' },
    })
    const q = parseQuery('type:card OR type:bank AND NOT id:a')
    expect(q).toMatchObject({
      kind: 'or',
      items: [
        { kind: 'term', field: { kind: 'type' } },
        {
          kind: 'and',
          items: [{ kind: 'term' }, { kind: 'not', item: { kind: 'term', field: { kind: 'id' } } }],
        },
      ],
    })
    expect(parseQuery('(type:card || type:bank) && !id:a')).toMatchObject({
      kind: 'and',
      items: [{ kind: 'or' }, { kind: 'not' }],
    })
    expect(parseQuery('id:a\\ b\\:c')).toMatchObject({ value: { kind: 'exact', text: 'a b:c' } })
    expect(parseQuery('data.number:4242424242424242')).toMatchObject({
      field: { kind: 'data', path: 'data.number' },
    })
    expect(parseQuery('containers:/pci/*')).toMatchObject({
      field: { kind: 'container' },
      value: { kind: 'pattern', glob: [{ lit: '/pci/' }, '*'] },
    })
    expect(parseQuery('fingerprint:*')).toMatchObject({ value: { kind: 'exists' } })
    expect(parseQuery('updated_at:*')).toMatchObject({
      field: { kind: 'time', name: 'modified_at' },
      value: { kind: 'exists' },
    })
  })

  it('parses timestamp ranges, comparisons and days', () => {
    expect(parseQuery('created_at:[2023-01-01 TO *]')).toMatchObject({
      value: { kind: 'range', lower: { at: '2023-01-01T00:00:00.000Z', inclusive: true } },
    })
    expect(parseQuery('created_at:[2023-01-01 TO 2023-01-31]')).toMatchObject({
      value: {
        lower: { at: '2023-01-01T00:00:00.000Z', inclusive: true },
        upper: { at: '2023-02-01T00:00:00.000Z', inclusive: false },
      },
    })
    expect(parseQuery('expires_at:{2023-01-01 TO 2023-01-02T10:00:00Z}')).toMatchObject({
      value: {
        // Exclusive of the whole day 2023-01-01: from the next midnight on.
        lower: { at: '2023-01-02T00:00:00.000Z', inclusive: true },
        upper: { at: '2023-01-02T10:00:00.000Z', inclusive: false },
      },
    })
    expect(parseQuery('created_at:>=2023-05-01T12:00:00+02:00')).toMatchObject({
      value: { lower: { at: '2023-05-01T10:00:00.000Z', inclusive: true } },
    })
    expect(parseQuery('created_at:2023-01-01')).toMatchObject({
      value: {
        lower: { at: '2023-01-01T00:00:00.000Z', inclusive: true },
        upper: { at: '2023-01-02T00:00:00.000Z', inclusive: false },
      },
    })
  })

  it('refuses malformed queries naming the character and the problem, never echoing values', () => {
    expect(problem('type:card AND')).toBe(
      'query: expected a term, NOT or ( but the query ended at character 14',
    )
    expect(problem('(type:card')).toBe('query: expected ) to close the ( at character 1 at character 11')
    expect(problem('type:card)')).toBe('query: unexpected ) at character 10')
    expect(problem('type:card type:bank')).toBe(
      'query: expected AND, OR, ) or the end of the query at character 11',
    )
    expect(problem('type:')).toBe('query: expected a value after the colon at character 6')
    expect(problem('data:"secret 1234')).toBe('query: unterminated quoted phrase at character 6')
    expect(problem('hello')).toBe('query: expected field:value at character 1')
    expect(problem('AND type:card')).toBe('query: expected a term before AND at character 1')
    expect(problem(':x')).toBe('query: expected a field name before : at character 1')
    expect(problem('id:x\\')).toBe('query: a backslash must escape a character at character 5')
    expect(problem('created_at:[2023-01-01 2023-02-01]')).toContain('expected TO in the range')
    expect(problem('created_at:[2023-01-01 TO 2023-02-01')).toContain('unterminated range')
    expect(problem('created_at:[yesterday TO *]')).toContain('expected a date-time')
    expect(problem('created_at:2023-0*')).toContain('not a pattern')
    expect(problem('type:[a TO b]')).toContain('ranges and comparisons apply to created_at')
    expect(problem('id:>a')).toContain('ranges and comparisons apply to created_at')
    expect(problem('data:42*')).toContain('no wildcards')
    expect(problem('metadata.:x')).toContain('name a key')
    expect(problem('type:"card"x')).toContain('expected a space')
    expect(problem(`id:${'a'.repeat(128)}*`)).toContain('a wildcard pattern is at most 128 characters')
    const patterns = Array.from({ length: 9 }, (_, i) => `id:${i}*`).join(' OR ')
    expect(problem(patterns)).toBe('query: must hold at most 8 wildcard patterns')
    expect(() => parseQuery(`${patterns} OR id:*`.replace('id:8* OR ', ''))).not.toThrow()
    const secret = problem('data:4242424242424242 OR nope:4242424242424242')
    expect(secret).toContain('unknown field "nope"')
    expect(secret).not.toContain('4242424242424242')
    expect(problem('data:"4242424242424242')).not.toContain('4242')
  })

  it('refuses unknown fields, and bounds length, terms and nesting', () => {
    expect(problem('data_x:1')).toContain('unknown field "data_x"')
    expect(problem('tenant_id:1')).toContain('unknown field')
    expect(problem('mask:1')).toContain('unknown field')
    expect(problem('x'.repeat(4001))).toBe('query: must be at most 4000 characters')
    // docs/search.md's numbers, written out: 64 terms, 32 levels of nesting.
    const terms = Array.from({ length: 65 }, (_, i) => `id:${i}`).join(' OR ')
    expect(problem(terms)).toBe('query: must hold at most 64 terms')
    expect(() => parseQuery(Array.from({ length: 64 }, (_, i) => `id:${i}`).join(' OR '))).not.toThrow()
    expect(() => parseQuery(`${'('.repeat(32)}id:a${')'.repeat(32)}`)).not.toThrow()
    expect(problem(`${'('.repeat(33)}id:a${')'.repeat(33)}`)).toContain('nesting deeper')
    expect(problem(`${'NOT '.repeat(900)}id:a`)).toContain('nesting deeper')
    expect(problem('('.repeat(3000))).toContain('nesting deeper')
  })

  it('matches globs without backtracking blow-up', () => {
    expect(globMatches([{ lit: '/pci/' }, '*'], '/pci/high/')).toBe(true)
    expect(globMatches([{ lit: '/pci/' }, '*'], '/pii/high/')).toBe(false)
    expect(globMatches(['*', { lit: 'a' }, '?'], 'xxab')).toBe(true)
    expect(globMatches(['*', { lit: 'a' }, '?'], 'xxa')).toBe(false)
    expect(globMatches([{ lit: 'ANN' }], 'ann', true)).toBe(true)
    expect(globMatches(['*', '*', { lit: 'b' }, '*'], 'abc')).toBe(true)
    expect(globMatches(['*', '*'], '')).toBe(true)
    expect(globMatches(['?'], '')).toBe(false)
    expect(globMatches([{ lit: 'é' }, '?'], 'éü')).toBe(true)
    // Across the 32-bit words of the automaton's state.
    const xs = 'x'.repeat(40)
    expect(globMatches([{ lit: xs }, '*', { lit: 'yz' }], `${xs}--yz`)).toBe(true)
    expect(globMatches([{ lit: xs }, '?', { lit: 'yz' }], `${xs}--yz`)).toBe(false)
    expect(globMatches(['*', { lit: `${'a'.repeat(100)}b` }], `${'a'.repeat(500)}b`)).toBe(true)
    // The backtracking worst case answers; that it costs time linear in the text is timed in
    // search-query.slow.test.ts.
    expect(globMatches(['*', { lit: `${'a'.repeat(119)}b` }], 'a'.repeat(1000))).toBe(false)
  })
})

describe('Lucene syntax the search does not support is refused, naming the character', () => {
  it.each([
    ['type:car~', 'fuzzy matching (~) is not supported (escape it as \\~ to match it) at character 9'],
    ['type:card^2', 'boosts (^) are not supported (escape it as \\^ to match it) at character 10'],
    ['type:/ca.d/', 'regular expressions (/…/) are not supported: use * and ? wildcards at character 6'],
    ['+type:card', "Lucene's + prefix is not supported (join terms with AND, OR and NOT) at character 1"],
    [
      'type:(card OR bank)',
      'field grouping (field:(a OR b)) is not supported: write (field:a OR field:b) at character 6',
    ],
  ])('%s answers 400', (query, message) => {
    expect(problem(query)).toBe(`query: ${message}`)
  })

  it('- before a term is NOT, as Basis Theory documents (like !), and still needs an operator', () => {
    expect(parseQuery('type:a AND -type:card')).toEqual(parseQuery('type:a AND NOT type:card'))
    expect(parseQuery('-metadata.k:v')).toEqual(parseQuery('!metadata.k:v'))
    expect(problem('type:a -type:card')).toBe(
      'query: expected AND, OR, ) or the end of the query at character 8',
    )
  })

  it('escaped, inside a phrase or inside a value, the same characters are literal', () => {
    for (const query of ['type:ca\\~r', 'type:"car~ ^2"', 'id:abc-def', 'metadata.k:a+b', 'type:a\\^b'])
      expect(() => parseQuery(query), query).not.toThrow()
  })
})

it('a container value is a path, not a regular expression', () => {
  expect(() => parseQuery('container:/pci/ OR containers:/general/high/')).not.toThrow()
  expect(problem('metadata.k:/x/')).toContain('regular expressions')
})

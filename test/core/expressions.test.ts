import { describe, expect, it } from 'vitest'
import {
  applyMask,
  checkMask,
  compileTemplate,
  evaluateTemplate,
  isTemplateCached,
  MAX_STRING_LENGTH,
  MAX_TEMPLATE_LENGTH,
  renderTemplate,
} from '../../src/expressions/index.js'
import { ExpressionBudget } from '../../src/kernel/budget.js'
import { ServiceError } from '../../src/kernel/errors.js'
import type { Json } from '../../src/kernel/types.js'

const card = { number: '3622720627165567', expiration_month: 10, expiration_year: 2028 }
const ev = (template: string, data: Json) => evaluateTemplate(template, { data }, 'field')

function refusal(f: () => unknown): ServiceError {
  try {
    f()
  } catch (error) {
    if (error instanceof ServiceError) return error
    throw error
  }
  throw new Error('expected a ServiceError')
}

describe('expressions: objects and paths', () => {
  it('a template that is one object answers the value itself; text around it renders text', () => {
    expect(ev('{{ data }}', card)).toEqual(card)
    expect(ev('{{ data.number }}', card)).toBe('3622720627165567')
    expect(ev('{{ data.expiration_month }}', card)).toBe(10)
    expect(ev('{{ data.nonexistent }}', card)).toBeNull()
    expect(ev('{{ data.a.b.c }}', card)).toBeNull()
    expect(ev('{{ data.expiration_month }}/{{ data.expiration_year }}', card)).toBe('10/2028')
    expect(ev('plain text', card)).toBe('plain text')
    expect(ev('{{ data.books[1].title }}', { books: [{ title: 'A' }, { title: 'B' }] })).toBe('B')
    expect(ev("{{ data['a key'] }}", { 'a key': 'v' })).toBe('v')
    expect(ev('{{ data.list.size }}', { list: [1, 2, 3] })).toBe(3)
  })

  it('renders nil as nothing and objects as JSON inside text; render answers null for empty', () => {
    expect(ev('[{{ data.missing }}]', card)).toBe('[]')
    expect(ev('x{{ data }}', { a: 1 })).toBe('x{"a":1}')
    expect(renderTemplate('{{ data.missing }}', { data: card }, 'f')).toBeNull()
    expect(renderTemplate('{{ data.expiration_month }}', { data: card }, 'f')).toBe('10')
  })

  it('binds metadata beside data when given', () => {
    expect(evaluateTemplate('{{ metadata.k }}', { data: 'x', metadata: { k: 'v' } }, 'f')).toBe('v')
  })

  it('supports whitespace control and literal operands', () => {
    expect(ev('a  {{- data -}}  b', 'X')).toBe('aXb')
    expect(ev("{{ 'abc' | upcase }}", null)).toBe('ABC')
    expect(ev('{{ 5 | plus: 2 }}', null)).toBe(7)
  })
})

describe('expressions: Basis Theory filters', () => {
  it('reveal_last masks all but the last n characters, keeping dashes', () => {
    expect(ev('{{ data | reveal_last: 4 }}', '4242424242424242')).toBe('XXXXXXXXXXXX4242')
    expect(ev('{{ data | reveal_last: 6 }}', '36227206271667')).toBe('XXXXXXXX271667')
    expect(ev("{{ data | reveal_last: 3, '#' }}", '36227206271667')).toBe('###########667')
    expect(ev('{{ data | reveal_last: 4 }}', '123-45-6789')).toBe('XXX-XX-6789')
    expect(ev('{{ data | reveal_last: 4 }}', '12-3456789')).toBe('XX-XXX6789')
    expect(ev('{{ data | reveal_last: 4 }}', 'Sensitive Value')).toBe('XXXXXXXXXXXalue')
    expect(ev('{{ data | reveal_last: 4 }}', '123')).toBe('123')
  })

  it('reveal reveals first and last characters, preserving the given ones', () => {
    const d = '3622-7206-2716-5567'
    expect(ev('{{ data | reveal: 6 }}', d)).toBe('3622-7XXXXXXXXXXXXX')
    expect(ev('{{ data | reveal: 7, 5 }}', d)).toBe('3622-72XXXXXXX-5567')
    expect(ev("{{ data | reveal: 7, 5, '#' }}", d)).toBe('3622-72#######-5567')
    expect(ev(`{{ data | reveal: 7, 4, '#', "-" }}`, d)).toBe('3622-72##-####-5567')
    expect(ev('{{ data | reveal: 10, 9 }}', d)).toBe('XXXXXXXXXXXXXXXXXXX')
  })

  it('last4, pad_left, pad_right, remove, slice, split/first/last, upcase', () => {
    expect(ev('{{ data.number | last4 }}', card)).toBe('5567')
    expect(ev("{{ data | pad_left: 6, '0' }}", '1234')).toBe('001234')
    expect(ev("{{ data | pad_left: 2, '0' }}", '1234')).toBe('1234')
    expect(ev("{{ data | pad_right: 6, 'X' }}", '1234')).toBe('1234XX')
    expect(ev("{{ data | remove: '-' }}", '111-22-3333')).toBe('111223333')
    expect(ev('{{ data | slice: 0, 5 }}', '100101234')).toBe('10010')
    expect(ev('{{ data | slice: -3 }}', 'abcdef')).toBe('d')
    expect(ev("{{ data | split: '@' | last }}", 'john@example.com')).toBe('example.com')
    expect(ev("{{ data.name | split: ' ' | last | upcase }}", { name: 'John Doe' })).toBe('DOE')
    expect(ev('{{ data | last4 }}', null)).toBeNull()
  })

  it('stringify, to_string, to_number, to_boolean', () => {
    expect(ev('{{ data | stringify }}', { a: [1, 'x'] })).toBe('{"a":[1,"x"]}')
    expect(ev('{{ data | stringify }}', 'text')).toBe('text')
    expect(ev('{{ data.price | stringify }}', { price: 8.99 })).toBe('8.99')
    expect(ev('{{ data | to_string }}', 2.5)).toBe('2.5')
    expect(ev('{{ data | to_number }}', '42')).toBe(42)
    expect(ev('{{ data | to_boolean }}', 'false')).toBe(false)
    expect(refusal(() => ev('{{ data | to_number }}', 'abc')).issues).toHaveProperty('field')
  })

  it('json evaluates a JSON Path that resolves to one value, else 400', () => {
    const data = {
      books: [
        { author: 'Herman Melville', title: 'Moby Dick', price: 8.99 },
        { author: 'J. R. R. Tolkien', title: 'The Lord of the Rings', price: 22.99 },
      ],
      bicycle: { color: 'red', price: 19.95 },
    }
    expect(ev("{{ data | json: '$.bicycle.color' }}", data)).toBe('red')
    expect(ev("{{ data | json: '$.books[0].author' }}", data)).toBe('Herman Melville')
    expect(ev("{{ data | json: '$.books[?(@.price < 10)].title' }}", data)).toBe('Moby Dick')
    expect(ev("{{ data | json: '$.nothing' }}", data)).toBeNull()
    expect(refusal(() => ev("{{ data | json: '$..author' }}", data)).message).toMatch(/more than one/)
  })

  it('card_bin, card_exp and card_mask', () => {
    expect(ev('{{ data.number | card_bin }}', card)).toBe('36227206')
    expect(ev('{{ data | card_bin }}', '371449635398431')).toBe('371449')
    expect(ev("{{ data | card_exp: 'MM/YY' }}", card)).toBe('10/28')
    expect(ev("{{ data | card_exp: 'YYYY-MM' }}", card)).toBe('2028-10')
    expect(ev("{{ data | card_exp: 'MMYY' }}", card)).toBe('1028')
    expect(ev("{{ data.number | card_mask: 'true', 'true', '#', '-' }}", card)).toBe('36227206####5567')
    expect(ev("{{ data | card_mask: 'false', 'true', 'X', '-' }}", '3622-7206-2716-5567')).toBe(
      'XXXX-XXXX-XXXX-5567',
    )
    expect(ev("{{ data | card_mask: 'true', 'false', 'X', '-' }}", '3622-7206-2716-5567')).toBe(
      '3622-7206-XXXX-XXXX',
    )
  })

  it('aliases keep the format or length and reveal what is asked', () => {
    const a = ev('{{ data | alias_preserve_format: 3, 5 }}', 'ABC12345DEF67890') as string
    expect(a).toMatch(/^ABC\d{5}[A-Z]{3}67890$/)
    const b = ev('{{ data | alias_preserve_length: 0, 4 }}', 'x-y@z.com') as string
    expect(b).toHaveLength(9)
    expect(b.endsWith('.com')).toBe(true)
    const c = ev("{{ data | alias_card: 'true', 'true' }}", '4242424242424242') as string
    expect(c).toMatch(/^42424242\d{4}4242$/)
  })

  it('hmac with to_base16 matches the documented value; to_base64 encodes the same bytes', () => {
    const hex = ev("{{ data | hmac: 'sha-256', 'secretKeyValue' | to_base16 }}", '4242424242424242')
    expect(hex).toBe('90A0050E90515101DCAD0F68955370CCA81F6DCB9D299E7E0585CC9746716D9B')
    expect(ev("{{ data | hmac: 'sha-256', 'secretKeyValue' | to_base64 }}", '4242424242424242')).toBe(
      Buffer.from(hex as string, 'hex').toString('base64'),
    )
  })

  it('Liquid standard filters', () => {
    expect(ev('{{ data | downcase | capitalize }}', 'JOHN')).toBe('John')
    expect(ev("{{ data | append: '!' | prepend: '¡' }}", 'hola')).toBe('¡hola!')
    expect(ev("{{ data | replace: 'a', 'o' }}", 'banana')).toBe('bonono')
    expect(ev("{{ data | join: '-' }}", ['a', 'b'])).toBe('a-b')
    expect(ev('{{ data | size }}', 'abcd')).toBe(4)
    expect(ev("{{ data.x | default: 'none' }}", {})).toBe('none')
    expect(ev('{{ data | divided_by: 4 }}', 10)).toBe(2)
    expect(ev('{{ data | strip }}', '  x ')).toBe('x')
    expect(ev('{{ data | truncate: 5 }}', 'abcdefgh')).toBe('ab...')
  })
})

describe('expressions: errors', () => {
  it('an unknown filter is a 400 naming it and the field', () => {
    const e = refusal(() => compileTemplate('{{ data | rot13 }}', 'mask.number'))
    expect(e.code).toBe('validation_failed')
    expect(e.issues).toEqual({ 'mask.number': ['uses the unknown filter "rot13"'] })
  })

  it('syntax errors, tags and oversize templates are 400s', () => {
    for (const bad of [
      '{{ data',
      '{{ }}',
      '{{ data | }}',
      '{% if data %}x{% endif %}',
      "{{ 'abc }}",
      '{{ data ] }}',
    ]) {
      expect(refusal(() => compileTemplate(bad, 'f')).code, bad).toBe('validation_failed')
    }
    expect(refusal(() => compileTemplate('x'.repeat(MAX_TEMPLATE_LENGTH + 1), 'f')).code).toBe(
      'validation_failed',
    )
  })

  it('bad filter arguments are 400s at evaluation, and hostile sizes are refused', () => {
    expect(refusal(() => ev('{{ data | reveal_last }}', 'abc')).code).toBe('validation_failed')
    expect(refusal(() => ev("{{ data | pad_left: 'x', '0' }}", 'abc')).code).toBe('validation_failed')
    expect(refusal(() => ev("{{ data | pad_left: 2000000, '0' }}", 'abc')).code).toBe('validation_failed')
    expect(refusal(() => ev("{{ data | pad_left: 5, 'ab' }}", 'abc')).code).toBe('validation_failed')
    expect(refusal(() => ev("{{ data | hmac: 'md5', 'k' }}", 'abc')).code).toBe('validation_failed')
    expect(refusal(() => ev('{{ data | to_base64 }}', 'abc')).code).toBe('validation_failed')
    expect(refusal(() => ev('{{ data | divided_by: 0 }}', 4)).code).toBe('validation_failed')
  })

  // What these refusals cost (a few reference workloads, not the work refused) is timed in
  // expressions.slow.test.ts.
  it('a replace or join that would outgrow the string limit is refused before it is built; so is a chain past the work limit', () => {
    const big = 'x'.repeat(200_000)
    // 200k pieces joined by 3000 characters would be 600M characters: past what V8 can even hold.
    const glue = 'y'.repeat(3000)
    const replaced = refusal(() => ev(`{{ data | replace: '', '${glue}' }}`, big))
    expect(replaced.message).toContain(`longer than ${MAX_STRING_LENGTH} characters`)
    // (Split into 100k pieces: 200k, each paid for by split and by join, pass the work limit first.)
    const joinedUp = refusal(() => ev(`{{ data | split: '' | join: '${glue}' }}`, big.slice(0, 100_000)))
    expect(joinedUp.message).toContain(`longer than ${MAX_STRING_LENGTH} characters`)
    // Each append stays under the string limit; together they pass the work limit.
    const half = 'z'.repeat(MAX_STRING_LENGTH / 2)
    const chain = `{{ data${' | append: data | slice: 0, 500000'.repeat(20)} }}`
    expect(refusal(() => ev(chain, half)).message).toContain('at most 4000000 units of work')
    // Within the limits both still work, and the work count starts again with each evaluation.
    expect(ev("{{ data | replace: 'a', 'bb' }}", 'aXa')).toBe('bbXbb')
    expect(ev("{{ data | split: '-' | join: '+' }}", 'a-b')).toBe('a+b')
    for (let i = 0; i < 3; i++) expect(ev('{{ data | append: data }}', half)).toHaveLength(MAX_STRING_LENGTH)
  })

  it('does not read inherited properties', () => {
    expect(ev('{{ data.constructor }}', {})).toBeNull()
    expect(ev('{{ data.__proto__ }}', {})).toBeNull()
    expect(ev('{{ toString }}', {})).toBeNull()
  })
})

describe('masks', () => {
  it('evaluates every string of a mask object with data bound; omitted fields are dropped', () => {
    const data = { name: { first: 'John', last: 'Doe' }, ssn: '123-45-6789', cvc: '123' }
    const mask = {
      name: { first: '{{ data.name.first }}', last: '{{ data.name.last | slice: 0, 1 }}.' },
      ssn: "{{ data.ssn | reveal_last: 4, '#' }}",
      fixed: 7,
    }
    expect(applyMask(mask, data)).toEqual({
      name: { first: 'John', last: 'D.' },
      ssn: '###-##-6789',
      fixed: 7,
    })
  })

  it('a mask key named __proto__ answers an own field of that name, never a prototype', () => {
    const mask = JSON.parse('{"__proto__": {"polluted": "{{ data.a }}"}, "b": "{{ data.a }}"}') as Json
    const masked = applyMask(mask, { a: 'x' }) as Record<string, unknown>
    expect(Object.getPrototypeOf(masked)).toBe(Object.prototype)
    expect(Object.hasOwn(masked, '__proto__')).toBe(true)
    expect(JSON.stringify(masked)).toBe('{"__proto__":{"polluted":"x"},"b":"x"}')
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined()
  })

  it('checkMask names the path of a bad template', () => {
    expect(refusal(() => checkMask({ a: ['ok', '{{ data | nope }}'] })).issues).toEqual({
      'mask.a.1': ['uses the unknown filter "nope"'],
    })
  })
})

describe('the expression budget', () => {
  it('counts a template 256, each character a filter reads or makes 1, a per-character filter 32 per character', () => {
    const budget = new ExpressionBudget()
    expect(renderTemplate('x{{ data }}', { data: 'abc' }, 'f', budget)).toBe('xabc')
    // 256 for the template, 4 for the text it made.
    expect(budget.used).toBe(260)
    const reveal = new ExpressionBudget()
    expect(evaluateTemplate('{{ data | reveal_last: 2 }}', { data: 'abcd' }, 'f', reveal)).toBe('XXcd')
    // 256, then 1 + 4 × 32 read, 4 made, and the value answered: 6 characters of JSON + 8.
    expect(reveal.used).toBe(256 + 129 + 4 + 14)
  })

  it('every template of a mask shares one budget: the limit passes, one unit past fails', () => {
    // 16 templates of 'x' + 249 744 characters: 16 × (256 + 249 744) = 4 000 000.
    const data = 'd'.repeat(249_743)
    const mask = Array.from({ length: 16 }, () => 'x{{ data }}')
    expect((applyMask(mask, data) as string[]).every((s) => s.length === 249_744)).toBe(true)
    const past = refusal(() => applyMask([...mask.slice(1), 'xy{{ data }}'], data))
    expect(past.issues).toEqual({
      'mask.15': [
        'is past the expression budget: the expressions of one request may do at most 4000000 units of work (characters read and made) in all',
      ],
    })
  })

  it('a JSON Path counts the nodes it visits: recursive descent over deep data stops at the budget', () => {
    let data: Json = 'leaf'
    for (let i = 0; i < 60; i++) data = { a: data, b: [i, { c: i }] }
    const budget = new ExpressionBudget()
    const error = refusal(() =>
      evaluateTemplate('{{ data | json: "$..*..*..*..*..*" }}', { data }, 'f', budget),
    )
    expect(error.message).toContain('at most 4000000 units of work')
    expect(budget.exhausted).toBe(true)
    // One descent over the same data is well within it.
    const one = new ExpressionBudget()
    expect(
      evaluateTemplate('{{ data | json: "$..c" | size }}', { data: { x: { c: [1, 2] } } }, 'f', one),
    ).toBe(2)
    expect(one.used).toBeLessThan(1000)
  })

  it('a value named again and again pays for each copy; a sort pays for its comparisons', () => {
    const mask = Array.from({ length: 1000 }, () => '{{ data }}')
    expect(refusal(() => applyMask(mask, 'z'.repeat(5000))).message).toContain('4000000 units of work')
    const items = Array.from({ length: 20_000 }, (_, i) => String(i))
    // 20 000 × (128 + 8 × 15) = 4 960 000: refused before it sorts.
    expect(refusal(() => ev('{{ data | sort | size }}', items)).message).toContain('4000000 units of work')
    expect(ev('{{ data | sort | size }}', items.slice(0, 10_000))).toBe(10_000)
    // An object's members count as elements: 3000 × `size` of 100 000 keys is refused at the 3rd.
    const wide = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i]))
    const sizes = Array.from({ length: 3000 }, () => '{{ data | size }}')
    expect(refusal(() => applyMask(sizes, wide)).issues).toHaveProperty(['mask.2'])
  })
})

describe('Liquid rounding', () => {
  it('round goes half away from zero, as Liquid (Ruby) does', () => {
    expect(ev('{{ data | round }}', -2.5)).toBe(-3)
    expect(ev('{{ data | round }}', 2.5)).toBe(3)
    expect(ev('{{ data | round }}', -2.4)).toBe(-2)
    expect(ev('{{ data | round: 1 }}', -1.25)).toBe(-1.3)
    expect(ev('{{ data | round }}', 0)).toBe(0)
  })
})

describe('the template cache', () => {
  it('keeps the 500 templates of a tenant used most recently: a template in use is never evicted by new ones', () => {
    const hot = '{{ data | prepend: "hot-" }}'
    compileTemplate(hot, 'mask', 'lru-tenant')
    for (let i = 0; i < 2000; i++) {
      compileTemplate(`{{ data | append: "${i}" }}`, 'mask', 'lru-tenant')
      if (i % 400 === 0) compileTemplate(hot, 'mask', 'lru-tenant')
    }
    expect(isTemplateCached(hot, 'lru-tenant')).toBe(true)
    // The 500 most recent are kept, with the hot one among them: the oldest of the rest are gone.
    expect(isTemplateCached('{{ data | append: "1999" }}', 'lru-tenant')).toBe(true)
    expect(isTemplateCached('{{ data | append: "1501" }}', 'lru-tenant')).toBe(true)
    expect(isTemplateCached('{{ data | append: "1500" }}', 'lru-tenant')).toBe(false)
    expect(isTemplateCached('{{ data | append: "0" }}', 'lru-tenant')).toBe(false)
  })
})

import type { FilterCall, Operand, OutputObject, Part } from './ast.js'
import { fail } from './failure.js'
import { filterNamed } from './filters.js'

/**
 * Reads a template's text into its parts (see ast.ts): text, and `{{ <operand> | <filter>: <arg>,
 * … | … }}` objects whose operand is a literal (`'text'`, `"text"`, a number, `true`, `false`,
 * `nil`) or a variable path (`data`, `data.number`, `data.books[0]`, `data['a key']`). Liquid tags
 * (`{% … %}`) are not offered. A syntax error or an unknown filter throws an `ExpressionFailure`.
 */

/** The longest template accepted. */
export const MAX_TEMPLATE_LENGTH = 4096

/** The most filters one object may chain. */
const MAX_FILTERS = 50

const IDENT = /[A-Za-z_][A-Za-z0-9_-]*/y
const NUMBER = /-?\d+(?:\.\d+)?/y

/** A cursor over an object's text that skips spaces between tokens. */
class Scanner {
  pos = 0
  constructor(readonly text: string) {}
  skipSpace() {
    while (this.pos < this.text.length && /\s/.test(this.text[this.pos]!)) this.pos++
  }
  done() {
    this.skipSpace()
    return this.pos >= this.text.length
  }
  peek() {
    this.skipSpace()
    return this.text[this.pos]
  }
  eat(ch: string): boolean {
    if (this.peek() === ch) {
      this.pos++
      return true
    }
    return false
  }
  match(re: RegExp): string | null {
    this.skipSpace()
    re.lastIndex = this.pos
    const m = re.exec(this.text)
    if (!m) return null
    this.pos += m[0].length
    return m[0]
  }
  quoted(): string | null {
    const q = this.peek()
    if (q !== "'" && q !== '"') return null
    const end = this.text.indexOf(q, this.pos + 1)
    if (end < 0) fail('has a string literal without its closing quote')
    const s = this.text.slice(this.pos + 1, end)
    this.pos = end + 1
    return s
  }
}

/** The keys after a variable's root: `.name`, `[0]`, `['a key']`, with no spaces between them. */
function parseKeys(s: Scanner): (string | number)[] {
  const keys: (string | number)[] = []
  for (;;) {
    const at = s.text[s.pos]
    if (at === '.') {
      s.pos++
      const m = /[A-Za-z0-9_-]+/y
      m.lastIndex = s.pos
      const key = m.exec(s.text)
      if (!key) fail('has a "." not followed by a property name')
      s.pos += key![0].length
      keys.push(key![0])
    } else if (at === '[') {
      s.pos++
      const q = s.quoted()
      if (q !== null) keys.push(q)
      else {
        const n = s.match(/\d+/y)
        if (n === null) fail('has a "[" not followed by an index or a quoted name')
        keys.push(Number(n))
      }
      if (!s.eat(']')) fail('has a "[" without its "]"')
    } else return keys
  }
}

function parseOperand(s: Scanner): Operand {
  const str = s.quoted()
  if (str !== null) return { kind: 'literal', value: str }
  const num = s.match(NUMBER)
  if (num !== null)
    return num.includes('.')
      ? { kind: 'literal', value: Number(num), float: true }
      : { kind: 'literal', value: Number(num) }
  const root = s.match(IDENT)
  if (root === null) return fail(`expected a variable or a literal at "${s.text.slice(s.pos, s.pos + 20)}"`)
  if (root === 'true' || root === 'false') return { kind: 'literal', value: root === 'true' }
  if (root === 'nil' || root === 'null' || root === 'empty') return { kind: 'literal', value: null }
  return { kind: 'path', root, keys: parseKeys(s) }
}

function parseObject(inner: string): OutputObject {
  const s = new Scanner(inner)
  if (s.done()) fail('has an empty {{ }}')
  const operand = parseOperand(s)
  const filters: FilterCall[] = []
  while (!s.done()) {
    if (!s.eat('|')) fail(`has unexpected text "${inner.slice(s.pos).trim().slice(0, 20)}"`)
    const name = s.match(IDENT)
    if (name === null) fail('has a "|" not followed by a filter name')
    if (filterNamed(name!) === undefined) fail(`uses the unknown filter "${name}"`)
    const args: Operand[] = []
    if (s.eat(':')) {
      do args.push(parseOperand(s))
      while (s.eat(','))
    }
    if (filters.length >= MAX_FILTERS) fail(`chains more than ${MAX_FILTERS} filters`)
    filters.push({ name: name!, args })
  }
  return { operand, filters }
}

/** The parts of template `source`; throws an `ExpressionFailure` on a syntax error or unknown filter. */
export function parse(source: string): Part[] {
  if (source.length > MAX_TEMPLATE_LENGTH) fail(`must be at most ${MAX_TEMPLATE_LENGTH} characters`)
  if (source.includes('{%')) fail('uses a Liquid tag ({% … %}), which is not supported: use {{ … }} objects')
  const parts: Part[] = []
  let pos = 0
  while (pos < source.length) {
    const open = source.indexOf('{{', pos)
    if (open < 0) {
      parts.push(source.slice(pos))
      break
    }
    const close = source.indexOf('}}', open + 2)
    if (close < 0) fail('has a "{{" without its "}}"')
    let text = source.slice(pos, open)
    let inner = source.slice(open + 2, close)
    // Liquid's whitespace control: `{{-` and `-}}` trim the text beside them.
    if (inner.startsWith('-')) {
      inner = inner.slice(1)
      text = text.trimEnd()
    }
    let trimNext = false
    if (inner.endsWith('-')) {
      inner = inner.slice(0, -1)
      trimNext = true
    }
    if (text) parts.push(text)
    parts.push(parseObject(inner))
    pos = close + 2
    if (trimNext) while (pos < source.length && /\s/.test(source[pos]!)) pos++
  }
  return parts
}

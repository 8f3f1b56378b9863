import { createHmac, randomInt } from 'node:crypto'
import type { Json } from '../kernel/index.js'
import {
  BudgetExceeded,
  type ExpressionBudget,
  expressionBudget,
  invalid,
  jsonSize,
  MAX_INPUT_DEPTH,
  TenantLru,
} from '../kernel/index.js'
import { jsonPath, type PathContext } from './json-path.js'
import { liquidDate, stripHtml } from './liquid-text.js'

/**
 * Basis Theory's expression language for `mask`, `fingerprint_expression` and `search_indexes`: a
 * subset of Liquid. A template is text with objects `{{ <operand> | <filter>: <arg>, … | … }}`;
 * the operand is a literal (`'text'`, `"text"`, a number, `true`, `false`, `nil`) or a variable
 * path (`data`, `data.number`, `data.books[0]`, `data['a key']`). Liquid tags (`{% … %}`) are not
 * offered. A template that is exactly one object evaluates to the value itself (an object stays an
 * object, a missing property is `null`); otherwise to text, each object rendered as Liquid renders
 * it (nil as empty, arrays joined, objects as JSON).
 *
 * Every failure — a syntax error, an unknown filter, a filter given a value it can't take — is a
 * `validation_failed` naming the field the template came from. Evaluation is bounded: templates of
 * at most `MAX_TEMPLATE_LENGTH` characters, strings of at most `MAX_STRING_LENGTH`, and all the
 * work of the templates evaluated under one `ExpressionBudget` (one request's, or one token
 * value's: see src/kernel/budget.ts) at most its limit, counted before each step is taken.
 */

/** The longest template accepted. */
export const MAX_TEMPLATE_LENGTH = 4096
/** The longest string a filter may make (pad_left, append, … on hostile input). */
export const MAX_STRING_LENGTH = 1_000_000

/** What a template can see: `data`, and `metadata` for fingerprints. */
export type Variables = Readonly<Record<string, Json | undefined>>

/** A value during evaluation: JSON, bytes (from `hmac`, for `to_base64`/`to_base16`), or nothing. */
type Value = Json | Uint8Array | undefined

/** A literal written with a decimal point (`2.0`) is a float in Liquid, though its value is whole. */
type Operand =
  | { kind: 'literal'; value: Json; float?: true }
  | { kind: 'path'; root: string; keys: (string | number)[] }
interface FilterCall {
  name: string
  args: Operand[]
}
interface OutputObject {
  operand: Operand
  filters: FilterCall[]
}
type Part = string | OutputObject

/** A parsed template: `evaluate` binds variables and runs it. */
export interface Template {
  /** The template text as given. */
  readonly source: string
  /**
   * The value of the template for these variables (see the module comment), its work charged to
   * `budget` (default: a fresh `MAX_EXPRESSION_WORK`).
   */
  evaluate(vars: Variables, budget?: ExpressionBudget): Json
  /** The template rendered as text: `null` when it renders to nothing (empty or nil). Charged as `evaluate`. */
  render(vars: Variables, budget?: ExpressionBudget): string | null
}

class ExpressionFailure extends Error {}

const fail = (message: string): never => {
  throw new ExpressionFailure(message)
}

// ---------------------------------------------------------------------------------------------
// Parsing

const IDENT = /[A-Za-z_][A-Za-z0-9_-]*/y
const NUMBER = /-?\d+(?:\.\d+)?/y

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
  const keys: (string | number)[] = []
  for (;;) {
    // No spaces inside a path: `data.number`, `data[0]`.
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
    } else break
  }
  return { kind: 'path', root, keys }
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
    if (!Object.hasOwn(FILTERS, name!)) fail(`uses the unknown filter "${name}"`)
    const args: Operand[] = []
    if (s.eat(':')) {
      do args.push(parseOperand(s))
      while (s.eat(','))
    }
    if (filters.length >= 50) fail('chains more than 50 filters')
    filters.push({ name: name!, args })
  }
  return { operand, filters }
}

function parse(source: string): Part[] {
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

// ---------------------------------------------------------------------------------------------
// Values

const isBytes = (v: Value): v is Uint8Array => v instanceof Uint8Array
const isObject = (v: Value): v is { [key: string]: Json } =>
  v !== null && typeof v === 'object' && !Array.isArray(v) && !isBytes(v)

/** The budget the evaluation running now charges (evaluation is synchronous: one at a time). */
let budget: ExpressionBudget = expressionBudget()

/** Spends `units` of the running evaluation's budget. */
const charge = (units: number) => budget.charge(units)

/** What the `json` filter's JSON Path charges and fails with. */
const pathContext: PathContext = { charge, fail }

/** `s`, unless it is longer than `MAX_STRING_LENGTH`. */
function capped(s: string): string {
  if (s.length > MAX_STRING_LENGTH) fail(`makes a string longer than ${MAX_STRING_LENGTH} characters`)
  return s
}

/** Refuses a string of `length` characters before it is built: past the string limit, or the budget. */
function willMake(length: number): void {
  if (length > MAX_STRING_LENGTH) fail(`makes a string longer than ${MAX_STRING_LENGTH} characters`)
  budget.ensure(length)
}

/** `parts.join(glue)`, refused before it is built when it would be longer than `MAX_STRING_LENGTH`. */
function joined(parts: readonly string[], glue: string): string {
  let total = glue.length * Math.max(0, parts.length - 1)
  for (const part of parts) total += part.length
  willMake(total)
  return parts.join(glue)
}

/**
 * How many times `find` (not empty) occurs in `s`, not overlapping, counted only up to `max`: past
 * it the answer is `max + 1` (so counting costs no more than the work it is asked before).
 */
function occurrences(s: string, find: string, max: number): number {
  let count = 0
  for (let at = s.indexOf(find); at >= 0 && count <= max; at = s.indexOf(find, at + find.length)) count++
  return count
}

/** How many line breaks (`\r`, `\n`) `s` holds (a loop over the text: each character read once). */
function lineBreaks(s: string): number {
  let count = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c === 10 || c === 13) count++
  }
  return count
}

/** Charges `count` replacements (or pieces) a filter is about to make, each an element, before it makes them. */
function replacements(count: number): void {
  charge(ELEMENT_COST * count)
}

/** `s.split(separator)`, its pieces counted and charged as elements before it splits. */
function pieces(s: string, separator: string): string[] {
  const max = Math.floor(budget.remaining / ELEMENT_COST)
  replacements(separator === '' ? s.length : occurrences(s, separator, max) + 1)
  return s.split(separator)
}

/** How many characters an HTML-escaped character adds (`&` → `&amp;`, `<` → `&lt;`, …), else 0. */
function escapeGrowth(c: number): number {
  switch (c) {
    case 34: // "
      return 5
    case 38: // &
    case 39: // '
      return 4
    case 60: // <
    case 62: // >
      return 3
    default:
      return 0
  }
}

/** `s` HTML-escaped (`once`: an entity already there is kept), its replacements and length paid before. */
function htmlEscaped(s: string, once: boolean): string {
  let escaped = 0
  let growth = 0
  for (let i = 0; i < s.length; i++) {
    const grows = escapeGrowth(s.charCodeAt(i))
    if (grows > 0) {
      escaped++
      growth += grows
    }
  }
  replacements(escaped)
  // The most it makes: every `&` escaped (escape_once may keep some).
  willMake(s.length + growth)
  const ampersands = once ? /&(?!(?:[a-zA-Z][a-zA-Z0-9]*|#\d+|#[xX][0-9a-fA-F]+);)/g : /&/g
  return s
    .replace(ampersands, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;')
}

/** Whether `encodeURIComponent` keeps the ASCII character `c` as it is: `A-Z a-z 0-9 - _ . ! ~ * ' ( )`. */
function keptByUri(c: number): boolean {
  if ((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122)) return true
  return (
    c === 45 || c === 95 || c === 46 || c === 33 || c === 126 || c === 42 || c === 39 || c === 40 || c === 41
  )
}

/** `s` as `url_encode` writes it (a space as `+`), its length and replacements paid before it is made. */
function urlEncoded(s: string): string {
  let made = 0
  let spaces = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c === 32) spaces++
    if (c < 0x80) made += c === 32 || keptByUri(c) ? 1 : 3
    else if (c < 0x800) made += 6
    else if (c >= 0xd800 && c <= 0xdbff && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      made += 12
      i++
    } else if (c >= 0xd800 && c <= 0xdfff)
      return fail('url_encode needs well-formed text (it has a lone surrogate)')
    else made += 9
  }
  replacements(spaces)
  willMake(made + 2 * spaces)
  return encodeURIComponent(s).replace(/%20/g, '+')
}

/**
 * `s` with its case changed by `f`, which may make up to 3 characters of one (`ß` → `SS`, `ΐ`): the
 * budget must hold the most it could make before it runs (ASCII text keeps its length).
 */
function recased(s: string, f: (s: string) => string): string {
  budget.ensure(/[\u0080-\uffff]/.test(s) ? 3 * s.length : s.length)
  return capped(f(s))
}

/**
 * The characters of `s` as a set, for filters that ask of each character of their input whether it
 * is one of them (`preserve`, a separator): each of its characters is charged as a character
 * handled in script, so a long list costs what it is, not once per character of the input.
 */
function charSet(s: string): Set<string> {
  charge(CHAR_COST * s.length)
  return new Set(s)
}

/** `a + b`, refused before it is built when too long. */
function concatenated(a: string, b: string): string {
  willMake(a.length + b.length)
  return a + b
}

/** `v` as JSON text, its size checked against the budget before it is built, and charged. */
function jsonText(v: Json): string {
  const size = jsonSize(v, budget.remaining, NODE_COST)
  budget.ensure(size)
  charge(size)
  return capped(JSON.stringify(v))
}

/** Liquid's text of a value: nil as empty, arrays joined, objects as JSON. What it builds is charged. */
function toText(v: Value): string {
  if (v === undefined || v === null) return ''
  if (typeof v === 'string') return v
  if (typeof v === 'number' || typeof v === 'boolean') return String(v)
  if (isBytes(v)) return Buffer.from(v).toString('base64')
  if (Array.isArray(v)) {
    charge(ELEMENT_COST * v.length)
    return joined(v.map(toText), '')
  }
  return jsonText(v)
}

function toJson(v: Value): Json {
  if (v === undefined) return null
  if (isBytes(v)) return Buffer.from(v).toString('base64')
  return v
}

function lookup(vars: Variables, op: Operand): Value {
  if (op.kind === 'literal') return op.value
  let v: Value = Object.hasOwn(vars, op.root) ? vars[op.root] : undefined
  for (const key of op.keys) {
    if (v === undefined || v === null) return undefined
    if (Array.isArray(v)) {
      if (key === 'size') v = v.length
      else if (key === 'first') v = v[0]
      else if (key === 'last') v = v[v.length - 1]
      else v = typeof key === 'number' ? v[key] : undefined
    } else if (isObject(v)) v = Object.hasOwn(v, String(key)) ? v[String(key)] : undefined
    else if (typeof v === 'string' && key === 'size') v = v.length
    else return undefined
  }
  return v
}

// ---------------------------------------------------------------------------------------------
// Filters

type Filter = (input: Value, args: Value[], written: readonly Operand[]) => Value

const str = (v: Value) => toText(v)
function int(v: Value, what: string): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : Number.NaN
  if (!Number.isInteger(n)) fail(`needs an integer ${what}`)
  return n
}
function num(v: Value): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : Number.NaN
  if (Number.isNaN(n)) fail(`needs a number, not ${JSON.stringify(toJson(v))?.slice(0, 40)}`)
  return n
}
function char(v: Value, fallback: string, what: string): string {
  if (v === undefined || v === null) return fallback
  const s = str(v)
  // One character is one or two UTF-16 units: a longer text is refused before it is walked.
  if (s.length > 2 || [...s].length !== 1) fail(`needs a single character as ${what}`)
  return s
}
function bool(v: Value, fallback: boolean): boolean {
  if (v === undefined || v === null) return fallback
  if (typeof v === 'boolean') return v
  const s = str(v).toLowerCase()
  if (s === 'true') return true
  if (s === 'false') return false
  return fail('needs true or false')
}
const length = (v: Value, what: string) => {
  const n = int(v, what)
  if (n < 0 || n > MAX_STRING_LENGTH) fail(`needs ${what} between 0 and ${MAX_STRING_LENGTH}`)
  return n
}
const nullOr =
  (f: (input: Value, args: Value[]) => Value): Filter =>
  (input, args) =>
    input === undefined || input === null ? null : f(input, args)

function arrayOf(v: Value): Json[] {
  if (Array.isArray(v)) return v
  if (v === undefined || v === null) return []
  return [toJson(v)]
}

const DIGIT = /\d/
/** What `reveal_last` keeps unmasked. */
const DASH: ReadonlySet<string> = new Set('-')

/** Masks every character of `chars` for which `masked(i)` holds, but those in `preserve`. */
function maskChars(
  chars: string[],
  masked: (i: number) => boolean,
  maskChar: string,
  preserve: ReadonlySet<string>,
) {
  return chars.map((c, i) => (masked(i) && !preserve.has(c) ? maskChar : c)).join('')
}

/** The 6- or 8-digit BIN length of a card number with `digits` digits. */
const binLength = (digits: number) => (digits < 16 ? 6 : 8)

const ALPHA = 'abcdefghijklmnopqrstuvwxyz'
const ALNUM = `${ALPHA}0123456789`

/** A random character of the same kind: a digit for a digit, a letter (same case) for a letter. */
function sameKind(c: string): string {
  if (/\d/.test(c)) return String(randomInt(10))
  if (/[a-z]/.test(c)) return ALPHA[randomInt(26)]!
  if (/[A-Z]/.test(c)) return ALPHA[randomInt(26)]!.toUpperCase()
  return c
}

function revealBounds(args: Value[], len: number): [number, number] {
  const first = args[0] === undefined || args[0] === null ? 0 : length(args[0], 'reveal_first_length')
  const last = args[1] === undefined || args[1] === null ? 0 : length(args[1], 'reveal_last_length')
  if (first + last > len) fail('reveals more characters than the value has')
  return [first, last]
}

function aliasCard(input: Value, args: Value[]): Value {
  const chars = [...str(input)]
  const digits = chars.filter((c) => DIGIT.test(c)).length
  const bin = bool(args[0], false) ? binLength(digits) : 0
  const last = bool(args[1], false) ? 4 : 0
  if (bin + last > digits) fail('reveals more digits than the card number has')
  let seen = 0
  return chars
    .map((c) => {
      if (!DIGIT.test(c)) return c
      const i = seen++
      return i < bin || i >= digits - last ? c : String(randomInt(10))
    })
    .join('')
}

function cardMask(input: Value, args: Value[]): Value {
  const chars = [...str(input)]
  const preserve = charSet(args[3] === undefined || args[3] === null ? '' : str(args[3]))
  const maskChar = char(args[2], 'X', 'mask_char')
  const counted = chars.filter((c) => !preserve.has(c)).length
  const bin = bool(args[0], false) ? binLength(counted) : 0
  const last = bool(args[1], false) ? 4 : 0
  let seen = 0
  const out = chars
    .map((c) => {
      if (preserve.has(c)) return c
      const i = seen++
      return i < bin || i >= counted - last ? c : maskChar
    })
    .join('')
  return out === chars.join('') ? maskChars(chars, () => true, maskChar, preserve) : out
}

function cardExp(input: Value, args: Value[]): Value {
  if (!isObject(input)) return fail('card_exp needs a card object with expiration_month and expiration_year')
  const month = int(input.expiration_month ?? undefined, 'expiration_month')
  const year = int(input.expiration_year ?? undefined, 'expiration_year')
  if (args[0] === undefined || args[0] === null) fail('card_exp needs a date format such as MM/YY')
  const mm = String(month).padStart(2, '0')
  const yyyy = String(year).padStart(4, '0')
  const parts: Record<string, string> = { YYYY: yyyy, YY: yyyy.slice(-2), MM: mm }
  const format = str(args[0])
  // Each part of the format is replaced in script, and each may grow by 2 characters.
  charge(CHAR_COST * format.length)
  willMake(2 * format.length)
  return format.replace(/YYYY|YY|MM/g, (m) => parts[m]!)
}

/**
 * The first `n` words (runs of non-space) of `s`, each found by a step of a regular expression in
 * script, charged as a per-character filter's character (32) before the next is looked for.
 */
function firstWords(s: string, n: number): string[] {
  const words: string[] = []
  const word = /\S+/g
  for (let m = word.exec(s); m !== null && words.length < n; m = word.exec(s)) {
    charge(CHAR_COST)
    words.push(m[0])
  }
  return words
}

function math(f: (a: number, b: number) => number): Filter {
  return (input, args) => {
    const r = f(num(input), num(args[0]))
    if (!Number.isFinite(r)) fail('makes a number that is not finite')
    return r
  }
}

/** Every filter offered, by name: Liquid's standard string, array and math filters and Basis Theory's. */
const FILTERS: Record<string, Filter> = {
  // Liquid: strings
  upcase: (v) => recased(str(v), (s) => s.toUpperCase()),
  downcase: (v) => recased(str(v), (s) => s.toLowerCase()),
  capitalize: (v) => recased(str(v), (s) => s.charAt(0).toUpperCase() + s.slice(1).toLowerCase()),
  strip: (v) => str(v).trim(),
  lstrip: (v) => str(v).trimStart(),
  rstrip: (v) => str(v).trimEnd(),
  strip_newlines: (v) => {
    const s = str(v)
    replacements(lineBreaks(s))
    return s.replace(/[\r\n]/g, '')
  },
  append: (v, a) => concatenated(str(v), str(a[0])),
  prepend: (v, a) => concatenated(str(a[0]), str(v)),
  remove: (v, a) => joined(pieces(str(v), str(a[0])), ''),
  remove_first: (v, a) => str(v).replace(str(a[0]), ''),
  replace: (v, a) => joined(pieces(str(v), str(a[0])), str(a[1])),
  replace_first: (v, a) => {
    const [s, find, by] = [str(v), str(a[0]), str(a[1])]
    if (s.includes(find)) willMake(s.length - find.length + by.length)
    return s.replace(find, () => by)
  },
  truncate: (v, a) => {
    const s = str(v)
    const n = a[0] === undefined ? 50 : length(a[0], 'length')
    const ellipsis = a[1] === undefined ? '...' : str(a[1])
    if (s.length <= n) return s
    return s.slice(0, Math.max(0, n - ellipsis.length)) + ellipsis
  },
  slice: (v, a) => {
    const start = int(a[0], 'start')
    const len = a[1] === undefined ? 1 : length(a[1], 'length')
    if (Array.isArray(v)) {
      const from = start < 0 ? Math.max(0, v.length + start) : start
      return v.slice(from, from + len)
    }
    const s = str(v)
    const from = start < 0 ? Math.max(0, s.length + start) : start
    return s.slice(from, from + len)
  },
  split: (v, a) => {
    if (a[0] === undefined) fail('split needs a separator')
    const sep = str(a[0])
    const s = str(v)
    return s === '' ? [] : pieces(s, sep)
  },
  size: (v) => (Array.isArray(v) ? v.length : isObject(v) ? Object.keys(v).length : str(v).length),
  url_encode: (v) => urlEncoded(str(v)),
  escape: (v) => htmlEscaped(str(v), false),
  escape_once: (v) => htmlEscaped(str(v), true),
  strip_html: (v) => stripHtml(str(v)),
  newline_to_br: (v) => {
    const s = str(v)
    const lines = pieces(s, '\n')
    willMake(s.length + 6 * (lines.length - 1))
    return lines.map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line)).join('<br />\n')
  },
  truncatewords: (v, a) => {
    const n = Math.max(1, a[0] === undefined ? 15 : length(a[0], 'words'))
    const ellipsis = a[1] === undefined ? '...' : str(a[1])
    const s = str(v)
    const words = firstWords(s, n + 1)
    if (words.length <= n) return s
    return concatenated(joined(words.slice(0, n), ' '), ellipsis)
  },
  date: (v, a) => {
    if (a[0] === undefined) fail('date needs a format (%Y-%m-%d)')
    if (typeof v !== 'string' && typeof v !== 'number') return v
    const pattern = str(a[0])
    // Each character of the format is written in script, a directive by date-fns.
    charge(CHAR_COST * pattern.length)
    return liquidDate(v, pattern) ?? v
  },
  default: (v, a) => (v === undefined || v === null || v === false || v === '' ? (a[0] ?? null) : v),
  // Liquid: arrays
  first: (v) => (Array.isArray(v) ? v[0] : typeof v === 'string' ? v.charAt(0) : undefined),
  last: (v) => (Array.isArray(v) ? v[v.length - 1] : typeof v === 'string' ? v.slice(-1) : undefined),
  join: (v, a) => joined(arrayOf(v).map(toText), a[0] === undefined ? ' ' : str(a[0])),
  reverse: (v) => (Array.isArray(v) ? [...v].reverse() : [...str(v)].reverse().join('')),
  uniq: (v) => [...new Map(arrayOf(v).map((x) => [jsonText(x), x])).values()],
  compact: (v) => arrayOf(v).filter((x) => x !== null),
  sort: (v) =>
    arrayOf(v)
      .map((x) => [toText(x), x] as const)
      .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
      .map(([, x]) => x),
  map: (v, a) => arrayOf(v).map((x) => (isObject(x) && Object.hasOwn(x, str(a[0])) ? x[str(a[0])]! : null)),
  concat: (v, a) => {
    const more = arrayOf(a[0])
    charge(ELEMENT_COST * more.length)
    return [...arrayOf(v), ...more]
  },
  // Liquid: math
  plus: math((a, b) => a + b),
  minus: math((a, b) => a - b),
  times: math((a, b) => a * b),
  divided_by: (v, a, written) => {
    const [x, y] = [num(v), num(a[0])]
    if (y === 0) fail('divided_by divides by zero')
    // Liquid divides whole numbers as integers (7 / 2 = 3) unless either is a float: `2.0` is.
    const floatDivisor = written[0]?.kind === 'literal' && written[0].float === true
    return Number.isInteger(x) && Number.isInteger(y) && !floatDivisor ? Math.floor(x / y) : x / y
  },
  modulo: (v, a) => {
    const [x, y] = [num(v), num(a[0])]
    if (y === 0) fail('modulo divides by zero')
    return x % y
  },
  abs: (v) => Math.abs(num(v)),
  ceil: (v) => Math.ceil(num(v)),
  floor: (v) => Math.floor(num(v)),
  round: (v, a) => {
    const digits = a[0] === undefined ? 0 : int(a[0], 'digits')
    if (digits < 0 || digits > 15) fail('round takes 0 to 15 digits')
    const f = 10 ** digits
    // Liquid (Ruby) rounds half away from zero: -2.5 → -3, where Math.round gives -2.
    const x = num(v)
    return (Math.sign(x) * Math.round(Math.abs(x) * f)) / f
  },
  at_least: (v, a) => Math.max(num(v), num(a[0])),
  at_most: (v, a) => Math.min(num(v), num(a[0])),
  // Basis Theory
  last4: nullOr((v) => str(v).slice(-4)),
  reveal_last: nullOr((v, a) => {
    if (a[0] === undefined) fail('reveal_last needs the number of characters to reveal')
    const n = length(a[0], 'length')
    const chars = [...str(v)]
    if (chars.length <= n) return chars.join('')
    return maskChars(chars, (i) => i < chars.length - n, char(a[1], 'X', 'mask_char'), DASH)
  }),
  reveal: nullOr((v, a) => {
    const chars = [...str(v)]
    const first = a[0] === undefined ? 0 : length(a[0], 'reveal_first')
    const last = a[1] === undefined ? 0 : length(a[1], 'reveal_last')
    const maskChar = char(a[2], 'X', 'mask_char')
    const preserve = charSet(a[3] === undefined || a[3] === null ? '' : str(a[3]))
    const all = () => maskChars(chars, () => true, maskChar, preserve)
    if (chars.length <= first + last) return all()
    const out = maskChars(chars, (i) => i >= first && i < chars.length - last, maskChar, preserve)
    return out === chars.join('') ? all() : out
  }),
  pad_left: nullOr((v, a) => {
    const [s, n] = [str(v), length(a[0], 'length')]
    willMake(n)
    return s.padStart(n, char(a[1], ' ', 'pad_char'))
  }),
  pad_right: nullOr((v, a) => {
    const [s, n] = [str(v), length(a[0], 'length')]
    willMake(n)
    return s.padEnd(n, char(a[1], ' ', 'pad_char'))
  }),
  stringify: nullOr((v) => (typeof v === 'string' ? v : jsonText(toJson(v)))),
  to_string: nullOr((v) => {
    if (typeof v === 'object') fail('to_string can cast only a string, number or boolean')
    return str(v)
  }),
  to_number: nullOr((v) => {
    const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : Number.NaN
    if (!Number.isFinite(n)) fail(`to_number can't cast ${JSON.stringify(toJson(v))?.slice(0, 40)}`)
    return n
  }),
  to_boolean: nullOr((v) => {
    if (typeof v === 'boolean') return v
    const s = typeof v === 'string' ? v.trim().toLowerCase() : ''
    if (s !== 'true' && s !== 'false') fail('to_boolean can cast only "true" or "false"')
    return s === 'true'
  }),
  json: (v, a) => {
    if (a[0] === undefined) fail('json needs a JSON Path expression')
    const found = jsonPath(toJson(v), str(a[0]), pathContext)
    if (found.length > 1) fail('json: the JSON Path matches more than one value')
    return found[0] ?? null
  },
  card_bin: nullOr((v, a) => {
    const sep = charSet(a[0] === undefined || a[0] === null ? '' : str(a[0]))
    const plain = [...str(v)].filter((c) => !sep.has(c)).join('')
    return plain.slice(0, binLength(plain.length))
  }),
  card_exp: cardExp,
  card_mask: nullOr(cardMask),
  alias_card: nullOr(aliasCard),
  alias_preserve_format: nullOr((v, a) => {
    const chars = [...str(v)]
    const [first, last] = revealBounds(a, chars.length)
    return chars.map((c, i) => (i < first || i >= chars.length - last ? c : sameKind(c))).join('')
  }),
  alias_preserve_length: nullOr((v, a) => {
    const chars = [...str(v)]
    const [first, last] = revealBounds(a, chars.length)
    return chars.map((c, i) => (i < first || i >= chars.length - last ? c : ALNUM[randomInt(36)]!)).join('')
  }),
  hmac: (v, a) => {
    if (v === undefined || v === null) fail('hmac needs a value')
    const alg = a[0] === undefined || a[0] === null ? 'sha-256' : str(a[0]).toLowerCase()
    const algorithm = { 'sha-1': 'sha1', 'sha-256': 'sha256', 'sha-512': 'sha512' }[alg]
    if (!algorithm) fail('hmac takes the algorithm sha-1, sha-256 or sha-512')
    if (a[1] === undefined || a[1] === null || str(a[1]) === '') fail('hmac needs a key')
    return new Uint8Array(createHmac(algorithm!, str(a[1])).update(str(v), 'utf8').digest())
  },
  to_base64: (v) => {
    if (!isBytes(v)) fail('to_base64 needs bytes (the output of hmac)')
    return Buffer.from(v as Uint8Array).toString('base64')
  },
  to_base16: (v) => {
    if (!isBytes(v)) fail('to_base16 needs bytes (the output of hmac)')
    return Buffer.from(v as Uint8Array)
      .toString('hex')
      .toUpperCase()
  },
}

/** The names of every filter templates may use. */
export const FILTER_NAMES: readonly string[] = Object.freeze(Object.keys(FILTERS).sort())

// ---------------------------------------------------------------------------------------------
// Templates

/** Work units each evaluation of a template costs before its filters: a mask of 80 000 `{{ data }}` pays for each. */
const TEMPLATE_COST = 256
/** Work units per element of an array a filter handles (each is a step in script). */
const ELEMENT_COST = 16
/** Work units per element for `sort` and `uniq`, which make each element's text to compare it. */
const COMPARE_COST = 128
/** Work units per comparison a `sort` makes. */
const SORT_COMPARISON_COST = 8
/** Work units per character for filters that handle their input character by character in script. */
const CHAR_COST = 32
/** The filters that walk a string character by character in script (the others use the engine's string code). */
const CHAR_FILTERS = new Set(['reveal_last', 'reveal', 'card_mask', 'card_bin', 'reverse'])
/** The filters that draw a random number per character: twice as dear. */
const RANDOM_FILTERS = new Set(['alias_card', 'alias_preserve_format', 'alias_preserve_length'])
/** Work units per value inside a JSON value that is walked or copied into an answer. */
const NODE_COST = 8

/** The work units filter `name` costs on `input`, charged before it runs. */
function inputCost(name: string, input: Value): number {
  if (typeof input === 'string') {
    const perChar = RANDOM_FILTERS.has(name) ? 2 * CHAR_COST : CHAR_FILTERS.has(name) ? CHAR_COST : 1
    return 1 + input.length * perChar
  }
  if (isBytes(input)) return 1 + input.length
  if (Array.isArray(input)) {
    const n = input.length
    // A sort compares about n·log2(n) times.
    if (name === 'sort') return 1 + n * (COMPARE_COST + SORT_COMPARISON_COST * Math.ceil(Math.log2(n + 1)))
    return 1 + n * (name === 'uniq' ? COMPARE_COST : ELEMENT_COST)
  }
  // An object's members may all be enumerated (`size`, `stringify`, …): each is an element.
  if (isObject(input)) return 1 + ELEMENT_COST * Object.keys(input).length
  return 1
}

/** The work units a filter's `output` costs: its characters, or its elements. */
function outputCost(output: Value): number {
  if (typeof output === 'string' || isBytes(output) || Array.isArray(output)) return output.length
  return 1
}

function run(obj: OutputObject, vars: Variables): Value {
  let v = lookup(vars, obj.operand)
  for (const f of obj.filters) {
    const args = f.args.map((a) => lookup(vars, a))
    charge(inputCost(f.name, v))
    v = FILTERS[f.name]!(v, args, f.args)
    charge(outputCost(v))
  }
  return v
}

/** A field's name, or how to make it (a path built only when an error names it). */
type FieldName = string | (() => string)
const nameOf = (field: FieldName): string => (typeof field === 'string' ? field : field())

class Compiled implements Template {
  constructor(
    readonly source: string,
    private readonly parts: Part[],
    private readonly field: FieldName,
  ) {}

  private guard<T>(given: ExpressionBudget | undefined, f: () => T): T {
    const outer = budget
    budget = given ?? expressionBudget()
    try {
      charge(TEMPLATE_COST)
      return f()
    } catch (error) {
      if (error instanceof ExpressionFailure || error instanceof BudgetExceeded) {
        throw invalid(nameOf(this.field), error.message)
      }
      if (error instanceof RangeError) throw invalid(nameOf(this.field), 'is too large to evaluate')
      throw error
    } finally {
      budget = outer
    }
  }

  /** The template's parts rendered as one text, charged as it is made. */
  private text(vars: Variables): string {
    const text = joined(
      this.parts.map((p) => (typeof p === 'string' ? p : toText(run(p, vars)))),
      '',
    )
    charge(text.length)
    return text
  }

  evaluate(vars: Variables, given?: ExpressionBudget): Json {
    return this.guard(given, () => {
      const [only] = this.parts
      if (this.parts.length === 1 && typeof only === 'object') {
        const value = toJson(run(only, vars))
        // The value goes into an answer as JSON as often as templates name it: each copy is paid for.
        const size = jsonSize(value, budget.remaining, NODE_COST)
        budget.ensure(size)
        charge(size)
        return value
      }
      return this.text(vars)
    })
  }

  render(vars: Variables, given?: ExpressionBudget): string | null {
    return this.guard(given, () => {
      const text = this.text(vars)
      return text === '' ? null : text
    })
  }
}

/** How many parsed templates the cache keeps of one tenant, and in all. */
export const TEMPLATE_CACHE_PER_TENANT = 500
export const TEMPLATE_CACHE_ENTRIES = 4000

/**
 * Parsed templates by tenant and source, so hot paths (masks on every read) parse each template
 * once: per tenant the 500 it used most recently, 4000 in all (see `TenantLru`: a tenant's flood of
 * distinct templates evicts only its own).
 */
const cache = new TenantLru<Part[]>(TEMPLATE_CACHE_PER_TENANT, TEMPLATE_CACHE_ENTRIES)

/** Whether `tenant` (default none) has `source` among its parsed templates kept (for tests of eviction). */
export function isTemplateCached(source: string, tenant = ''): boolean {
  return cache.has(tenant, source)
}

/** How many parsed templates are kept: `tenant`'s, or in all (for tests of the bounds). */
export function templatesCached(tenant?: string): number {
  return cache.size(tenant)
}

/**
 * Parses `source` as a template, kept in `tenant`'s part of the cache (`''`: no tenant's, for
 * callers outside a tenant); a syntax error or an unknown filter is a `validation_failed` naming
 * `field` (`mask`, `fingerprint_expression`, `search_indexes.0`), whose errors at evaluation time
 * name it too.
 */
export function compileTemplate(source: string, field: FieldName, tenant = ''): Template {
  let parts = cache.get(tenant, source)
  if (!parts) {
    try {
      parts = parse(source)
    } catch (error) {
      if (error instanceof ExpressionFailure) throw invalid(nameOf(field), error.message)
      throw error
    }
    cache.set(tenant, source, parts)
  }
  return new Compiled(source, parts, field)
}

/** Evaluates `source` with `vars` (see `Template.evaluate`); errors name `field`. */
export function evaluateTemplate(
  source: string,
  vars: Variables,
  field: string,
  budget?: ExpressionBudget,
  tenant = '',
): Json {
  return compileTemplate(source, field, tenant).evaluate(vars, budget)
}

/** Renders `source` with `vars` as text, `null` when empty (see `Template.render`); errors name `field`. */
export function renderTemplate(
  source: string,
  vars: Variables,
  field: string,
  budget?: ExpressionBudget,
  tenant = '',
): string | null {
  return compileTemplate(source, field, tenant).render(vars, budget)
}

/**
 * `value` with `f` applied to every string in it (at any depth), each with a function that makes
 * its dotted path under `field` (made only when asked: a mask of 80 000 plain strings builds no path).
 */
function walk(value: Json, field: string, f: (s: string, path: () => string) => Json): Json {
  const keys: (string | number)[] = []
  const path = () => [field, ...keys].join('.')
  const go = (v: Json): Json => {
    if (keys.length > MAX_INPUT_DEPTH)
      throw invalid(path(), `is nested deeper than ${MAX_INPUT_DEPTH} levels`)
    if (typeof v === 'string') return f(v, path)
    if (Array.isArray(v)) {
      const out: Json[] = new Array(v.length)
      for (let i = 0; i < v.length; i++) {
        keys.push(i)
        out[i] = go(v[i]!)
        keys.pop()
      }
      return out
    }
    if (v !== null && typeof v === 'object') {
      const out: Record<string, Json> = {}
      for (const key of Object.keys(v)) {
        keys.push(key)
        const item = go(v[key]!)
        // Defined, not assigned, only where assigning would set the prototype instead.
        if (key === '__proto__')
          Object.defineProperty(out, key, {
            value: item,
            enumerable: true,
            writable: true,
            configurable: true,
          })
        else out[key] = item
        keys.pop()
      }
      return out
    }
    return v
  }
  return go(value)
}

/**
 * A mask applied to token data: every string in `mask` (at any depth) is a template evaluated with
 * `data` bound; other values stay as they are. Errors name the string's path under `field`. Every
 * template of the mask charges one `budget` (default: a fresh one for this mask): a mask of 5000
 * templates costs what its 5000 evaluations make, not one template's share.
 */
export function applyMask(
  mask: Json,
  data: Json,
  field = 'mask',
  budget = expressionBudget(),
  tenant = '',
): Json {
  return walk(mask, field, (s, path) => {
    if (!s.includes('{{')) return s
    return compileTemplate(s, path, tenant).evaluate({ data }, budget)
  })
}

/** Checks every template in a mask parses (400 naming its path otherwise), without evaluating it. */
export function checkMask(mask: Json, field = 'mask', tenant = ''): void {
  walk(mask, field, (s, path) => {
    if (s.includes('{{')) compileTemplate(s, path, tenant)
    return s
  })
}

import { invalid, isoAfter, parseDateTime } from '../kernel/index.js'

/**
 * The token search query language (Basis Theory's Lucene-based syntax, `POST /tokens/search`):
 *
 * - a term is `field:value`; `value` is a bare word (`\` escapes the next character), a quoted
 *   phrase (`"two words"`, `\"` and `\\` escaped inside), a range over a timestamp field
 *   (`[a TO b]` inclusive, `{a TO b}` exclusive, mixable, `*` an open end) or a comparison
 *   (`created_at:>=2023-01-01`, also `>`, `<`, `<=`);
 * - terms combine with `AND` (also `&&`), `OR` (also `||`), `NOT` (also `!`) and parentheses;
 *   `AND` binds tighter than `OR`; two terms side by side without an operator are refused;
 * - in bare values of `id`, `type`, `container(s)`, `fingerprint` and `metadata.<key>`, `*` matches
 *   any run of characters and `?` one character; a value of `*` alone matches every token that
 *   has the field;
 * - fields: `id`, `type`, `container` (or `containers`), `fingerprint`, `metadata.<key>` (exact but
 *   for case), `created_at`, `updated_at` (or `modified_at`), `expires_at`, and `data` /
 *   `data.<path>`, which match only the token's `search_indexes` (exact values: indexes are kept
 *   as keyed hashes, so no wildcard or range applies to them).
 *
 * A malformed query is a validation error naming the character position (1-based) and the
 * problem; it never echoes a value of the query (it may be sensitive).
 */

/** Longest query accepted, in characters. */
export const MAX_QUERY_LENGTH = 4000
/** Most terms in one query. */
export const MAX_TERMS = 64
/** Most wildcard patterns in one query (each costs a pass over the text it is matched with). */
export const MAX_PATTERNS = 8
/** Deepest nesting of parentheses and `NOT`s. */
export const MAX_DEPTH = 32

/** A timestamp field of a token. */
export type TimeField = 'created_at' | 'modified_at' | 'expires_at'

/** What a term matches on. */
export type Field =
  | { kind: 'id' | 'type' | 'container' | 'fingerprint' }
  | { kind: 'metadata'; key: string }
  | { kind: 'time'; name: TimeField }
  /** The application that created or last changed the token. */
  | { kind: 'actor'; name: 'created_by' | 'modified_by' }
  /** `data` (any search index) or `data.<path>` (an index that is exactly `{{ data.<path> }}`). */
  | { kind: 'data'; path: string }

/** One end of a range: an ISO instant, inclusive or not. */
export interface Bound {
  at: string
  inclusive: boolean
}

/** What a term compares with. */
export type Value =
  | { kind: 'exact'; text: string }
  /** Glob pattern: `parts` are the literal pieces, `*` and `?` between them as written. */
  | { kind: 'pattern'; glob: GlobPart[]; compiled: CompiledGlobs }
  | { kind: 'exists' }
  | { kind: 'range'; lower?: Bound; upper?: Bound }

/** A piece of a glob pattern. */
export type GlobPart = { lit: string } | '*' | '?'

/** A parsed query. */
export type QueryNode =
  | { kind: 'and' | 'or'; items: QueryNode[] }
  | { kind: 'not'; item: QueryNode }
  | { kind: 'term'; field: Field; value: Value }
  /** The empty query: every token. */
  | { kind: 'all' }

type Tok =
  | { t: '(' | ')' | 'AND' | 'OR' | 'NOT'; at: number }
  | { t: 'term'; at: number; field: string; raw: RawValue }

type RawValue =
  | { kind: 'word'; pieces: GlobPart[]; wild: boolean }
  | { kind: 'phrase'; text: string }
  | { kind: 'range'; lower: RawBound; upper: RawBound }
  | { kind: 'compare'; op: '>' | '>=' | '<' | '<='; text: string }

type RawBound = { text: string | null; inclusive: boolean }

const fail = (at: number, problem: string) => invalid('query', `${problem} at character ${at + 1}`)

const isSpace = (c: string | undefined) => c === ' ' || c === '\t' || c === '\n' || c === '\r'
/** Characters that end a bare word (unless escaped). */
const ENDS_WORD = new Set([' ', '\t', '\n', '\r', '(', ')', '"'])

/** Where the lexer is in the query: `text[i]` is the next character to read. */
interface Cursor {
  text: string
  i: number
}

/** Splits the query into tokens. */
function lex(text: string): Tok[] {
  const out: Tok[] = []
  const cur: Cursor = { text, i: 0 }
  while (cur.i < text.length) {
    const c = text[cur.i]!
    if (isSpace(c)) {
      cur.i++
      continue
    }
    const operator = operatorAt(cur)
    if (operator) out.push(operator)
    else out.push(...termAt(cur))
  }
  return out
}

/** The operator or parenthesis at the cursor (moved past it), or null if a term starts there. */
function operatorAt(cur: Cursor): Tok | null {
  const { text } = cur
  const c = text[cur.i]!
  if (c === '(' || c === ')') return { t: c, at: cur.i++ }
  if (c === '&' && text[cur.i + 1] === '&') {
    cur.i += 2
    return { t: 'AND', at: cur.i - 2 }
  }
  if (c === '|' && text[cur.i + 1] === '|') {
    cur.i += 2
    return { t: 'OR', at: cur.i - 2 }
  }
  // Basis Theory documents `!` and `-` as NOT.
  if ((c === '!' && text[cur.i + 1] !== '=') || c === '-') return { t: 'NOT', at: cur.i++ }
  if (c === '"') throw fail(cur.i, 'a quoted phrase needs a field (field:"phrase")')
  if (c === '+') throw fail(cur.i, "Lucene's + prefix is not supported (join terms with AND, OR and NOT)")
  return null
}

/** A keyword (AND, OR, NOT written out) or a `field:value` term at the cursor, moved past it. */
function termAt(cur: Cursor): Tok[] {
  const { text } = cur
  const n = text.length
  // A keyword or a term: read the field name up to `:`.
  const at = cur.i
  let field = ''
  while (cur.i < n && text[cur.i] !== ':' && !ENDS_WORD.has(text[cur.i]!)) {
    if (text[cur.i] === '\\') {
      if (cur.i + 1 >= n) throw fail(cur.i, 'a backslash must escape a character')
      field += text[cur.i + 1]
      cur.i += 2
    } else field += text[cur.i++]
  }
  if (text[cur.i] !== ':') {
    if (field === 'AND' || field === 'OR' || field === 'NOT') return [{ t: field, at }]
    throw fail(at, field ? 'expected field:value' : 'unexpected character')
  }
  if (!field) throw fail(at, 'expected a field name before :')
  cur.i++ // the colon
  const raw = valueAt(cur, field)
  const i = cur.i
  if (i < n && !isSpace(text[i]) && text[i] !== ')' && text[i] !== '(')
    throw fail(i, 'expected a space, ) or the end of the query after the value')
  return [{ t: 'term', at, field, raw }]
}

/** The value of a term of `field` at the cursor (just past the colon), moved past it. */
function valueAt(cur: Cursor, field: string): RawValue {
  const v = cur.text[cur.i]
  if (v === '(')
    throw fail(cur.i, 'field grouping (field:(a OR b)) is not supported: write (field:a OR field:b)')
  if (v === undefined || isSpace(v) || v === ')') throw fail(cur.i, 'expected a value after the colon')
  if (v === '"') {
    const p = phrase(cur)
    cur.i = p.end
    return { kind: 'phrase', text: p.text }
  }
  if (v === '[' || v === '{') return rangeAt(cur, v)
  if (v === '>' || v === '<') {
    const op = cur.text[cur.i + 1] === '=' ? (`${v}=` as const) : v
    cur.i += op.length
    const valueAt = cur.i
    const w = word(cur, ENDS_WORD)
    if (w.end === valueAt) throw fail(valueAt, 'expected a value after the comparison')
    if (w.wild) throw fail(valueAt, 'a comparison takes a date-time, not a pattern')
    cur.i = w.end
    return { kind: 'compare', op, text: w.pieces.map((p) => (p as { lit: string }).lit).join('') }
  }
  // Container values are paths (`/pci/`); elsewhere a leading `/` opens a Lucene regular expression.
  if (v === '/' && field !== 'container' && field !== 'containers')
    throw fail(cur.i, 'regular expressions (/…/) are not supported: use * and ? wildcards')
  const valueAt = cur.i
  const w = word(cur, ENDS_WORD)
  refuseLuceneSuffixes(cur.text, valueAt, w.end)
  cur.i = w.end
  return { kind: 'word', pieces: w.pieces, wild: w.wild }
}

/** Characters that end a range bound (unless escaped). */
const BOUND_STOP = new Set([' ', '\t', '\n', '\r', ']', '}', '"'])

/** A range `[lower TO upper]` (or with `{`/`}` for exclusive bounds) at the cursor, moved past it. */
function rangeAt(cur: Cursor, v: '[' | '{'): RawValue {
  const { text } = cur
  const open = cur.i
  cur.i++
  const lower = bound(cur)
  skipSpace(cur)
  if (text.slice(cur.i, cur.i + 2) !== 'TO' || !(isSpace(text[cur.i + 2]) || text[cur.i + 2] === '"'))
    throw fail(cur.i, 'expected TO in the range')
  cur.i += 2
  const upper = bound(cur)
  skipSpace(cur)
  const close = text[cur.i]
  if (close !== ']' && close !== '}') throw fail(open, 'unterminated range (expected ] or })')
  cur.i++
  return {
    kind: 'range',
    lower: { text: lower, inclusive: v === '[' },
    upper: { text: upper, inclusive: close === ']' },
  }
}

/** Reads a bare word from the cursor: its glob pieces (escapes resolved) and whether it holds a wildcard. */
function word(cur: Cursor, stop: Set<string>): { pieces: GlobPart[]; wild: boolean; end: number } {
  const { text } = cur
  const n = text.length
  const pieces: GlobPart[] = []
  let lit = ''
  let wild = false
  let j = cur.i
  while (j < n && !stop.has(text[j]!)) {
    const c = text[j]!
    if (c === '\\') {
      if (j + 1 >= n) throw fail(j, 'a backslash must escape a character')
      lit += text[j + 1]
      j += 2
      continue
    }
    if (c === '*' || c === '?') {
      if (lit) pieces.push({ lit })
      lit = ''
      pieces.push(c)
      wild = true
    } else lit += c
    j++
  }
  if (lit) pieces.push({ lit })
  return { pieces, wild, end: j }
}

/** Reads a quoted phrase opening at the cursor: its text (escapes resolved) and where it ends. */
function phrase(cur: Cursor): { text: string; end: number } {
  const { text } = cur
  const n = text.length
  const start = cur.i
  let j = cur.i + 1
  let s = ''
  while (j < n && text[j] !== '"') {
    if (text[j] === '\\') {
      if (j + 1 >= n) break
      s += text[j + 1]
      j += 2
    } else s += text[j++]
  }
  if (j >= n) throw fail(start, 'unterminated quoted phrase')
  return { text: s, end: j + 1 }
}

function skipSpace(cur: Cursor) {
  while (cur.i < cur.text.length && isSpace(cur.text[cur.i])) cur.i++
}

/** A range bound at the cursor, moved past it: its text, or null for `*` (open). */
function bound(cur: Cursor): string | null {
  skipSpace(cur)
  if (cur.text[cur.i] === '"') {
    const p = phrase(cur)
    cur.i = p.end
    return p.text
  }
  const at = cur.i
  const w = word(cur, BOUND_STOP)
  if (w.end === at) throw fail(at, 'expected a range bound')
  cur.i = w.end
  if (w.pieces.length === 1 && w.pieces[0] === '*') return null
  if (w.wild) throw fail(at, 'a range bound is a date-time or *')
  return w.pieces.map((p) => (p as { lit: string }).lit).join('')
}

/**
 * Refuses Lucene's fuzzy (`~`) and boost (`^`) operators in the value `text[from, to)`, unless
 * escaped with a backslash (then they are literal characters).
 */
function refuseLuceneSuffixes(text: string, from: number, to: number): void {
  for (let j = from; j < to; j++) {
    const c = text[j]
    if (c === '\\') j++
    else if (c === '~') throw fail(j, 'fuzzy matching (~) is not supported (escape it as \\~ to match it)')
    else if (c === '^') throw fail(j, 'boosts (^) are not supported (escape it as \\^ to match it)')
  }
}

const SIMPLE_FIELDS: Record<string, Field> = {
  id: { kind: 'id' },
  type: { kind: 'type' },
  container: { kind: 'container' },
  containers: { kind: 'container' },
  fingerprint: { kind: 'fingerprint' },
  created_at: { kind: 'time', name: 'created_at' },
  updated_at: { kind: 'time', name: 'modified_at' },
  modified_at: { kind: 'time', name: 'modified_at' },
  expires_at: { kind: 'time', name: 'expires_at' },
  created_by: { kind: 'actor', name: 'created_by' },
  modified_by: { kind: 'actor', name: 'modified_by' },
  updated_by: { kind: 'actor', name: 'modified_by' },
  data: { kind: 'data', path: 'data' },
}

const DATA_PATH = /^data(\.[A-Za-z0-9_$-]+)+$/

function fieldOf(name: string, at: number): Field {
  if (Object.hasOwn(SIMPLE_FIELDS, name)) return SIMPLE_FIELDS[name]!
  if (name.startsWith('metadata.')) {
    const key = name.slice('metadata.'.length)
    if (!key) throw fail(at, 'metadata terms name a key (metadata.<key>:value)')
    if (key.length > 100) throw fail(at, 'a metadata key is at most 100 characters')
    return { kind: 'metadata', key }
  }
  if (DATA_PATH.test(name)) return { kind: 'data', path: name }
  throw fail(
    at,
    `unknown field ${JSON.stringify(name.slice(0, 100))} (fields: id, type, container, fingerprint, metadata.<key>, created_at, updated_at, expires_at, created_by, modified_by, data, data.<path>)`,
  )
}

/** A date-time bound: `2023-01-01` (a whole day, UTC) or any date-time the API accepts. */
function instant(text: string, at: number): { start: string; end: string } {
  const day = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text)
  const start = parseDateTime(day ? `${text}T00:00:00Z` : text)
  if (start === null) throw fail(at, 'expected a date-time (2023-01-01 or 2023-01-01T10:00:00Z) or *')
  if (!day) return { start, end: start }
  // A UTC day is always 24 hours long.
  return { start, end: isoAfter(start, 86_400_000) }
}

/** The value of term `tok` for `field`, checked against what the field supports. */
function termValue(field: Field, raw: RawValue, at: number): Value {
  if (field.kind === 'time') {
    switch (raw.kind) {
      case 'range': {
        const out: { kind: 'range'; lower?: Bound; upper?: Bound } = { kind: 'range' }
        if (raw.lower.text !== null) {
          const { start, end } = instant(raw.lower.text, at)
          // An inclusive day starts at its midnight; an exclusive one after its last instant.
          out.lower = raw.lower.inclusive
            ? { at: start, inclusive: true }
            : { at: end, inclusive: start !== end }
        }
        if (raw.upper.text !== null) {
          const { start, end } = instant(raw.upper.text, at)
          out.upper = raw.upper.inclusive
            ? { at: end, inclusive: start === end }
            : { at: start, inclusive: false }
        }
        return out
      }
      case 'compare': {
        const { start, end } = instant(raw.text, at)
        if (raw.op === '>') return { kind: 'range', lower: { at: end, inclusive: start !== end } }
        if (raw.op === '>=') return { kind: 'range', lower: { at: start, inclusive: true } }
        if (raw.op === '<') return { kind: 'range', upper: { at: start, inclusive: false } }
        return { kind: 'range', upper: { at: end, inclusive: start === end } }
      }
      case 'phrase':
      case 'word': {
        if (raw.kind === 'word' && raw.wild) {
          if (raw.pieces.length === 1 && raw.pieces[0] === '*') return { kind: 'exists' }
          throw fail(at, 'a timestamp takes a date-time, a range or *, not a pattern')
        }
        const text =
          raw.kind === 'phrase' ? raw.text : raw.pieces.map((p) => (p as { lit: string }).lit).join('')
        const { start, end } = instant(text, at)
        return start === end
          ? { kind: 'range', lower: { at: start, inclusive: true }, upper: { at: start, inclusive: true } }
          : { kind: 'range', lower: { at: start, inclusive: true }, upper: { at: end, inclusive: false } }
      }
    }
  }
  if (raw.kind === 'range' || raw.kind === 'compare')
    throw fail(at, 'ranges and comparisons apply to created_at, updated_at and expires_at only')
  if (raw.kind === 'phrase') return { kind: 'exact', text: raw.text }
  if (!raw.wild) return { kind: 'exact', text: raw.pieces.map((p) => (p as { lit: string }).lit).join('') }
  if (raw.pieces.length === 1 && raw.pieces[0] === '*') return { kind: 'exists' }
  if (field.kind === 'data')
    throw fail(at, 'data terms match whole search index values (no wildcards: indexes are hashed)')
  const size = raw.pieces.reduce((n, p) => n + (typeof p === 'string' ? 1 : [...p.lit].length), 0)
  if (size > MAX_PATTERN) throw fail(at, `a wildcard pattern is at most ${MAX_PATTERN} characters`)
  return { kind: 'pattern', glob: raw.pieces, compiled: [undefined, undefined] }
}

/**
 * Parses a search query. An empty (or blank) query matches every token. Throws a validation error
 * (`query: <problem> at character <n>`) for a malformed one, an unknown field, or one beyond the
 * limits (`MAX_QUERY_LENGTH` characters, `MAX_TERMS` terms, `MAX_DEPTH` levels of nesting).
 */
export function parseQuery(text: string): QueryNode {
  if (text.length > MAX_QUERY_LENGTH) throw invalid('query', `must be at most ${MAX_QUERY_LENGTH} characters`)
  const toks = lex(text)
  if (!toks.length) return { kind: 'all' }
  if (toks.filter((t) => t.t === 'term').length > MAX_TERMS)
    throw invalid('query', `must hold at most ${MAX_TERMS} terms`)
  const patterns = toks.filter(
    (t) => t.t === 'term' && t.raw.kind === 'word' && t.raw.wild && !(t.raw.pieces.length === 1),
  )
  if (patterns.length > MAX_PATTERNS)
    throw invalid('query', `must hold at most ${MAX_PATTERNS} wildcard patterns`)
  let p = 0
  const end = text.length
  const peek = () => toks[p]
  const where = () => toks[p]?.at ?? end

  const parseOr = (depth: number): QueryNode => {
    const items = [parseAnd(depth)]
    while (peek()?.t === 'OR') {
      p++
      items.push(parseAnd(depth))
    }
    return items.length === 1 ? items[0]! : { kind: 'or', items }
  }
  const parseAnd = (depth: number): QueryNode => {
    const items = [parseUnary(depth)]
    for (;;) {
      const next = peek()
      if (next?.t === 'AND') {
        p++
        items.push(parseUnary(depth))
      } else if (next && next.t !== 'OR' && next.t !== ')') {
        throw fail(next.at, 'expected AND, OR, ) or the end of the query')
      } else break
    }
    return items.length === 1 ? items[0]! : { kind: 'and', items }
  }
  const parseUnary = (depth: number): QueryNode => {
    if (depth > MAX_DEPTH) throw fail(where(), `nesting deeper than ${MAX_DEPTH} levels`)
    const tok = peek()
    if (!tok) throw fail(end, 'expected a term, NOT or ( but the query ended')
    if (tok.t === 'NOT') {
      p++
      return { kind: 'not', item: parseUnary(depth + 1) }
    }
    if (tok.t === '(') {
      p++
      const inner = parseOr(depth + 1)
      if (peek()?.t !== ')') throw fail(where(), `expected ) to close the ( at character ${tok.at + 1}`)
      p++
      return inner
    }
    if (tok.t === 'term') {
      p++
      const field = fieldOf(tok.field, tok.at)
      return { kind: 'term', field, value: termValue(field, tok.raw, tok.at) }
    }
    throw fail(tok.at, tok.t === ')' ? 'unexpected )' : `expected a term before ${tok.t}`)
  }

  const root = parseOr(0)
  if (p < toks.length) throw fail(toks[p]!.at, 'unexpected )')
  return root
}

/** The most characters and wildcards one pattern may hold (its matcher keeps one bit per element). */
export const MAX_PATTERN = 128

/** A glob compiled for bit-parallel matching: bit `i` of the state is "the first `i` elements matched". */
interface CompiledGlob {
  /** Elements after collapsing runs of `*` (a run matches what one `*` matches). */
  size: number
  words: number
  star: Uint32Array
  /** Per literal character: the elements it matches (itself and every `?`). */
  byChar: Map<string, Uint32Array>
  /** What any other character matches: the `?` elements. */
  any: Uint32Array
}

/** A pattern's globs as compiled so far, exact and case-folded: kept on the parsed pattern itself, so a query compiles each once. */
export type CompiledGlobs = [CompiledGlob | undefined, CompiledGlob | undefined]

function compileGlob(parts: readonly GlobPart[], fold: boolean): CompiledGlob {
  const elements: Array<string | '*' | '?'> = []
  const literal: boolean[] = []
  for (const part of parts) {
    if (typeof part === 'string') {
      if (part === '*' && elements.at(-1) === '*' && !literal.at(-1)) continue
      elements.push(part)
      literal.push(false)
    } else
      for (const ch of fold ? part.lit.toLowerCase() : part.lit) {
        elements.push(ch)
        literal.push(true)
      }
  }
  const size = elements.length
  const words = (size >>> 5) + 1
  const star = new Uint32Array(words)
  const any = new Uint32Array(words)
  const byChar = new Map<string, Uint32Array>()
  elements.forEach((e, i) => {
    const bit = 1 << (i & 31)
    if (!literal[i]) {
      if (e === '*') star[i >>> 5]! |= bit
      else any[i >>> 5]! |= bit
    }
  })
  elements.forEach((e, i) => {
    if (!literal[i]) return
    let mask = byChar.get(e)
    if (!mask) {
      mask = Uint32Array.from(any)
      byChar.set(e, mask)
    }
    mask[i >>> 5]! |= 1 << (i & 31)
  })
  return { size, words, star, byChar, any }
}

/** `state` with every `*` element's successor set (one step: runs of `*` are collapsed). */
function closeStars(g: CompiledGlob, state: Uint32Array): void {
  let carry = 0
  for (let k = 0; k < g.words; k++) {
    const stars = state[k]! & g.star[k]!
    const next = ((stars << 1) | carry) >>> 0
    carry = stars >>> 31
    state[k] = (state[k]! | next) >>> 0
  }
}

/**
 * Whether `text` matches the glob `parts` (`*` any run, `?` one character), in time linear in the
 * length of `text` (a bit-parallel automaton: a few word operations per character, whatever the
 * pattern), so no pattern can make a search slow. `fold`: equal but for case.
 */
export function globMatches(
  parts: readonly GlobPart[],
  text: string,
  fold = false,
  cached: CompiledGlobs = [undefined, undefined],
): boolean {
  const slot = fold ? 1 : 0
  const g = cached[slot] ?? compileGlob(parts, fold)
  cached[slot] = g
  let state = new Uint32Array(g.words)
  let next = new Uint32Array(g.words)
  state[0] = 1
  closeStars(g, state)
  for (const ch of fold ? text.toLowerCase() : text) {
    const match = g.byChar.get(ch) ?? g.any
    let carry = 0
    let alive = 0
    for (let k = 0; k < g.words; k++) {
      const stepped = state[k]! & match[k]!
      next[k] = ((state[k]! & g.star[k]!) | (stepped << 1) | carry) >>> 0
      carry = stepped >>> 31
      alive |= next[k]!
    }
    if (!alive) return false
    closeStars(g, next)
    ;[state, next] = [next, state]
  }
  return (state[g.size >>> 5]! & (1 << (g.size & 31))) !== 0
}

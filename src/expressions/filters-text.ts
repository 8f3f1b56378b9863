import { CHAR_COST, ELEMENT_COST, type Work } from './cost.js'
import { fail } from './failure.js'
import { stripHtml } from './liquid-text.js'
import { char, concatenated, type Filter, joined, lengthArg, nullOr, toText } from './values.js'

/**
 * Liquid's string filters and Basis Theory's `pad_left`, `pad_right`, `to_string`. Each pays,
 * before it runs, for the replacements or pieces it will make and the most characters it could
 * make (see src/expressions/cost.ts).
 */

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

/** `s.split(separator)`, its pieces counted and charged as elements before it splits. */
function pieces(s: string, separator: string, work: Work): string[] {
  const max = Math.floor(work.remaining / ELEMENT_COST)
  work.elements(separator === '' ? s.length : occurrences(s, separator, max) + 1)
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

/**
 * Characters of a text `escape` counts between two charges of its replacements: a text whose
 * replacements the budget cannot hold is refused within one such slice past the point where the
 * budget ran out, not after a pass over all of it.
 */
const ESCAPE_COUNT_SLICE = 16 * 1024

/** Whether an `&` before the character `c` may begin an entity `escape_once` keeps (`&name;`, `&#…;`). */
const mayOpenEntity = (c: number) => c === 35 || (c >= 65 && c <= 90) || (c >= 97 && c <= 122)

/**
 * The replacements in `s` from `from` to `to`, the characters they add, and of those the ones
 * certainly added (`escape_once` keeps an `&` that may begin an entity; every other one it escapes).
 */
function escapesIn(s: string, from: number, to: number, once: boolean) {
  let escaped = 0
  let growth = 0
  let certain = 0
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i)
    const grows = escapeGrowth(c)
    if (grows === 0) continue
    escaped++
    growth += grows
    if (!once || c !== 38 || !mayOpenEntity(s.charCodeAt(i + 1))) certain += grows
  }
  return { escaped, growth, certain }
}

/**
 * `s` HTML-escaped (`once`: an entity already there is kept), its replacements and length paid
 * before: each slice's replacements are charged, and the length it will certainly make checked,
 * before the next slice is counted, so a text too long once escaped is refused within a slice.
 */
function htmlEscaped(s: string, once: boolean, work: Work): string {
  let growth = 0
  let certain = 0
  for (let from = 0; from < s.length; from += ESCAPE_COUNT_SLICE) {
    const slice = escapesIn(s, from, Math.min(s.length, from + ESCAPE_COUNT_SLICE), once)
    growth += slice.growth
    certain += slice.certain
    work.elements(slice.escaped)
    work.willMake(s.length + certain)
  }
  // The most it makes: every `&` escaped (escape_once may keep some).
  work.willMake(s.length + growth)
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
function urlEncoded(s: string, work: Work): string {
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
  work.elements(spaces)
  work.willMake(made + 2 * spaces)
  return encodeURIComponent(s).replace(/%20/g, '+')
}

/**
 * `s` with its case changed by `f`, which may make up to 3 characters of one (`ß` → `SS`, `ΐ`): the
 * budget must hold the most it could make before it runs (ASCII text keeps its length).
 */
function recased(s: string, f: (s: string) => string, work: Work): string {
  work.ensure(/[\u0080-\uffff]/.test(s) ? 3 * s.length : s.length)
  return work.capped(f(s))
}

/**
 * The first `n` words (runs of non-space) of `s`, each found by a step of a regular expression in
 * script, charged as a per-character filter's character (32) before the next is looked for.
 */
function firstWords(s: string, n: number, work: Work): string[] {
  const words: string[] = []
  const word = /\S+/g
  for (let m = word.exec(s); m !== null && words.length < n; m = word.exec(s)) {
    work.charge(CHAR_COST)
    words.push(m[0])
  }
  return words
}

/** `s` padded to `n` characters by `pad` at its start or end, refused before it is made when too long. */
function padded(side: 'start' | 'end'): Filter {
  return nullOr((v, a, w) => {
    const [s, n] = [toText(v, w), lengthArg(a[0], 'length')]
    w.willMake(n)
    const pad = char(a[1], ' ', 'pad_char', w)
    return side === 'start' ? s.padStart(n, pad) : s.padEnd(n, pad)
  })
}

/** The text filters, by name. */
export const TEXT_FILTERS: Record<string, Filter> = {
  upcase: (v, _, w) => recased(toText(v, w), (s) => s.toUpperCase(), w),
  downcase: (v, _, w) => recased(toText(v, w), (s) => s.toLowerCase(), w),
  capitalize: (v, _, w) =>
    recased(toText(v, w), (s) => s.charAt(0).toUpperCase() + s.slice(1).toLowerCase(), w),
  strip: (v, _, w) => toText(v, w).trim(),
  lstrip: (v, _, w) => toText(v, w).trimStart(),
  rstrip: (v, _, w) => toText(v, w).trimEnd(),
  strip_newlines: (v, _, w) => {
    const s = toText(v, w)
    w.elements(lineBreaks(s))
    return s.replace(/[\r\n]/g, '')
  },
  append: (v, a, w) => concatenated(toText(v, w), toText(a[0], w), w),
  prepend: (v, a, w) => concatenated(toText(a[0], w), toText(v, w), w),
  remove: (v, a, w) => joined(pieces(toText(v, w), toText(a[0], w), w), '', w),
  remove_first: (v, a, w) => toText(v, w).replace(toText(a[0], w), ''),
  replace: (v, a, w) => joined(pieces(toText(v, w), toText(a[0], w), w), toText(a[1], w), w),
  replace_first: (v, a, w) => {
    const [s, find, by] = [toText(v, w), toText(a[0], w), toText(a[1], w)]
    if (s.includes(find)) w.willMake(s.length - find.length + by.length)
    return s.replace(find, () => by)
  },
  truncate: (v, a, w) => {
    const s = toText(v, w)
    const n = a[0] === undefined ? 50 : lengthArg(a[0], 'length')
    const ellipsis = a[1] === undefined ? '...' : toText(a[1], w)
    if (s.length <= n) return s
    return s.slice(0, Math.max(0, n - ellipsis.length)) + ellipsis
  },
  truncatewords: (v, a, w) => {
    const n = Math.max(1, a[0] === undefined ? 15 : lengthArg(a[0], 'words'))
    const ellipsis = a[1] === undefined ? '...' : toText(a[1], w)
    const s = toText(v, w)
    const words = firstWords(s, n + 1, w)
    if (words.length <= n) return s
    return concatenated(joined(words.slice(0, n), ' ', w), ellipsis, w)
  },
  split: (v, a, w) => {
    if (a[0] === undefined) fail('split needs a separator')
    const sep = toText(a[0], w)
    const s = toText(v, w)
    return s === '' ? [] : pieces(s, sep, w)
  },
  url_encode: (v, _, w) => urlEncoded(toText(v, w), w),
  escape: (v, _, w) => htmlEscaped(toText(v, w), false, w),
  escape_once: (v, _, w) => htmlEscaped(toText(v, w), true, w),
  strip_html: (v, _, w) => stripHtml(toText(v, w)),
  newline_to_br: (v, _, w) => {
    const s = toText(v, w)
    const lines = pieces(s, '\n', w)
    w.willMake(s.length + 6 * (lines.length - 1))
    return lines.map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line)).join('<br />\n')
  },
  // Basis Theory
  pad_left: padded('start'),
  pad_right: padded('end'),
  to_string: nullOr((v, _, w) => {
    if (typeof v === 'object') fail('to_string can cast only a string, number or boolean')
    return toText(v, w)
  }),
}

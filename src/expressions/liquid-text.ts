import { UTCDate } from '@date-fns/utc'
import { format } from 'date-fns/format'
import { parseDateTime } from '../kernel/index.js'

/**
 * Liquid's `date` filter: `input` (a date-time the API accepts, or seconds since the epoch) written
 * with Liquid's strftime-style `pattern`, in UTC whatever the host's time zone. Each directive is
 * written by date-fns `format`; text between directives is kept as it is, and so is an unknown
 * directive (as Ruby's strftime does). Answers null when `input` is not a date (the filter then
 * answers its input unchanged).
 */
export function liquidDate(input: string | number, pattern: string): string | null {
  const instant =
    typeof input === 'number' ? input * 1000 : /^-?\d+$/.test(input) ? Number(input) * 1000 : parsed(input)
  if (instant === null || !Number.isFinite(instant)) return null
  const at = new UTCDate(instant)
  if (Number.isNaN(at.getTime())) return null
  let out = ''
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!
    if (c !== '%' || i + 1 >= pattern.length) {
      out += c
      continue
    }
    const flag = pattern[i + 1] === '-' ? '-' : ''
    const d = pattern[i + 1 + flag.length]
    if (d === undefined) {
      out += pattern.slice(i)
      break
    }
    const written = directive(at, d, flag === '-')
    out += written ?? pattern.slice(i, i + 2 + flag.length)
    i += 1 + flag.length
  }
  return out
}

function parsed(text: string): number | null {
  const iso = parseDateTime(text)
  return iso === null ? null : Date.parse(iso)
}

/** date-fns tokens of Liquid's directives (`%-d` drops the padding: the token's short form). */
const TOKENS: Record<string, [padded: string, bare: string]> = {
  Y: ['yyyy', 'y'],
  y: ['yy', 'yy'],
  m: ['MM', 'M'],
  d: ['dd', 'd'],
  H: ['HH', 'H'],
  I: ['hh', 'h'],
  M: ['mm', 'm'],
  S: ['ss', 's'],
  L: ['SSS', 'SSS'],
  b: ['MMM', 'MMM'],
  h: ['MMM', 'MMM'],
  B: ['MMMM', 'MMMM'],
  a: ['EEE', 'EEE'],
  A: ['EEEE', 'EEEE'],
  p: ['a', 'a'],
  P: ['aaa', 'aaa'],
  j: ['DDD', 'D'],
  u: ['i', 'i'],
  z: ['xx', 'xx'],
  F: ['yyyy-MM-dd', 'yyyy-MM-dd'],
  T: ['HH:mm:ss', 'HH:mm:ss'],
  R: ['HH:mm', 'HH:mm'],
  D: ['MM/dd/yy', 'MM/dd/yy'],
}

function directive(at: UTCDate, d: string, bare: boolean): string | null {
  switch (d) {
    case '%':
      return '%'
    case 'Z':
      return 'UTC'
    case 's':
      return String(Math.floor(at.getTime() / 1000))
    case 'e':
      return format(at, 'd').padStart(bare ? 1 : 2, ' ')
    case 'w':
      return String(Number(format(at, 'i')) % 7)
    default: {
      const token = TOKENS[d]
      if (!token) return null
      return format(at, token[bare ? 1 : 0]!, { useAdditionalDayOfYearTokens: true })
    }
  }
}

/**
 * Liquid's `strip_html`: `text` without its tags, and without the contents of `<script>`, `<style>`
 * and comments. One pass with `indexOf` (time linear in the text, whatever it holds).
 */
export function stripHtml(text: string): string {
  const lower = text.toLowerCase()
  let out = ''
  let i = 0
  while (i < text.length) {
    const open = text.indexOf('<', i)
    if (open < 0) {
      out += text.slice(i)
      break
    }
    out += text.slice(i, open)
    let end: number
    if (lower.startsWith('<!--', open)) end = endOf(lower, '-->', open + 4)
    else if (lower.startsWith('<script', open)) end = endOf(lower, '</script>', open)
    else if (lower.startsWith('<style', open)) end = endOf(lower, '</style>', open)
    else end = endOf(lower, '>', open)
    i = end
  }
  return out
}

/** The index just past `closing` found from `from` in `lower`, or the end of the text. */
function endOf(lower: string, closing: string, from: number): number {
  const at = lower.indexOf(closing, from)
  return at < 0 ? lower.length : at + closing.length
}

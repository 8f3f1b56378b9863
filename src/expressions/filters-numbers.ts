import { CHAR_COST } from './cost.js'
import { fail } from './failure.js'
import { liquidDate } from './liquid-text.js'
import { type Filter, int, nullOr, num, toText } from './values.js'

/** Liquid's math filters and `date`, and Basis Theory's casts `to_number` and `to_boolean`. */

/** A filter of two numbers (its input and its first argument) whose answer must be finite. */
function math(f: (a: number, b: number) => number): Filter {
  return (input, args) => {
    const r = f(num(input), num(args[0]))
    if (!Number.isFinite(r)) fail('makes a number that is not finite')
    return r
  }
}

/** The number and date filters, by name. */
export const NUMBER_FILTERS: Record<string, Filter> = {
  plus: math((a, b) => a + b),
  minus: math((a, b) => a - b),
  times: math((a, b) => a * b),
  divided_by: (v, a, _, written) => {
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
  date: (v, a, w) => {
    if (a[0] === undefined) fail('date needs a format (%Y-%m-%d)')
    if (typeof v !== 'string' && typeof v !== 'number') return v
    const pattern = toText(a[0], w)
    // Each character of the format is written in script, a directive by date-fns.
    w.charge(CHAR_COST * pattern.length)
    return liquidDate(v, pattern) ?? v
  },
  // Basis Theory
  to_number: nullOr((v) => {
    const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : Number.NaN
    // The value is never quoted: it may be a token's data that the caller may use but not read.
    if (!Number.isFinite(n)) fail(`to_number can't cast a value that is not a number`)
    return n
  }),
  to_boolean: nullOr((v) => {
    if (typeof v === 'boolean') return v
    const s = typeof v === 'string' ? v.trim().toLowerCase() : ''
    if (s !== 'true' && s !== 'false') fail('to_boolean can cast only "true" or "false"')
    return s === 'true'
  }),
}

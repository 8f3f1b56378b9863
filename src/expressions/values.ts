import type { Json } from '../kernel/index.js'
import { jsonSize } from '../kernel/index.js'
import type { Operand } from './ast.js'
import { MAX_STRING_LENGTH, VALUE_NODE_COST, type Work } from './cost.js'
import { fail } from './failure.js'

/**
 * The values an expression handles: JSON, bytes (from `hmac`, for `to_base64`/`to_base16`) or
 * nothing; how Liquid writes them as text and JSON; and how a filter reads its arguments. What a
 * conversion builds is charged to the evaluation's `Work` before it is built.
 */

/** A value during evaluation: JSON, bytes (from `hmac`, for `to_base64`/`to_base16`), or nothing. */
export type Value = Json | Uint8Array | undefined

/**
 * A filter: its input, its arguments' values, the evaluation's work (which it charges for what it
 * makes beyond its input and output) and its arguments as written (`2.0` is a float).
 */
export type Filter = (input: Value, args: Value[], work: Work, written: readonly Operand[]) => Value

/** Whether `v` is bytes (what `hmac` makes). */
export const isBytes = (v: Value): v is Uint8Array => v instanceof Uint8Array
/** Whether `v` is a JSON object (not an array, bytes or null). */
export const isObject = (v: Value): v is { [key: string]: Json } =>
  v !== null && typeof v === 'object' && !Array.isArray(v) && !isBytes(v)

/** `v` as JSON: nothing is `null`, bytes are base64. */
export function toJson(v: Value): Json {
  if (v === undefined) return null
  if (isBytes(v)) return Buffer.from(v).toString('base64')
  return v
}

/** Liquid's text of a value: nil as empty, arrays joined, objects as JSON. What it builds is charged. */
export function toText(v: Value, work: Work): string {
  if (v === undefined || v === null) return ''
  if (typeof v === 'string') return v
  if (typeof v === 'number' || typeof v === 'boolean') return String(v)
  if (isBytes(v)) return Buffer.from(v).toString('base64')
  if (Array.isArray(v)) {
    work.elements(v.length)
    return joined(
      v.map((x) => toText(x, work)),
      '',
      work,
    )
  }
  return jsonText(v, work)
}

/** `v` as JSON text, its size checked against the budget before it is built, and charged. */
export function jsonText(v: Json, work: Work): string {
  const size = jsonSize(v, work.remaining, VALUE_NODE_COST)
  work.ensure(size)
  work.charge(size)
  return work.capped(JSON.stringify(v))
}

/** `parts.join(glue)`, refused before it is built when it would be longer than `MAX_STRING_LENGTH`. */
export function joined(parts: readonly string[], glue: string, work: Work): string {
  let total = glue.length * Math.max(0, parts.length - 1)
  for (const part of parts) total += part.length
  work.willMake(total)
  return parts.join(glue)
}

/** `a + b`, refused before it is built when too long. */
export function concatenated(a: string, b: string, work: Work): string {
  work.willMake(a.length + b.length)
  return a + b
}

/** `v` as an integer argument named `what`. */
export function int(v: Value, what: string): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : Number.NaN
  if (!Number.isInteger(n)) fail(`needs an integer ${what}`)
  return n
}

/** `v` as a number (a numeric string is one). */
export function num(v: Value): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : Number.NaN
  // The value is never quoted: it may be a token's data that the caller may use but not read.
  if (Number.isNaN(n)) fail('needs a number')
  return n
}

/** `v` as a single character named `what`; `fallback` when nil. */
export function char(v: Value, fallback: string, what: string, work: Work): string {
  if (v === undefined || v === null) return fallback
  const s = toText(v, work)
  // One character is one or two UTF-16 units: a longer text is refused before it is walked.
  if (s.length > 2 || [...s].length !== 1) fail(`needs a single character as ${what}`)
  return s
}

/** `v` as true or false (or their text, any case); `fallback` when nil. */
export function bool(v: Value, fallback: boolean, work: Work): boolean {
  if (v === undefined || v === null) return fallback
  if (typeof v === 'boolean') return v
  const s = toText(v, work).toLowerCase()
  if (s === 'true') return true
  if (s === 'false') return false
  return fail('needs true or false')
}

/** `v` as a length named `what`: an integer from 0 to `MAX_STRING_LENGTH`. */
export function lengthArg(v: Value, what: string): number {
  const n = int(v, what)
  if (n < 0 || n > MAX_STRING_LENGTH) fail(`needs ${what} between 0 and ${MAX_STRING_LENGTH}`)
  return n
}

/** `v` as an array: itself, empty for nil, or the one value. */
export function arrayOf(v: Value): Json[] {
  if (Array.isArray(v)) return v
  if (v === undefined || v === null) return []
  return [toJson(v)]
}

/** A filter that answers `null` for a nil input and `f` of any other. */
export const nullOr =
  (f: (input: Value, args: Value[], work: Work) => Value): Filter =>
  (input, args, work) =>
    input === undefined || input === null ? null : f(input, args, work)

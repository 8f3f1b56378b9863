import * as v from 'valibot'
import type { Json } from '../types.js'

const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/

/** Whether the calendar date and the time of day exist (no February 30, no 24:61). */
function isRealDateTime(s: string): boolean {
  const [y, mo, d, h, mi, sec] = s.split(/[-T:.Z+]/).map(Number) as number[]
  const day = new Date(Date.UTC(y!, mo! - 1, d!))
  const validDay = day.getUTCFullYear() === y && day.getUTCMonth() === mo! - 1 && day.getUTCDate() === d
  return (
    validDay &&
    h! < 24 &&
    mi! < 60 &&
    (sec === undefined || Number.isNaN(sec) || sec < 60) &&
    !Number.isNaN(Date.parse(s))
  )
}

/** An ISO 8601 date-time with an explicit offset, normalized to UTC (`toISOString`). */
export const isoDateTime = v.pipe(
  v.string(),
  v.regex(ISO_WITH_OFFSET, 'must be an ISO 8601 date-time with an offset, like 2030-01-01T00:00:00Z'),
  v.check(isRealDateTime, 'must be a real date-time'),
  v.transform((s) => new Date(s).toISOString()),
  v.check((s) => /^\d{4}-/.test(s), 'must be between years 0000 and 9999'),
)

const MAX_JSON_DEPTH = 64

/** Whether `value` is plain JSON (no undefined, functions, class instances, non-finite numbers), nested at most 64 deep. */
export function isJson(value: unknown, depth = 0): value is Json {
  if (depth > MAX_JSON_DEPTH) return false
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true
  if (typeof value === 'number') return Number.isFinite(value)
  if (Array.isArray(value)) return value.every((item) => isJson(item, depth + 1))
  if (typeof value !== 'object') return false
  const proto = Object.getPrototypeOf(value)
  if (proto !== Object.prototype && proto !== null) return false
  return Object.values(value).every((item) => isJson(item, depth + 1))
}

/** Any JSON value, nested at most 64 deep. */
export const json = v.custom<Json>(
  isJson,
  'must be JSON (objects, arrays, strings, finite numbers, booleans, null; at most 64 levels deep)',
)

/** Keys that would reach an object's prototype: refused wherever a client names object keys. */
export const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype'])

/** Whether an object has none of the prototype keys as its own (JSON.parse makes `__proto__` an own key). */
export function hasNoForbiddenKeys(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return true
  return !Object.keys(value).some((key) => FORBIDDEN_KEYS.has(key))
}

/** A key of a client-named map: non-empty, at most `max` characters, never a prototype key. */
export const mapKey = (max: number) =>
  v.pipe(
    v.string(),
    v.minLength(1, 'must not be empty'),
    v.maxLength(max, `must be at most ${max} characters`),
    v.check((key) => !FORBIDDEN_KEYS.has(key), 'is a reserved name'),
  )

/** A container path: `/segment/.../`, segments of letters, digits, `_` and `-`. */
export const containerPath = v.pipe(
  v.string(),
  v.maxLength(200, 'must be at most 200 characters'),
  v.regex(/^(?:\/[A-Za-z0-9_-]+)+\/$/, 'must look like /segment/segment/ (letters, digits, _ and -)'),
)

/** A positive integer given as a number or a decimal string (query strings). */
const intLike = v.pipe(
  v.union([
    v.number(),
    v.pipe(v.string(), v.regex(/^\d{1,9}$/, 'must be a whole number'), v.transform(Number)),
  ]),
  v.integer('must be a whole number'),
)

/** `page` (default 1, ≥ 1) and `size` (default 20, 1–100). */
export const pagination = {
  page: v.optional(v.pipe(intLike, v.minValue(1, 'must be at least 1')), 1),
  size: v.optional(
    v.pipe(intLike, v.minValue(1, 'must be at least 1'), v.maxValue(100, 'must be at most 100')),
    20,
  ),
}

/** An array filter: one string or several; duplicates dropped. */
export const stringList = (max: number) =>
  v.optional(
    v.pipe(
      v.union([v.string(), v.array(v.string())]),
      v.transform((x) => [...new Set(Array.isArray(x) ? x : [x])]),
      v.maxLength(max, `must list at most ${max} values`),
    ),
    [],
  )

/** A body that may be absent, `null`, or `{}`. */
export const emptyBody = v.optional(v.nullable(v.strictObject({})))

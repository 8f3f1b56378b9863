import * as v from 'valibot'
import { parseDateTime } from './date-time.js'
import type { Json } from './types.js'

/**
 * A date-time in a format the reference accepts (see `parseDateTime`: ISO 8601 with or without an
 * offset, `8/26/2030 7:23:57 PM -07:00`, `9/27/2030`; no offset means UTC), normalized to UTC
 * (`toISOString`).
 */
export const isoDateTime = v.pipe(
  v.string(),
  v.maxLength(64, 'must be at most 64 characters'),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const parsed = parseDateTime(dataset.value)
    if (parsed === null) {
      addIssue({
        message:
          'must be a date-time like 2030-08-26T19:23:57-07:00, 8/26/2030 7:23:57 PM -07:00 or 9/27/2030 (no offset: UTC), between years 0000 and 9999',
      })
      return NEVER
    }
    return parsed
  }),
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

/**
 * Token `data` and `mask`: any JSON value, as `json`, whose strings may also hold U+0000 and lone
 * surrogates. They are sealed (encrypted) before any store keeps them, so no store meets that text
 * in the clear; every other input is refused such text (`parse`). A vault keeps the secret it is
 * given as it was given.
 */
export const sealedJson = v.custom<Json>(
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

/** Whether `text` holds a control character (below U+0020, or U+007F): no id or URL the vault keeps has one. */
export function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    if (unit < 0x20 || unit === 0x7f) return true
  }
  return false
}

/**
 * The first step of a client-named map's schema: a 400 for a prototype key (`__proto__`,
 * `constructor`, `prototype`) among its own, which `v.record` would drop without a word.
 */
export const withoutForbiddenKeys = <T>() =>
  v.custom<T>(hasNoForbiddenKeys, 'must not use __proto__, constructor or prototype as a key')

/** A key of a client-named map: non-empty, at most `max` characters, never a prototype key. */
export const mapKey = (max: number) =>
  v.pipe(
    v.string(),
    v.minLength(1, 'must not be empty'),
    v.maxLength(max, `must be at most ${max} characters`),
    v.check((key) => !FORBIDDEN_KEYS.has(key), 'is a reserved name'),
  )

/** A container path: the root `/`, or `/segment/.../` with segments of letters, digits, `_` and `-`. */
export const containerPath = v.pipe(
  v.string(),
  v.maxLength(200, 'must be at most 200 characters'),
  v.regex(/^\/(?:[A-Za-z0-9_-]+\/)*$/, 'must be / or look like /segment/segment/ (letters, digits, _ and -)'),
)

/** A positive integer given as a number or a decimal string (query strings). */
const intLike = v.pipe(
  v.union([
    v.number(),
    v.pipe(v.string(), v.regex(/^\d{1,9}$/, 'must be a whole number'), v.transform(Number)),
  ]),
  v.integer('must be a whole number'),
)

/**
 * `page` (default 1, 1–999 999 999: as a query string it has at most 9 digits, and a JSON number
 * is held to the same, so an offset is never past what a store can take: `1e308` reached
 * PostgreSQL as `Infinity`) and `size` (default 20, 1–100).
 */
export const pagination = {
  page: v.optional(
    v.pipe(
      intLike,
      v.minValue(1, 'must be at least 1'),
      v.maxValue(999_999_999, 'must be at most 999999999'),
    ),
    1,
  ),
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

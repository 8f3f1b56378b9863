import * as v from 'valibot'
import { ServiceError, type ValidationIssues } from './errors.js'
import { sealedJson } from './schemas.js'

/** Any valibot schema. */
export type AnySchema = v.GenericSchema<unknown, unknown>

/** The dotted path of an issue (`containers.0`), or `body` for the whole input. */
function issuePath(issue: v.BaseIssue<unknown>): string {
  const keys = (issue.path ?? []).map((item) => String(item.key))
  return keys.length ? keys.join('.') : 'body'
}

/** Collects valibot issues into a field → messages map. */
export function toIssues(issues: readonly v.BaseIssue<unknown>[]): ValidationIssues {
  const out: ValidationIssues = {}
  for (const issue of issues) {
    const path = issuePath(issue)
    if (!Object.hasOwn(out, path)) out[path] = []
    out[path]!.push(issue.message)
  }
  return out
}

/** How deep `badText` looks; deeper input is refused by the schemas themselves (JSON depth ≤ 64). */
const MAX_SCAN_DEPTH = 100

/** Whether `text` holds U+0000 or a lone surrogate. */
const badString = (text: string, nulAllowed = false) =>
  (!nulAllowed && text.includes('\u0000')) || !text.isWellFormed()

/**
 * The path of the first string (value or key) in `input` that holds U+0000 or a lone surrogate —
 * text no store can keep faithfully (PostgreSQL refuses both in text and JSON) — or null when there
 * is none. Values whose place in `schema` is `sealedJson` (token `data` and `mask`) may hold
 * U+0000: they are sealed before anything stores them (lone surrogates are still refused there:
 * their UTF-8 would not give them back). Every call
 * with a body scans it, so the path is built only for a string found (on the way back up), never
 * for the keys passed on the way down.
 */
export function badText(input: unknown, schema?: AnySchema): string[] | null {
  return scan(input, 0, schema)
}

/** A schema wrapped in `optional`, `nullable` or a pipe, unwrapped to what it checks. */
type Wrapped = { type?: string; wrapped?: AnySchema; pipe?: readonly unknown[] }

/** What `schema` holds under `key` (an object's entry, an array's item), as far as it can tell. */
function inner(schema: AnySchema | undefined, key: string): AnySchema | undefined {
  let at = schema as (Wrapped & { entries?: Record<string, AnySchema>; item?: AnySchema }) | undefined
  while (at?.pipe || at?.wrapped) at = (at.pipe?.[0] ?? at.wrapped) as typeof at
  if (at?.entries && Object.hasOwn(at.entries, key)) return at.entries[key]
  return at?.type === 'array' ? at.item : undefined
}

/** Whether `schema` is (or wraps) `sealedJson`. */
function sealed(schema: AnySchema | undefined): boolean {
  let at = schema as Wrapped | undefined
  for (;;) {
    if ((at as unknown) === sealedJson) return true
    const next = (at?.pipe?.[0] ?? at?.wrapped) as Wrapped | undefined
    if (!next) return false
    at = next
  }
}

function scan(
  input: unknown,
  depth: number,
  schema: AnySchema | undefined,
  nulAllowed = false,
): string[] | null {
  const inSealed = nulAllowed || (schema !== undefined && sealed(schema))
  if (typeof input === 'string') return badString(input, inSealed) ? [] : null
  if (input === null || typeof input !== 'object' || depth > MAX_SCAN_DEPTH) return null
  // Bytes hold no text to check, and walking them key by key costs a key per byte.
  if (ArrayBuffer.isView(input)) return null
  for (const key of Object.keys(input)) {
    if (badString(key, inSealed)) return [key]
    const below = inSealed ? undefined : inner(schema, key)
    const found = scan((input as Record<string, unknown>)[key], depth + 1, below, inSealed)
    if (found) {
      found.unshift(key)
      return found
    }
  }
  return null
}

const BAD_TEXT = 'must not hold the character U+0000 or a lone surrogate'

/**
 * Refuses `value` (a call's argument that is no body: an id from the path, a transaction id)
 * when it, or any string in it, holds U+0000 or a lone surrogate: `validation_failed` naming
 * `field`. Every store answers alike then, before one is asked.
 */
export function refuseBadText(value: unknown, field: string): void {
  const bad = badText(value)
  if (!bad) return
  const path = [field, ...bad].join('.')
  throw new ServiceError('validation_failed', `Invalid input: ${path}: ${BAD_TEXT}`, {
    issues: { [path]: [BAD_TEXT] },
  })
}

/**
 * Parses `input` with `schema`, returning the typed output, or throws `validation_failed` naming
 * every offending field. Never throws anything else for bad input.
 */
export function parse<S extends AnySchema>(schema: S, input: unknown): v.InferOutput<S> {
  const bad = badText(input, schema)
  if (bad) {
    const field = bad.length ? bad.join('.') : 'body'
    throw new ServiceError('validation_failed', `Invalid input: ${field}: ${BAD_TEXT}`, {
      issues: { [field]: [BAD_TEXT] },
    })
  }
  const result = v.safeParse(schema, input)
  if (result.success) return result.output as v.InferOutput<S>
  const issues = toIssues(result.issues)
  const summary = Object.entries(issues)
    .map(([field, messages]) => `${field}: ${messages.join('; ')}`)
    .join(', ')
  throw new ServiceError('validation_failed', `Invalid input: ${summary}`, { issues })
}

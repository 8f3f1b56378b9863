import * as v from 'valibot'
import { ServiceError, type ValidationIssues } from './errors.js'

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
const badString = (text: string) => text.includes('\u0000') || !text.isWellFormed()

/**
 * The path of the first string (value or key) in `input` that holds U+0000 or a lone surrogate —
 * text no store can keep faithfully (PostgreSQL refuses both in JSON) — or null when there is none.
 * Every call with a body scans it, so the path is built only for a string found (on the way back
 * up), never for the keys passed on the way down.
 */
export function badText(input: unknown): string[] | null {
  return scan(input, 0)
}

function scan(input: unknown, depth: number): string[] | null {
  if (typeof input === 'string') return badString(input) ? [] : null
  if (input === null || typeof input !== 'object' || depth > MAX_SCAN_DEPTH) return null
  for (const key of Object.keys(input)) {
    if (badString(key)) return [key]
    const found = scan((input as Record<string, unknown>)[key], depth + 1)
    if (found) {
      found.unshift(key)
      return found
    }
  }
  return null
}

/**
 * Parses `input` with `schema`, returning the typed output, or throws `validation_failed` naming
 * every offending field. Never throws anything else for bad input.
 */
export function parse<S extends AnySchema>(schema: S, input: unknown): v.InferOutput<S> {
  const bad = badText(input)
  if (bad) {
    const field = bad.length ? bad.join('.') : 'body'
    const message = 'must not hold the character U+0000 or a lone surrogate'
    throw new ServiceError('validation_failed', `Invalid input: ${field}: ${message}`, {
      issues: { [field]: [message] },
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

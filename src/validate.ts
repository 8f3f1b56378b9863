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

/**
 * Parses `input` with `schema`, returning the typed output, or throws `validation_failed` naming
 * every offending field. Never throws anything else for bad input.
 */
export function parse<S extends AnySchema>(schema: S, input: unknown): v.InferOutput<S> {
  const result = v.safeParse(schema, input)
  if (result.success) return result.output as v.InferOutput<S>
  const issues = toIssues(result.issues)
  const summary = Object.entries(issues)
    .map(([field, messages]) => `${field}: ${messages.join('; ')}`)
    .join(', ')
  throw new ServiceError('validation_failed', `Invalid input: ${summary}`, { issues })
}

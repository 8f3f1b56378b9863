import * as v from 'valibot'
import { FORBIDDEN_KEYS, pagination, ServiceError, type ValidationIssues } from '../kernel/index.js'

/** Most elements a formula may declare in `configuration`, and in `request_parameters`. */
export const MAX_ELEMENTS = 25

/** Longest formula code, in characters. */
export const MAX_CODE_LENGTH = 12_000

/** The reference's icon pattern: whitespace may follow `;` and `base64,` (its own example has a space). */
const ICON = /^data:image\/(?:png|jpg|jpeg);\s*base64,\s*([A-Za-z0-9+/]+={0,2})$/

/** Whether `b64` is canonical base64: proper alphabet, padding and length, and it survives a round trip. */
export function isCanonicalBase64(b64: string): boolean {
  if (b64.length === 0 || b64.length % 4 !== 0) return false
  try {
    return btoa(atob(b64)) === b64
  } catch {
    return false
  }
}

const optionalText = (max: number) =>
  v.optional(
    v.pipe(
      v.nullable(v.pipe(v.string('must be a string'), v.maxLength(max, `must be at most ${max} characters`))),
      v.transform((s) => s ?? undefined),
    ),
  )

const elementType = v.picklist(['string', 'boolean', 'number'], 'must be string, boolean or number')

const configurationName = v.pipe(
  v.string('must be a string'),
  v.maxLength(100, 'must be at most 100 characters'),
  v.regex(/^[\w-]+$/, 'may hold only letters, digits, _ and - (nested names are not supported here)'),
  v.check((name) => !FORBIDDEN_KEYS.has(name), 'is a reserved name'),
)

const parameterName = v.pipe(
  v.string('must be a string'),
  v.maxLength(200, 'must be at most 200 characters'),
  v.regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]$|^[A-Za-z0-9]$/,
    'must start and end with a letter or digit and hold only letters, digits, ., _ and -',
  ),
  v.check((name) => !name.includes('..'), 'must not hold an empty segment (..)'),
  v.check((name) => name.split('.').every((s) => !FORBIDDEN_KEYS.has(s)), 'holds a reserved name'),
)

const configurationElement = v.strictObject({
  name: configurationName,
  description: optionalText(1000),
  type: elementType,
})

const requestParameter = v.strictObject({
  name: parameterName,
  description: optionalText(1000),
  type: elementType,
  optional: v.optional(v.boolean('must be true or false'), false),
})

/**
 * Body of formula create and update (the same body; `status` is not accepted). Names must also be
 * unique, which `formulaElementIssues` checks after parsing.
 */
export const formulaInput = v.strictObject({
  name: v.pipe(
    v.string('must be a string'),
    v.trim(),
    v.minLength(1, 'must not be empty'),
    v.maxLength(200, 'must be at most 200 characters'),
  ),
  description: optionalText(1000),
  type: v.picklist(['official', 'private'], 'must be official or private'),
  icon: v.optional(
    v.pipe(
      v.nullable(
        v.pipe(
          v.string('must be a string'),
          v.maxLength(1_048_576, 'must be at most 1 MiB'),
          v.regex(ICON, 'must be a data URL: data:image/png|jpg|jpeg;base64,<data>'),
          v.check(
            (icon) => isCanonicalBase64(icon.slice(icon.indexOf(',') + 1).trim()),
            'holds invalid base64',
          ),
        ),
      ),
      v.transform((s) => s ?? undefined),
    ),
  ),
  code: v.pipe(
    v.string('must be a string'),
    v.minLength(1, 'must not be empty'),
    v.maxLength(MAX_CODE_LENGTH, `must be at most ${MAX_CODE_LENGTH} characters`),
  ),
  configuration: v.pipe(
    v.array(configurationElement, 'must be an array'),
    v.maxLength(MAX_ELEMENTS, `must hold at most ${MAX_ELEMENTS} elements`),
  ),
  request_parameters: v.pipe(
    v.array(requestParameter, 'must be an array'),
    v.maxLength(MAX_ELEMENTS, `must hold at most ${MAX_ELEMENTS} elements`),
  ),
})
export type FormulaInput = v.InferOutput<typeof formulaInput>

/** Query of formula list: `name` (wildcard filter) and paging. */
export const listFormulasInput = v.strictObject({
  name: v.optional(v.pipe(v.string('must be a string'), v.maxLength(200, 'must be at most 200 characters'))),
  ...pagination,
})

/**
 * Throws `validation_failed` naming each element whose name repeats an earlier one
 * (`configuration.3.name`), and each request parameter that is both a value and a parent of
 * another (`a` and `a.b`), which no `args` object could satisfy.
 */
export function requireDistinctNames(body: Pick<FormulaInput, 'configuration' | 'request_parameters'>): void {
  const issues: ValidationIssues = {}
  const duplicates = (field: string, names: string[]) => {
    const seen = new Set<string>()
    names.forEach((name, i) => {
      if (seen.has(name)) issues[`${field}.${i}.name`] = [`repeats the name ${name}`]
      seen.add(name)
    })
  }
  duplicates(
    'configuration',
    body.configuration.map((e) => e.name),
  )
  const params = body.request_parameters.map((e) => e.name)
  duplicates('request_parameters', params)
  const all = new Set(params)
  params.forEach((name, i) => {
    const parts = name.split('.')
    for (let n = 1; n < parts.length; n++) {
      const parent = parts.slice(0, n).join('.')
      if (all.has(parent)) issues[`request_parameters.${i}.name`] ??= [`is nested under ${parent}, a value`]
    }
  })
  if (Object.keys(issues).length) {
    const fields = Object.keys(issues).join(', ')
    throw new ServiceError('validation_failed', `Invalid input: duplicate names at ${fields}`, { issues })
  }
}

import * as v from 'valibot'
import { json, mapKey, pagination, stringList, withoutForbiddenKeys } from '../kernel/index.js'
import { MAX_CODE_LENGTH } from './formula-schemas.js'

const name = v.pipe(
  v.string('must be a string'),
  v.trim(),
  v.minLength(1, 'must not be empty'),
  v.maxLength(200, 'must be at most 200 characters'),
)

const id = v.pipe(
  v.string('must be a string'),
  v.minLength(1, 'must not be empty'),
  v.maxLength(200, 'must be at most 200 characters'),
)

/** Inline reactor code: a CommonJS module body, as a formula's (compile-checked after parsing). */
const code = v.pipe(
  v.string('must be a string'),
  v.minLength(1, 'must not be empty'),
  v.maxLength(MAX_CODE_LENGTH, `must be at most ${MAX_CODE_LENGTH} characters`),
)

const setting = v.union(
  [v.string(), v.pipe(v.number(), v.finite()), v.boolean()],
  'must be a string, a finite number or a boolean',
)

/**
 * A reactor configuration: setting name → value. The reference documents a map of strings; values
 * are cast to the formula's declared types after parsing ("5" → 5), and kept as given for inline code.
 */
const configuration = v.pipe(
  withoutForbiddenKeys<Record<string, string | number | boolean>>(),
  v.record(mapKey(100), setting),
  v.check((c) => Object.keys(c).length <= 100, 'must hold at most 100 settings'),
)

/** `{ id }` of a formula or an application, as the Basis Theory SDKs send it (other members ignored). */
const ref = v.looseObject({ id })

/** The members every reactor body may carry. */
const members = {
  name,
  formula_id: v.optional(id),
  formula: v.optional(v.nullable(ref)),
  code: v.optional(v.nullable(code)),
  application: v.optional(v.nullable(ref)),
  configuration: v.optional(v.nullable(configuration)),
}

/** A reactor body as the core uses it: formula id or code (at most one), application id, configuration. */
export interface ReactorBody {
  name: string
  formula_id: string | undefined
  code: string | undefined
  application_id: string | undefined
  configuration: Record<string, string | number | boolean>
}

/** Folds `formula: { id }` into `formula_id` and `application: { id }` into `application_id`. */
function normalized(b: {
  name: string
  formula_id?: string | undefined
  formula?: { id: string } | null | undefined
  code?: string | null | undefined
  application?: { id: string } | null | undefined
  configuration?: Record<string, string | number | boolean> | null | undefined
}): ReactorBody {
  return {
    name: b.name,
    formula_id: b.formula_id ?? b.formula?.id,
    code: b.code ?? undefined,
    application_id: b.application?.id,
    configuration: b.configuration ?? {},
  }
}

type FormulaAndCode = {
  formula_id?: string | undefined
  formula?: { id: string } | null | undefined
  code?: string | null | undefined
}

/** A check that `formula.id` and `formula_id`, when both given, agree (issue on `formula`). */
const sameFormula = <T extends FormulaAndCode>() =>
  v.forward(
    v.check<T, string>(
      (b) => !b.formula_id || !b.formula || b.formula.id === b.formula_id,
      'names another formula than formula_id',
    ),
    ['formula'] as never,
  )

/** A check that a body does not give both a formula and code (issue on `code`). */
const notBoth = <T extends FormulaAndCode>() =>
  v.forward(
    v.check<T, string>(
      (b) => !((b.formula_id || b.formula) && typeof b.code === 'string'),
      'a reactor runs either a formula or its own code, not both',
    ),
    ['code'] as never,
  )

/**
 * Body of reactor create: `{ name, formula: { id }, configuration, application?: { id } }` (a
 * formula-based reactor, as the 2023 reference documents it; `formula_id` is accepted too) or
 * `{ name, code, configuration?, application? }` (inline code, as today's SDKs send it).
 */
export const createReactorInput = v.pipe(
  v.strictObject(members),
  sameFormula(),
  notBoth(),
  v.forward(
    v.check(
      (b) => (b.formula_id ?? b.formula?.id) !== undefined || typeof b.code === 'string',
      'formula.id (or formula_id), or code, is required',
    ),
    ['formula_id'],
  ),
  v.transform(normalized),
)

/**
 * Body of reactor update (PUT): replaces name, configuration, application and the code or formula.
 * Without `formula` or `code`, the reactor keeps the formula or code it has.
 */
export const updateReactorInput = v.pipe(
  v.strictObject(members),
  sameFormula(),
  notBoth(),
  v.transform(normalized),
)

/**
 * Body of reactor patch (JSON merge patch): members given replace those of the reactor; `null`
 * removes (the application; a configuration setting); `configuration` merges setting by setting.
 */
export const patchReactorInput = v.pipe(
  v.strictObject({
    name: v.optional(name),
    formula_id: v.optional(id),
    formula: v.optional(ref),
    code: v.optional(code),
    application: v.optional(v.nullable(ref)),
    configuration: v.optional(
      v.nullable(
        v.pipe(
          withoutForbiddenKeys<Record<string, string | number | boolean | null>>(),
          v.record(mapKey(100), v.nullable(setting)),
        ),
      ),
    ),
  }),
  sameFormula(),
  notBoth(),
)

const callbackUrl = v.optional(
  v.nullable(v.pipe(v.string('must be a string'), v.maxLength(2000, 'must be at most 2000 characters'))),
)
const timeoutMs = v.optional(
  v.nullable(
    v.pipe(
      v.number('must be a number'),
      v.integer('must be an integer'),
      v.minValue(10_000, 'must be from 10000 to 210000'),
      v.maxValue(210_000, 'must be from 10000 to 210000'),
    ),
  ),
)

/**
 * Body of react: `args`, an object (absent or null means none); `callback_url` makes the react
 * asynchronous (its result is POSTed there), `timeout_ms` (10000–210000, default 10000) bounds an
 * asynchronous run; `callbackUrl` and `timeoutMs` are the same, as the legacy SDK sends them.
 */
export const reactInput = v.optional(
  v.nullable(
    v.strictObject({
      args: v.optional(
        v.nullable(
          v.pipe(
            json,
            v.check((a) => a === null || (typeof a === 'object' && !Array.isArray(a)), 'must be an object'),
          ),
        ),
      ),
      callback_url: callbackUrl,
      timeout_ms: timeoutMs,
      /** As the legacy JavaScript SDK (1.79.3) sends them: its react body goes out unconverted. */
      callbackUrl,
      timeoutMs,
    }),
  ),
)

/** Query of reactor list: `name` (as formulas: `*` wildcard, else "contains") and `id` (repeatable). */
export const listReactorsInput = v.strictObject({
  ...pagination,
  name: v.optional(v.pipe(v.string(), v.maxLength(200, 'must be at most 200 characters'))),
  id: stringList(100),
})

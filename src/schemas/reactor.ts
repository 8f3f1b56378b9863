import * as v from 'valibot'
import { json, mapKey, pagination } from './common.js'

const name = v.pipe(
  v.string('must be a string'),
  v.trim(),
  v.minLength(1, 'must not be empty'),
  v.maxLength(200, 'must be at most 200 characters'),
)

const formulaId = v.pipe(
  v.string('must be a string'),
  v.minLength(1, 'must not be empty'),
  v.maxLength(200, 'must be at most 200 characters'),
)

/** A reactor configuration: setting name → string, number or boolean (checked against the formula after parsing). */
const configuration = v.pipe(
  v.record(
    mapKey(100),
    v.union(
      [v.string(), v.pipe(v.number(), v.finite()), v.boolean()],
      'must be a string, a finite number or a boolean',
    ),
  ),
  v.check((c) => Object.keys(c).length <= 100, 'must hold at most 100 settings'),
)

/** `formula: { id }`, as the Basis Theory SDKs send it, beside `formula_id`. */
const formulaRef = v.optional(v.object({ id: formulaId }))

/** Folds `formula: { id }` into `formula_id`; giving both (differently) is a 400 on `formula`. */
function oneFormulaId<T extends { formula_id?: string | undefined; formula?: { id: string } | undefined }>(
  body: T,
): Omit<T, 'formula'> & { formula_id: string | undefined } {
  const { formula, ...rest } = body
  return { ...rest, formula_id: body.formula_id ?? formula?.id }
}

/** Body of reactor create. `configuration` may be omitted when the formula declares none. */
export const createReactorInput = v.pipe(
  v.strictObject({
    name,
    formula_id: v.optional(formulaId),
    formula: formulaRef,
    configuration: v.optional(configuration, {}),
  }),
  v.forward(
    v.check((b) => (b.formula_id ?? b.formula?.id) !== undefined, 'formula_id (or formula.id) is required'),
    ['formula_id'],
  ),
  v.forward(
    v.check(
      (b) => !b.formula_id || !b.formula || b.formula.id === b.formula_id,
      'names another formula than formula_id',
    ),
    ['formula'],
  ),
  v.transform((b) => oneFormulaId(b) as Omit<typeof b, 'formula'> & { formula_id: string }),
)

/**
 * Body of reactor update (PUT): replaces `name` and `configuration`. `formula_id` may be given to
 * move the reactor to another formula; omitted, the reactor keeps its formula.
 */
export const updateReactorInput = v.pipe(
  v.strictObject({
    name,
    formula_id: v.optional(formulaId),
    formula: formulaRef,
    configuration: v.optional(configuration, {}),
  }),
  v.forward(
    v.check(
      (b) => !b.formula_id || !b.formula || b.formula.id === b.formula_id,
      'names another formula than formula_id',
    ),
    ['formula'],
  ),
  v.transform(oneFormulaId),
)

/** Body of react: `args`, an object (absent or null means none). */
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
    }),
  ),
)

/** Query of reactor list. */
export const listReactorsInput = v.strictObject({ ...pagination })

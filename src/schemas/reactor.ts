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

/** Body of reactor create. `configuration` may be omitted when the formula declares none. */
export const createReactorInput = v.strictObject({
  name,
  formula_id: formulaId,
  configuration: v.optional(configuration, {}),
})

/**
 * Body of reactor update (PUT): replaces `name` and `configuration`. `formula_id` may be given to
 * move the reactor to another formula; omitted, the reactor keeps its formula.
 */
export const updateReactorInput = v.strictObject({
  name,
  formula_id: v.optional(formulaId),
  configuration: v.optional(configuration, {}),
})

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

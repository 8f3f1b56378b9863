import type { Json } from '../kernel/index.js'

/**
 * A parsed template: text and `{{ … }}` objects, each an operand and the filters applied to it.
 * Types only: `parse.ts` makes them, `templates.ts` runs them.
 */

/** A literal written with a decimal point (`2.0`) is a float in Liquid, though its value is whole. */
export type Operand =
  | { kind: 'literal'; value: Json; float?: true }
  | { kind: 'path'; root: string; keys: (string | number)[] }

/** One `| name: arg, …` step of an object. */
export interface FilterCall {
  name: string
  args: Operand[]
}

/** One `{{ operand | filter | … }}`. */
export interface OutputObject {
  operand: Operand
  filters: FilterCall[]
}

/** A template is a list of parts: text kept as it is, or an object evaluated. */
export type Part = string | OutputObject

import type { ExpressionBudget } from '../kernel/index.js'
import { fail } from './failure.js'
import type { PathContext } from './json-path.js'

/**
 * What evaluating an expression costs, in the work units of an `ExpressionBudget` (see
 * `MAX_EXPRESSION_WORK` in src/kernel/budget.ts): the price of each kind of step, and `Work`, the
 * budget one evaluation charges, passed down to every step that spends it. Every step is charged
 * before it runs: what it reads, the pieces it will make and the most characters it could make.
 */

/** The longest string a filter may make (pad_left, append, … on hostile input). */
export const MAX_STRING_LENGTH = 1_000_000

/** Work units each evaluation of a template costs before its filters: a mask of 80 000 `{{ data }}` pays for each. */
export const TEMPLATE_COST = 256
/** Work units per element of an array a filter handles (each is a step in script). */
export const ELEMENT_COST = 16
/** Work units per element for `sort` and `uniq`, which make each element's text to compare it. */
const COMPARE_COST = 128
/** Work units per comparison a `sort` makes. */
const SORT_COMPARISON_COST = 8
/** Work units per character for filters that handle their input character by character in script. */
export const CHAR_COST = 32
/** The filters that walk a string character by character in script (the others use the engine's string code). */
const CHAR_FILTERS = new Set(['reveal_last', 'reveal', 'card_mask', 'card_bin', 'reverse'])
/** The filters that draw a random number per character: twice as dear. */
const RANDOM_FILTERS = new Set(['alias_card', 'alias_preserve_format', 'alias_preserve_length'])
/**
 * Work units per value inside a JSON value that is walked or copied into an answer (a JSON Path's
 * nodes cost more: `NODE_COST` in json-path.ts).
 */
export const VALUE_NODE_COST = 8

/**
 * The budget one evaluation charges, handed to each step that spends it (evaluation is
 * synchronous: one `Work` per template evaluated, never shared between evaluations running at
 * once). It is also what a JSON Path step charges and fails with.
 */
export class Work implements PathContext {
  constructor(private readonly budget: ExpressionBudget) {}

  /** Units the budget still holds. */
  get remaining(): number {
    return this.budget.remaining
  }

  /** Spends `units`; throws `BudgetExceeded` past the budget. */
  charge(units: number): void {
    this.budget.charge(units)
  }

  /** Throws `BudgetExceeded` unless `units` more would fit, spending nothing. */
  ensure(units: number): void {
    this.budget.ensure(units)
  }

  /** Charges `count` elements, replacements or pieces a filter is about to handle or make. */
  elements(count: number): void {
    this.charge(ELEMENT_COST * count)
  }

  /** Refuses a string of `length` characters before it is built: past the string limit, or the budget. */
  willMake(length: number): void {
    if (length > MAX_STRING_LENGTH) fail(`makes a string longer than ${MAX_STRING_LENGTH} characters`)
    this.ensure(length)
  }

  /** `s`, unless it is longer than `MAX_STRING_LENGTH`. */
  capped(s: string): string {
    if (s.length > MAX_STRING_LENGTH) fail(`makes a string longer than ${MAX_STRING_LENGTH} characters`)
    return s
  }

  /** Throws the evaluation's failure with `message`. */
  fail(message: string): never {
    return fail(message)
  }
}

/** The work units filter `name` costs on `input` (a value during evaluation), charged before it runs. */
export function inputCost(name: string, input: unknown): number {
  if (typeof input === 'string') {
    const perChar = RANDOM_FILTERS.has(name) ? 2 * CHAR_COST : CHAR_FILTERS.has(name) ? CHAR_COST : 1
    return 1 + input.length * perChar
  }
  if (input instanceof Uint8Array) return 1 + input.length
  if (Array.isArray(input)) {
    const n = input.length
    // A sort compares about n·log2(n) times.
    if (name === 'sort') return 1 + n * (COMPARE_COST + SORT_COMPARISON_COST * Math.ceil(Math.log2(n + 1)))
    return 1 + n * (name === 'uniq' ? COMPARE_COST : ELEMENT_COST)
  }
  // An object's members may all be enumerated (`size`, `stringify`, …): each is an element.
  if (input !== null && typeof input === 'object') return 1 + ELEMENT_COST * Object.keys(input).length
  return 1
}

/** The work units a filter's `output` costs: its characters, or its elements. */
export function outputCost(output: unknown): number {
  if (typeof output === 'string' || output instanceof Uint8Array || Array.isArray(output))
    return output.length
  return 1
}

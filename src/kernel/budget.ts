import { invalid } from './errors.js'

/**
 * What one request may make, decided before the work is done. Every limit here is a literal that
 * docs/limits.md ("Per-request limits") states; past one, the request is a 400 naming it and nothing is stored.
 *
 * - Expressions (masks, fingerprint expressions, search indexes) share one `ExpressionBudget` per
 *   request — across every token the request writes or shows — and one per token value when there
 *   is no request (a token shown to its writer after the write, the sweep re-indexing a token).
 * - A detokenize answer and a react's expanded arguments hold at most `MAX_DETOKENIZED_CHARS`
 *   characters of token data, each reference counted (repeats of one token too).
 * - Input is walked at most `MAX_INPUT_DEPTH` levels deep.
 */

/**
 * Units of work the expressions of one request may do in all: each character a filter reads or
 * makes is one unit (a filter that handles its input character by character in script — `reveal`,
 * `card_mask`, … — counts 32 per character, `alias_*` 64; each element of an array (or member
 * of an object) a filter gets 16, `uniq` 128, `sort` 128 plus 8 per comparison; each replacement or
 * piece a filter makes — `escape`, `url_encode`, `strip_newlines`, `split`, `replace`, … — 16, each
 * word `truncatewords` finds 32, each character of an argument a filter walks in script — a
 * `preserve` list, a `date` or `card_exp` format, a JSON Path — 32); each template evaluated
 * costs 256; a template's value counts its JSON size and 8 per value in it (so a mask that repeats
 * `{{ data }}` pays for each copy the answer would hold); a JSON Path counts 32 per node it visits
 * (and per node a filter `[?(…)]` tests). A filter step is paid for before it runs: what it reads,
 * what it will make in pieces, and the most characters it could make must fit first. About 10 ms of
 * CPU at the worst
 * (`npx tsx bench/budgets.bench.ts`).
 */
export const MAX_EXPRESSION_WORK = 4_000_000

/** The most characters of token data one detokenize answer or one react's arguments may hold: 4 MiB. */
export const MAX_DETOKENIZED_CHARS = 4 * 1024 * 1024

/**
 * Detokenization expressions (`{{ … }}`) one request may hold, each counted (one token named 300
 * times is 300): the detokenize body, a react's `args`, a proxy request. 200 000 references to one
 * token within the 1 MiB body held the process 0.2–0.9 s, every other tenant waiting.
 */
export const MAX_EXPRESSIONS = 1000

/** Counts one more expression of a request (`seen` so far), refusing past `MAX_EXPRESSIONS` (400 naming `field`). */
export function countExpression(seen: number, field: string): number {
  if (seen >= MAX_EXPRESSIONS)
    throw invalid(field, `holds more than ${MAX_EXPRESSIONS} detokenization expressions (each one counts)`)
  return seen + 1
}

/** How deep any input (a detokenize body, react arguments, token data) may nest: 64 levels. */
export const MAX_INPUT_DEPTH = 64

/** Thrown when a budget is spent; `message` names the limit. The caller turns it into its 400. */
export class BudgetExceeded extends Error {
  override readonly name = 'BudgetExceeded'
}

/**
 * The work the expressions of one request (or one token value) may still do. Evaluation is
 * synchronous, so a budget is charged by one evaluation at a time; it is never reset.
 */
export class ExpressionBudget {
  #used = 0
  #exhausted = false

  /** @param limit units of work in all (default `MAX_EXPRESSION_WORK`). */
  constructor(readonly limit: number = MAX_EXPRESSION_WORK) {}

  /** Units spent so far. */
  get used(): number {
    return this.#used
  }

  /** Whether a charge was refused: the request is past its budget (a read then fails, not hides). */
  get exhausted(): boolean {
    return this.#exhausted
  }

  /** Units still available. */
  get remaining(): number {
    return Math.max(0, this.limit - this.#used)
  }

  /** Spends `units`; throws `BudgetExceeded` (and stays exhausted) past the limit. */
  charge(units: number): void {
    this.#used += units
    if (this.#used > this.limit) this.refuse()
  }

  /** Throws `BudgetExceeded` unless `units` more would fit, spending nothing: asked before building. */
  ensure(units: number): void {
    if (this.#used + units > this.limit) this.refuse()
  }

  private refuse(): never {
    this.#exhausted = true
    throw new BudgetExceeded(
      `is past the expression budget: the expressions of one request may do at most ${this.limit} units of work (characters read and made) in all`,
    )
  }
}

/** A fresh budget of `MAX_EXPRESSION_WORK` units. */
export function expressionBudget(): ExpressionBudget {
  return new ExpressionBudget()
}

/**
 * The length of `value` as JSON text, counted without building it, plus `perNode` for each value
 * in it (what walking it costs beyond its characters), or `Infinity` as soon as it is past `limit`
 * (so the count costs at most about `limit` steps). `undefined` counts as `null`.
 */
export function jsonSize(value: unknown, limit: number, perNode = 0): number {
  let size = 0
  const stack: unknown[] = [value]
  while (stack.length > 0) {
    const v = stack.pop()
    size += perNode
    if (typeof v === 'string') size += v.length + 2
    else if (typeof v === 'number' || typeof v === 'boolean') size += String(v).length
    else if (v === null || v === undefined) size += 4
    else if (v instanceof Uint8Array) size += Math.ceil(v.length / 3) * 4 + 2
    else if (Array.isArray(v)) {
      size += 1 + v.length
      if (size > limit) return Number.POSITIVE_INFINITY
      for (const item of v) stack.push(item)
    } else if (typeof v === 'object') {
      const keys = Object.keys(v)
      size += 1 + keys.length
      if (size > limit) return Number.POSITIVE_INFINITY
      for (const key of keys) {
        size += key.length + 3
        stack.push((v as Record<string, unknown>)[key])
      }
    }
    if (size > limit) return Number.POSITIVE_INFINITY
  }
  return size
}

/**
 * The depth of `value` (a scalar is 0, `[]` is 1), walked without recursion, or `Infinity` as soon
 * as it is past `max` (so a 100 000-deep array costs `max` steps).
 */
export function depthOf(value: unknown, max: number): number {
  let deepest = 0
  const stack: [unknown, number][] = [[value, 0]]
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!
    if (v === null || typeof v !== 'object') continue
    if (depth + 1 > max) return Number.POSITIVE_INFINITY
    deepest = Math.max(deepest, depth + 1)
    for (const item of Array.isArray(v) ? v : Object.values(v)) {
      if (item !== null && typeof item === 'object') stack.push([item, depth + 1])
    }
  }
  return deepest
}

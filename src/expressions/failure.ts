/**
 * How an expression fails while it is parsed or evaluated: an `ExpressionFailure` whose message
 * completes "<field> …" (`has a "{{" without its "}}"`). The public entry points turn it into a
 * `validation_failed` naming the field the template came from.
 */
export class ExpressionFailure extends Error {}

/** Throws an `ExpressionFailure` with `message`. */
export const fail = (message: string): never => {
  throw new ExpressionFailure(message)
}

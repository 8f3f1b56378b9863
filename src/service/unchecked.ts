/**
 * `T` with every method taking `unknown` arguments, in nested objects of methods too: the view of a
 * `Client` or an `Admin` for a caller passing input it has not checked itself (parsed JSON, a query
 * string), as the HTTP adapter does. Nothing is lost at run time: every method validates its input
 * and refuses a bad one with `validation_failed`.
 */
export type Unchecked<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R
    ? (...args: { [I in keyof A]: unknown }) => R
    : T[K] extends object
      ? Unchecked<T[K]>
      : T[K]
}

/** `api` (a `Client`, an `Admin`) as `Unchecked`: the same object, only its type changes. */
export function unchecked<T extends object>(api: T): Unchecked<T> {
  return api as unknown as Unchecked<T>
}

/**
 * Why a store could not do what it was asked, as a closed union. Stores throw `StoreError` for
 * failures of the store itself (never for a refused guard, which is a `WriteResult`); the core lets
 * it pass through and the HTTP adapter maps each code to one status.
 * - `closed`: the store was closed; no call succeeds any more (HTTP 503).
 * - `locked`: another process or store holds the store's lock (HTTP 503, `Retry-After`).
 * - `unavailable`: the disk or database can't be reached right now; the store recovers by itself
 *   once it can (HTTP 503, `Retry-After`).
 * - `full`: no space left to write; reads still work (HTTP 503, `Retry-After`).
 * - `corrupt`: what the store holds can't be read back as it was written (HTTP 500).
 * - `schema_newer`: the data was written by a newer version of the store (HTTP 503).
 */
export type StoreErrorCode = 'closed' | 'locked' | 'unavailable' | 'full' | 'corrupt' | 'schema_newer'

/** The one error type stores throw for a failure of the store itself. Its message names no secret. */
export class StoreError extends Error {
  override readonly name = 'StoreError'
  readonly code: StoreErrorCode
  /** For `unavailable`, `locked` and `full`: seconds after which a retry may succeed. */
  readonly retryAfter: number | undefined

  constructor(code: StoreErrorCode, message: string, options: { retryAfter?: number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.retryAfter = options.retryAfter
  }
}

/** Whether `error` is a `StoreError`, optionally of one of `codes`. */
export function isStoreError(error: unknown, ...codes: StoreErrorCode[]): error is StoreError {
  return error instanceof StoreError && (codes.length === 0 || codes.includes(error.code))
}

/**
 * Every failure the core reports, as a closed union. The HTTP adapter maps each code to one status.
 * - `validation_failed` (400): input broke a rule; `issues` maps each field path to its messages.
 * - `unauthenticated` (401): no key, an unknown key, or an expired session key.
 * - `forbidden` (403): the key lacks the permission or access rule the operation needs.
 * - `not_found` (404): no such record in the caller's tenant (another tenant's records look the same).
 * - `conflict` (409): a duplicate, a used nonce, a locked token or a transaction that is not open.
 * - `formula_invalid` (422): the formula's code can't be loaded or run.
 * - `formula_failed`: the formula's code threw or timed out; `status` carries the status it maps to.
 * - `unreadable` (422): a stored token's ciphertext fails its integrity check (moved or altered at
 *   rest); the message names the token, never its bytes.
 * - `too_many_requests` (429): the caller's tenant holds as many records of a kind as it may (see
 *   docs/limits.md "Bounds per tenant"); `retryAfterSec` says when to try again.
 * - `destination_failed`: a proxy's destination could not be reached (502), answered past the
 *   bounds (502), or not in time (408, the reference's proxy timeout); `status` carries which.
 */
import type { AccessTrace } from './access-trace.js'

export type ServiceErrorCode =
  | 'validation_failed'
  | 'unauthenticated'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'formula_invalid'
  | 'formula_failed'
  | 'unreadable'
  | 'too_many_requests'
  | 'destination_failed'

/** The HTTP status of each error code (`formula_failed` carries its own in `status`). */
export const STATUS_BY_CODE: Record<ServiceErrorCode, number> = {
  validation_failed: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  formula_invalid: 422,
  formula_failed: 500,
  unreadable: 422,
  too_many_requests: 429,
  destination_failed: 502,
}

/** The HTTP status an error answers: its code's, or for `formula_failed` its own (400–599, else 500). */
export function statusOfError(error: ServiceError): number {
  if (error.code === 'formula_failed' || error.code === 'destination_failed') {
    const s = error.status
    return s !== undefined && Number.isInteger(s) && s >= 400 && s <= 599 ? s : STATUS_BY_CODE[error.code]
  }
  return STATUS_BY_CODE[error.code]
}

/** Field path (dotted, e.g. `containers.0`) to messages. */
export type ValidationIssues = Record<string, string[]>

/** The one error type the service throws for anything a caller did or asked. */
export class ServiceError extends Error {
  override readonly name = 'ServiceError'
  readonly code: ServiceErrorCode
  /**
   * Present on `validation_failed`: field path to messages; and on `formula_failed` when the formula
   * threw an error with an `errors` block (the reactor formulas SDK's errors), that block.
   */
  readonly issues: ValidationIssues | undefined
  /** Present on `formula_failed`: the HTTP status (400–599) the failure maps to. */
  readonly status: number | undefined
  /** When the same call may succeed if tried again later: after this many seconds. */
  readonly retryAfterSec: number | undefined
  /**
   * Test mode only: the traces of the access decisions the call made (the refusing one last), as
   * the evaluator explained them (see `AccessTrace`). Absent outside test mode.
   */
  trace?: AccessTrace[]

  constructor(
    code: ServiceErrorCode,
    message: string,
    options: { issues?: ValidationIssues; status?: number; retryAfterSec?: number; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.issues = options.issues
    this.status = options.status
    this.retryAfterSec = options.retryAfterSec
  }
}

/** Shorthand for a `validation_failed` error naming one field. */
export function invalid(field: string, message: string): ServiceError {
  return new ServiceError('validation_failed', `${field}: ${message}`, { issues: { [field]: [message] } })
}

/** Shorthand for `not_found`. */
export function notFound(what: string): ServiceError {
  return new ServiceError('not_found', `${what} not found`)
}

/** Shorthand for `conflict`. */
export function conflict(message: string): ServiceError {
  return new ServiceError('conflict', message)
}

/** Shorthand for `too_many_requests`: a tenant at one of its bounds, to try again in `retryAfterSec`. */
export function tooMany(message: string, retryAfterSec: number): ServiceError {
  return new ServiceError('too_many_requests', message, { retryAfterSec })
}

/** Shorthand for `forbidden`. */
export function forbidden(message: string): ServiceError {
  return new ServiceError('forbidden', message)
}

/** Marks a `switch` as exhaustive: a new member of the union fails to compile where it is unhandled. */
export function assertNever(value: never): never {
  throw new Error(`unhandled case: ${String(value)}`)
}

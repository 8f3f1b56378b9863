import { STATUS_CODES } from 'node:http'
import { ServiceError, STATUS_BY_CODE, statusOfError, type ValidationIssues } from '../../src/kernel/index.js'
import { StoreError, type StoreErrorCode } from '../../src/store/index.js'
import type { Outgoing } from './exchange.js'

/** The one table from a service error code to its HTTP status (`formula_failed` carries its own). */
export { STATUS_BY_CODE }

/**
 * The one table from a store error code to its answer: the status, the seconds of `Retry-After`
 * (when a retry can succeed without anyone acting) and the detail. The detail is fixed per code, so
 * nothing of the store's own message (paths, hosts) reaches a client.
 */
export const STORE_ANSWERS: Record<StoreErrorCode, { status: number; retryAfter?: number; detail: string }> =
  {
    unavailable: { status: 503, retryAfter: 1, detail: 'The store is unavailable; retry later.' },
    locked: { status: 503, retryAfter: 5, detail: 'The store is locked by another process; retry later.' },
    full: { status: 503, retryAfter: 30, detail: 'The store has no space left to write; retry later.' },
    closed: { status: 503, detail: 'The store is closed.' },
    schema_newer: { status: 503, detail: 'The store was written by a newer version of the service.' },
    corrupt: { status: 500, detail: 'The store could not read back what it holds.' },
  }

/** A failure of the HTTP layer itself (no route, wrong method, body too large, not JSON). */
export class HttpProblem extends Error {
  override readonly name = 'HttpProblem'
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly errors?: ValidationIssues,
  ) {
    super(message)
  }
}

/** The body of an RFC 7807 problem response. */
export interface ProblemBody {
  type: string
  title: string
  status: number
  detail: string
  /** On 400: field path to messages; on a formula's error that carries them, its `errors` block. */
  errors?: ValidationIssues
}

const statusOf = statusOfError

/** An `application/problem+json` answer. `type` is `about:blank`, so `title` is the status phrase (node:http's `STATUS_CODES`). */
export function problem(
  status: number,
  detail: string,
  errors?: ValidationIssues,
  headers: Record<string, string> = {},
): Outgoing {
  const body: ProblemBody = {
    type: 'about:blank',
    title: STATUS_CODES[status] ?? (status < 500 ? 'Client Error' : 'Server Error'),
    status,
    detail,
  }
  if (errors) body.errors = errors
  return {
    status,
    headers: { 'content-type': 'application/problem+json', 'cache-control': 'no-store', ...headers },
    body: JSON.stringify(body),
  }
}

/**
 * The problem answer for anything thrown while handling a request, or `null` for an error that is
 * neither a `ServiceError` nor an `HttpProblem` (the caller logs it and answers 500 without details).
 */
export function problemFor(error: unknown): Outgoing | null {
  if (error instanceof ServiceError) {
    const status = statusOf(error)
    const retry = error.retryAfterSec
    const headers: Record<string, string> = retry === undefined ? {} : { 'retry-after': String(retry) }
    const errors = error.issues ?? (status === 400 ? {} : undefined)
    return problem(status, error.message, errors, headers)
  }
  if (error instanceof HttpProblem) return problem(error.status, error.message, error.errors, error.headers)
  if (error instanceof StoreError) return storeProblem(error)
  return null
}

/** The problem answer for a store failure: its status, `Retry-After` when a retry can succeed. */
export function storeProblem(error: StoreError): Outgoing {
  const answer = STORE_ANSWERS[error.code]
  const retryAfter = answer.retryAfter === undefined ? undefined : (error.retryAfter ?? answer.retryAfter)
  const headers: Record<string, string> =
    retryAfter === undefined ? {} : { 'retry-after': String(Math.max(1, Math.ceil(retryAfter))) }
  return problem(answer.status, answer.detail, undefined, headers)
}

/** The answer to an unexpected failure: a bare 500 that reveals nothing. */
export function internalError(): Outgoing {
  return problem(500, 'The server could not handle the request.')
}

import { EGRESS_MAX_BODY_BYTES, type EgressOrigin, egressFetch } from './egress.js'
import { ServiceError, statusOfError, type ValidationIssues } from './errors.js'
import type { ReactResult } from './react.js'

/**
 * The body an asynchronous react POSTs to its `callback_url`: the react result as the synchronous
 * react answers it, or the error response (`status`, `detail`, `errors` when the error has them).
 */
export type CallbackBody = ReactResult | { status: number; detail: string; errors?: ValidationIssues }

/** The error response of a failed asynchronous react (anything but a `ServiceError` is a bare 500). */
export function callbackError(error: unknown): CallbackBody {
  if (!(error instanceof ServiceError)) return { status: 500, detail: 'Reactor Runtime Error' }
  const body: { status: number; detail: string; errors?: ValidationIssues } = {
    status: statusOfError(error),
    detail: error.message,
  }
  if (error.issues) body.errors = error.issues
  return body
}

/** How long one delivery may take, and the most of the receiver's answer that is read. */
const DELIVERY_TIMEOUT_MS = 10_000
const MAX_ANSWER_BYTES = 64 * 1024

/**
 * POSTs `body` as JSON to `url` through the egress checks (the host makes the request: listed
 * origins only, loopback and private addresses only when listed by address). Answers whether the
 * receiver took it (a 2xx); never throws.
 */
export async function deliverCallback(
  origins: readonly EgressOrigin[],
  url: string,
  body: CallbackBody,
): Promise<boolean> {
  try {
    const response = await egressFetch(
      origins,
      {
        url,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'tokenvault-reactor-callback' },
        body: JSON.stringify(body),
      },
      {
        timeoutMs: DELIVERY_TIMEOUT_MS,
        maxRequestBytes: 2 * EGRESS_MAX_BODY_BYTES,
        maxResponseBytes: MAX_ANSWER_BYTES,
      },
    )
    return response.status >= 200 && response.status < 300
  } catch {
    return false
  }
}

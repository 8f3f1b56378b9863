import type { Clock } from './clock.js'
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

/** A delivery that failed and waits for its next attempt. */
interface Pending {
  origins: readonly EgressOrigin[]
  url: string
  body: CallbackBody
  /** Attempts made so far. */
  attempts: number
  /** When the next attempt is due (ms, the service clock's). */
  dueAt: number
}

/** Deliveries in all: the first attempt and up to 10 retries. */
export const CALLBACK_ATTEMPTS = 11
/** Delay before the first retry; each further one waits twice as long (10 s … about 2.8 hours in all). */
export const CALLBACK_FIRST_RETRY_MS = 10_000
/** Failed deliveries kept for retry at most (the oldest are dropped beyond it). */
const MAX_PENDING = 1000

/**
 * The callbacks of asynchronous reacts: each is POSTed at once; one the receiver did not take (no
 * 2xx, no connection) is tried again with exponential backoff on the service's clock, up to 10
 * times, when `retryDue()` runs (`service.admin.sweep()`, every 30 s under the CLI). Pending
 * retries live in this process's memory only. Nothing here throws.
 */
export class CallbackQueue {
  private pending: Pending[] = []

  constructor(private readonly clock: Clock) {}

  /** How many deliveries wait for a retry. */
  get size(): number {
    return this.pending.length
  }

  /** Delivers `body` to `url` now; on failure, schedules its retries. */
  async send(origins: readonly EgressOrigin[], url: string, body: CallbackBody): Promise<void> {
    await this.attempt({ origins, url, body, attempts: 0, dueAt: 0 })
  }

  /** Attempts every delivery whose retry is due (concurrently); answers how many were attempted. */
  async retryDue(): Promise<number> {
    const now = this.clock.now().getTime()
    const due = this.pending.filter((p) => p.dueAt <= now)
    if (!due.length) return 0
    this.pending = this.pending.filter((p) => p.dueAt > now)
    await Promise.all(due.map((p) => this.attempt(p)))
    return due.length
  }

  private async attempt(delivery: Pending): Promise<void> {
    const ok = await deliverCallback(delivery.origins, delivery.url, delivery.body)
    delivery.attempts++
    if (ok || delivery.attempts >= CALLBACK_ATTEMPTS) return
    delivery.dueAt = this.clock.now().getTime() + CALLBACK_FIRST_RETRY_MS * 2 ** (delivery.attempts - 1)
    this.pending.push(delivery)
    if (this.pending.length > MAX_PENDING) this.pending.shift()
  }
}

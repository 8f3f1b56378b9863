import type { Clock, ReactResult } from '../kernel/index.js'
import { ServiceError, statusOfError, type ValidationIssues } from '../kernel/index.js'
import { EGRESS_MAX_BODY_BYTES, type EgressClient, type EgressOrigin } from './egress.js'

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
 * POSTs `body` as JSON to `url` through `egress` (the host makes the request under the egress
 * policy: listed origins only; the node client adds the address checks). Answers whether the
 * receiver took it (a 2xx); never throws.
 */
export async function deliverCallback(
  egress: EgressClient,
  origins: readonly EgressOrigin[],
  url: string,
  body: CallbackBody,
): Promise<boolean> {
  try {
    const response = await egress(
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
  /** Whose asynchronous react it answers. */
  tenantId: string
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

/** How many asynchronous reacts may be outstanding at once: per tenant, and in all. */
export interface AsyncReactLimits {
  /** Outstanding asynchronous reacts of one tenant. */
  perTenant: number
  /** Outstanding asynchronous reacts of every tenant together. */
  total: number
}

/** The default `maxAsyncReactsPerTenant` of `createService`. */
export const DEFAULT_ASYNC_REACTS_PER_TENANT = 100
/** The default `maxAsyncReacts` of `createService`. */
export const DEFAULT_ASYNC_REACTS = 1000

/** One accepted asynchronous react's place, held until its callback is delivered or given up. */
export interface Outstanding {
  /** Delivers `body` to `url` now; on failure, schedules its retries (the first call only). */
  send(origins: readonly EgressOrigin[], url: string, body: CallbackBody): Promise<void>
}

/**
 * The callbacks of asynchronous reacts: each is POSTed at once; one the receiver did not take (no
 * 2xx, no connection) is tried again with exponential backoff on the service's clock, up to 10
 * times, when `retryDue()` runs (`service.admin.sweep()`, every 30 s under the CLI). Pending
 * retries live in this process's memory only. Nothing here throws but `reserve`.
 *
 * An asynchronous react holds a place from its acceptance (`reserve`) until its callback is
 * delivered or its last retry fails: running, delivering, or waiting for a retry. The places are
 * bounded per tenant and in all, and a react past either bound is refused before it is accepted
 * (429 with `Retry-After`), so a retry once scheduled is never dropped for anyone else's work.
 */
export class CallbackQueue {
  private pending: Pending[] = []
  /** Places held, by tenant. */
  private readonly held = new Map<string, number>()
  private total = 0

  /** Deliveries go through `egress`, the service's egress client. */
  constructor(
    private readonly clock: Clock,
    private readonly egress: EgressClient,
    private readonly limits: AsyncReactLimits = {
      perTenant: DEFAULT_ASYNC_REACTS_PER_TENANT,
      total: DEFAULT_ASYNC_REACTS,
    },
    private readonly onAccepted: () => void = () => {},
  ) {}

  /**
   * Told once an asynchronous react's outbox entry is acknowledged: the service starts a pass of the
   * outbox's dispatcher, so the run follows at once (a write whose only ops are outbox entries
   * derives no webhook ops, so the webhook effect is not told of it).
   */
  accepted(): void {
    this.onAccepted()
  }

  /** How many deliveries wait for a retry. */
  get size(): number {
    return this.pending.length
  }

  /** How many asynchronous reacts are outstanding: `tenantId`'s, or everyone's. */
  outstanding(tenantId?: string): number {
    return tenantId === undefined ? this.total : (this.held.get(tenantId) ?? 0)
  }

  /**
   * Takes a place for one asynchronous react of `tenantId`. Throws a 429 `ServiceError` (with
   * `retryAfterSec`) when the tenant already holds `perTenant` places or all tenants `total`.
   */
  reserve(tenantId: string): Outstanding {
    const mine = this.held.get(tenantId) ?? 0
    const { perTenant, total } = this.limits
    if (mine >= perTenant || this.total >= total) {
      const own = mine >= perTenant
      throw new ServiceError(
        'formula_failed',
        own
          ? `this tenant has ${perTenant} asynchronous reacts outstanding (running or waiting to deliver their callback), the most it may`
          : `the service has ${total} asynchronous reacts outstanding, the most it takes`,
        { status: 429, retryAfterSec: this.retryAfterSec(own ? tenantId : undefined) },
      )
    }
    this.held.set(tenantId, mine + 1)
    this.total++
    let sent = false
    return {
      send: async (origins, url, body) => {
        if (sent) return
        sent = true
        await this.attempt({ tenantId, origins, url, body, attempts: 0, dueAt: 0 })
      },
    }
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
    const ok = await deliverCallback(this.egress, delivery.origins, delivery.url, delivery.body)
    delivery.attempts++
    if (ok || delivery.attempts >= CALLBACK_ATTEMPTS) {
      this.release(delivery.tenantId)
      return
    }
    delivery.dueAt = this.clock.now().getTime() + CALLBACK_FIRST_RETRY_MS * 2 ** (delivery.attempts - 1)
    this.pending.push(delivery)
  }

  private release(tenantId: string): void {
    const left = (this.held.get(tenantId) ?? 1) - 1
    if (left > 0) this.held.set(tenantId, left)
    else this.held.delete(tenantId)
    this.total = Math.max(0, this.total - 1)
  }

  /**
   * When a place may free (s, at least 1): the first retry due of `tenantId` (of anyone without
   * one); without a retry waiting, the places are held by runs or deliveries under way: 10 s.
   */
  private retryAfterSec(tenantId: string | undefined): number {
    let first = Number.POSITIVE_INFINITY
    for (const p of this.pending)
      if (tenantId === undefined || p.tenantId === tenantId) first = Math.min(first, p.dueAt)
    if (first === Number.POSITIVE_INFINITY) return DELIVERY_TIMEOUT_MS / 1000
    return Math.max(1, Math.ceil((first - this.clock.now().getTime()) / 1000))
  }
}

import { type Ctx, checkFailure, type Principal } from '../call/index.js'
import type { OutboxEntry, Permission, ReactResult } from '../kernel/index.js'
import {
  invalid,
  newOrderedId,
  notFound,
  parse,
  ServiceError,
  statusOfError,
  type ValidationIssues,
} from '../kernel/index.js'
import { allowedUrl } from './egress.js'
import type { ReactInput } from './inputs.js'
import { type JsonObject, reactResult, runFailure, runFailureText } from './react.js'
import { mustGetReactor } from './reactor-records.js'
import { checkedArgs, requireUse, startRun } from './reactor-runs.js'
import { reactInput } from './reactor-schemas.js'

/** The documented default limit of an asynchronous react (ms). */
export const ASYNC_TIMEOUT_MS = 10_000

/** What `reactAsync` answers, as the reference's `POST /reactors/{id}/react-async` does. */
export interface AsyncReactAccepted {
  /** The request id: what `reactors.result(reactorId, id)` (`GET /reactors/{id}/results/{request_id}`) takes. */
  asyncReactorRequestId: string
}

/**
 * The body an asynchronous react POSTs to its `callback_url`: the react result as the synchronous
 * react answers it, or the error response (`status`, `detail`, `errors` when the error has them).
 */
type CallbackBody = ReactResult | { status: number; detail: string; errors?: ValidationIssues }

/** The error response of a failed asynchronous react (anything but a `ServiceError` is a bare 500). */
function callbackError(error: unknown): CallbackBody {
  if (!(error instanceof ServiceError)) return { status: 500, detail: 'Reactor Runtime Error' }
  const body: { status: number; detail: string; errors?: ValidationIssues } = {
    status: statusOfError(error),
    detail: error.message,
  }
  if (error.issues) body.errors = error.issues
  return body
}

/** What an accepted react's outbox entry carries in `body` (sealed at rest: `args` are detokenized). */
interface AcceptedReact {
  reactor_id: string
  args: JsonObject
  timeout_ms: number
  callback_url?: string
  principal: Pick<Principal, 'tenantId' | 'id' | 'kind' | 'type' | 'permissions'> & {
    rules?: Principal['rules']
  }
  request_id?: string
}

/** What a run of an accepted react came to: its answer (kept as the entry's `result`), or try again later. */
export type AcceptedRun =
  | {
      done: true
      ok: boolean
      result: string
      callback?: { url: string; body: string }
      /** The reactor that ran (absent when it was gone) and, when it failed, why (`Invocation`). */
      invoked?: { reactor: { id: string; name: string }; failure?: string }
    }
  | { done: false; error: string }

/**
 * Whether a react body asks for an asynchronous react (a `callback_url`, the reference's deprecated
 * form on `POST /reactors/{id}/react`): the HTTP route answers such a react 202 with no body.
 */
export function asksAsyncReact(body: unknown): boolean {
  if (typeof body !== 'object' || body === null) return false
  const b = body as { callback_url?: unknown; callbackUrl?: unknown }
  return (b.callback_url ?? b.callbackUrl ?? null) !== null
}

/** The callback URL of an asynchronous react, refused unless its origin is on the egress allow-list. */
function callbackUrl(ctx: Ctx, url: string): string {
  const origins = ctx.options.reactorEgress
  if (!allowedUrl(origins, url)) {
    throw invalid(
      'callback_url',
      origins.length
        ? 'must be a URL on an origin of the egress allow-list (reactorEgress)'
        : 'is refused: no egress allow-list (reactorEgress) is configured, so nothing may be called back',
    )
  }
  return url
}

/**
 * Accepts an asynchronous react: checks what a react checks (the key's `token:use`, the reactor,
 * `args` detokenized and cast, a `callback_url` on the egress allow-list), then writes it to the
 * durable outbox in one store write (the entry's id is the request id). It is run by the outbox's
 * dispatcher — at once in this process, or after a restart by whichever process claims it — and its
 * answer is kept on the entry (`reactors.result`) and, with a `callback_url`, POSTed there.
 */
export async function reactAsync(ctx: Ctx, id: string, input: ReactInput): Promise<AsyncReactAccepted> {
  requireUse(ctx)
  const body = parse(reactInput, input) ?? {}
  const url = body.callback_url ?? body.callbackUrl ?? undefined
  const callback = url === undefined || url === null ? undefined : callbackUrl(ctx, url)
  const reactor = await mustGetReactor(ctx, id)
  const args = await checkedArgs(ctx, reactor, body.args)
  if (!ctx.runner) throw new ServiceError('formula_invalid', 'no formula runner is configured')
  const { tenantId, id: principalId, kind, type, permissions, rules } = ctx.principal
  const accepted: AcceptedReact = {
    reactor_id: reactor.id,
    args,
    timeout_ms: body.timeout_ms ?? body.timeoutMs ?? ASYNC_TIMEOUT_MS,
    principal: { tenantId, id: principalId, kind, type, permissions, ...(rules ? { rules } : {}) },
    ...(callback ? { callback_url: callback } : {}),
  }
  const now = ctx.now()
  const entry: OutboxEntry = {
    tenant_id: tenantId,
    id: newOrderedId(now, tenantId),
    kind: 'react',
    reactor_id: reactor.id,
    reactor_name: reactor.name,
    url: callback ?? '',
    body: JSON.stringify(accepted),
    created_at: now,
    state: 'pending',
    due_at: now,
    attempts: [],
  }
  // The tenant's backlog bound is a guard of this write: concurrent accepts can't pass it.
  const bound = {
    check: 'count.within' as const,
    tenant_id: tenantId,
    kind: 'outbox.pending' as const,
    max: ctx.options.maxPendingDeliveriesPerTenant - 1,
  }
  const written = await ctx.store.write({ checks: [bound], ops: [{ op: 'outbox.put', entry }] })
  if (!written.ok) throw checkFailure(written.failed)
  ctx.callbacks.accepted()
  return { asyncReactorRequestId: entry.id }
}

/** The caller an accepted react runs as (from its entry), and how long it may run (ms). */
export function acceptedOf(entry: OutboxEntry): { principal: Principal; timeoutMs: number } {
  const accepted = JSON.parse(entry.body) as AcceptedReact
  const { rules, ...rest } = accepted.principal
  return {
    principal: { ...rest, permissions: rest.permissions as Permission[], ...(rules ? { rules } : {}) },
    timeoutMs: accepted.timeout_ms,
  }
}

/** The callback body (as the deprecated `callback_url` receives it) of a result. */
const callbackOf = (result: ReactResult | CallbackBody) => JSON.stringify(result)

/**
 * Runs an accepted react of `entry` as its caller (`ctx`, from `acceptedOf`): the reactor as it is
 * now, with the arguments checked at acceptance. Answers its result, or (the runner busy or
 * unavailable, unless `last`) that it should be tried again after the back-off. Never throws.
 */
export async function runAccepted(ctx: Ctx, entry: OutboxEntry, last: boolean): Promise<AcceptedRun> {
  const accepted = JSON.parse(entry.body) as AcceptedReact
  let answer: { ok: true; result: ReactResult } | ({ ok: false } & CallbackBody)
  let invoked: NonNullable<Extract<AcceptedRun, { done: true }>['invoked']> | undefined
  try {
    const reactor = await mustGetReactor(ctx, accepted.reactor_id)
    const run = await startRun(ctx, reactor, accepted.args)
    invoked = { reactor: { id: reactor.id, name: reactor.name } }
    const outcome = await run(accepted.timeout_ms)
    if (!outcome.ok && (outcome.kind === 'busy' || outcome.kind === 'unavailable') && !last)
      return { done: false, error: `the formula runner is ${outcome.kind}` }
    if (!outcome.ok) invoked.failure = runFailureText(outcome, accepted.timeout_ms)
    if (!outcome.ok && outcome.kind === 'timeout') {
      const error = `the reactor formula ran longer than ${accepted.timeout_ms} ms`
      answer = { ok: false, status: 500, detail: 'Reactor Runtime Error', errors: { error: [error] } }
    } else if (!outcome.ok) answer = { ok: false, ...callbackError(runFailure(outcome, accepted.timeout_ms)) }
    else answer = { ok: true, result: await reactResult(ctx, outcome.value) }
  } catch (error) {
    answer = { ok: false, ...callbackError(error) }
    if (invoked && invoked.failure === undefined) invoked.failure = failureText(answer)
  }
  const finished = finishedRun(accepted, answer)
  return invoked && finished.done ? { ...finished, invoked } : finished
}

/** A failure after the run (its tokens' write refused) in the vault's words: the answer's status and detail. */
const failureText = (answer: CallbackBody) =>
  'status' in answer ? `${answer.detail} (status ${answer.status})` : 'failed'

/** A run's end as the outbox keeps it; an answer that can't be written as JSON ends it failed, never throws. */
function finishedRun(
  accepted: AcceptedReact,
  answer: { ok: true; result: ReactResult } | ({ ok: false } & CallbackBody),
): AcceptedRun {
  let result: string
  try {
    result = JSON.stringify(answer)
  } catch (error) {
    answer = { ok: false, ...callbackError(error) }
    result = JSON.stringify(answer)
  }
  const { ok, ...shown } = answer
  const body = callbackOf(answer.ok ? answer.result : (shown as CallbackBody))
  const callback = accepted.callback_url ? { url: accepted.callback_url, body } : undefined
  return { done: true, ok, result, ...(callback ? { callback } : {}) }
}

/**
 * The result of asynchronous react `requestId` of reactor `id` (`GET /reactors/{id}/results/{request_id}`):
 * the react's answer as the synchronous react gives it, or its error thrown as the synchronous react
 * throws it. 404 for an unknown request (or another reactor's, or another tenant's, or one whose
 * result was kept its 24 hours and swept); 409 while it has not finished running.
 */
export async function reactResultOf(ctx: Ctx, id: string, requestId: string): Promise<ReactResult> {
  requireUse(ctx)
  if (typeof requestId !== 'string') throw invalid('request_id', 'must be a string')
  const entry = await ctx.store.getOutbox(ctx.principal.tenantId, requestId)
  if (entry?.kind !== 'react' || entry.reactor_id !== id) throw notFound('reactor result')
  if (entry.result === undefined) {
    throw new ServiceError('conflict', 'the asynchronous react has not finished running yet', {
      retryAfterSec: 1,
    })
  }
  const answer = JSON.parse(entry.result) as
    | { ok: true; result: ReactResult }
    | ({ ok: false } & CallbackBody)
  if (answer.ok) return answer.result
  const failed = answer as { status: number; detail: string; errors?: Record<string, string[]> }
  throw new ServiceError('formula_failed', failed.detail, {
    status: failed.status,
    ...(failed.errors ? { issues: failed.errors } : {}),
  })
}

// What a call writes once it ended, before it answers: the webhook events of what it invoked, and
// its audit entry when its writes logged none.
import { answeredIds, entriesOfCall } from '../audit/index.js'
import type { Ctx } from '../call/index.js'
import { ServiceError, statusOfError } from '../kernel/index.js'
import type { WriteEffectContext } from '../store/index.js'
import { invocationEvents } from '../webhooks/index.js'
import { type CallInfo, contextOfCall } from './effects.js'
import { failureCode } from './journal.js'
import type { Wiring } from './wiring.js'

/**
 * Logs a client call that its writes did not log (a read, a refused or failed call, a replayed
 * answer): one entry per id it read or answered, group-committed, resolved once committed. A call
 * whose writes landed entries (`call.tally`) is logged already. Rejects when the commit failed:
 * the caller then answers that failure (503), never data without its entry.
 */
export async function logCall(
  w: Wiring,
  ctx: Ctx,
  call: CallInfo,
  args: readonly unknown[],
  result: unknown,
  error: unknown,
): Promise<void> {
  if (!w.audit || (call.tally?.entries ?? 0) > 0) return
  const context = contextOfCall(ctx.principal, call, ctx.now())
  // Only path ids: a key given as an argument (`application.get_by_key`) or a body never is one.
  const ids = answeredIds(call.operation, args, error === null ? result : undefined)
  const outcome = error === null ? 'success' : failureCode(error)
  await w.audit.commit(ctx.principal.tenantId, entriesOfCall(context, ids, outcome, call.revealed))
}

/**
 * Writes the webhook events of what a call invoked (`ctx.invoked`: a reactor's run, a proxy's
 * request) once it ended, before it answers: an answered react or proxy call has its events in the
 * outbox, as a write has its own in its write. A call that invoked nothing (refused before it ran)
 * writes none and reads nothing. Rejects when they could not be written (the tenant's pending bound:
 * 429; the store: 503); a call that failed answers its own failure whatever comes of its events.
 */
export function writeCallEvents(
  w: Wiring,
  ctx: Ctx,
  call: CallInfo,
  error: unknown,
  result?: unknown,
  actor?: Pick<WriteEffectContext, 'actorId' | 'actorType'>,
): Promise<void> | undefined {
  if (error === null && call.operation === 'token.get') return readEvent(w, ctx, call, result)
  const invoked = ctx.invoked
  if (!invoked) return undefined
  const now = ctx.clock.now()
  const end =
    error === null
      ? { status: invoked.kind === 'proxy' ? answeredStatus(result) : 200 }
      : error instanceof ServiceError
        ? { status: statusOfError(error), error: error.message }
        : { status: 500, error: 'the call failed' }
  const events = invocationEvents(ctx.principal.tenantId, invoked, end, now.getTime())
  const context = contextOfCall(ctx.principal, call, now.toISOString())
  // A call of a proxy without an API key is the proxy's own (`actorType: 'proxy'`), as its audit entry says.
  if (actor) Object.assign(context, actor)
  return w.webhooks.callEvents(context, events)
}

/**
 * A token read's `token.read` (`{ token: { id, type } }`, as the reference shows it), for a tenant
 * with a webhook taking it (`WebhookRuntime.readEvents`): a read answered by id, not a page, a
 * search or a detokenization. Undefined (no promise) when the tenant's webhooks are known to take none.
 */
function readEvent(w: Wiring, ctx: Ctx, call: CallInfo, result: unknown): Promise<void> | undefined {
  const token = result as { id?: unknown; type?: unknown } | null
  if (typeof token?.id !== 'string' || typeof token.type !== 'string') return undefined
  const { id, type } = token
  const tenantId = ctx.principal.tenantId
  const now = ctx.now()
  return w.webhooks.readEvents(tenantId, 'token.read', now, () => ({
    context: contextOfCall(ctx.principal, call, now),
    events: [{ tenantId, type: 'token.read', data: { token: { id, type } } }],
  }))
}

/** The status a call answered: a proxy's answer carries the destination's (or its transform's); else 200. */
function answeredStatus(result: unknown): number {
  const status = (result as { status?: unknown } | null | undefined)?.status
  return typeof status === 'number' && Number.isInteger(status) ? status : 200
}

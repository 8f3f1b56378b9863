import { answeredIds, entriesOfCall } from '../audit/index.js'
import type { Ctx } from '../call/index.js'
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

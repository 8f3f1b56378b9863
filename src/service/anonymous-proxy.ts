import { entriesOfCall } from '../audit/index.js'
import type { Ctx } from '../call/index.js'
import { anonymousCall, anonymousTenant, type ProxyAnswer } from '../proxy/index.js'
import { writeCallEvents } from './audit-calls.js'
import type { CallInfo } from './effects.js'
import { failureCode } from './journal.js'
import type { Wiring } from './wiring.js'

/** Options of one call of the proxy without an API key. */
export interface AnonymousProxyOptions {
  /** The HTTP adapter's request id: the audit entry carries it, as every call's does. */
  requestId?: string
  /** Aborts when the caller is gone: the request to the destination is aborted with it (see `CallOptions.signal`). */
  signal?: AbortSignal
}

/**
 * A call of a pre-configured proxy without an API key (`require_auth: false`, see `anonymousCall`),
 * told to its tenant's audit log once the key proved to be the proxy's: one entry, actor
 * `proxy` (the proxy's id: the caller is known by nothing else), entity the proxy, the outcome and
 * the request id; never the request's body, query or headers. The answer leaves only once its
 * entry is committed (a failed commit answers instead), as for a call with a key. A key that is not
 * a proxy's (unknown, forged) is logged nowhere: it names a tenant it may not write to.
 */
export async function anonymousProxyCall(
  w: Wiring,
  input: unknown,
  options: AnonymousProxyOptions = {},
): Promise<ProxyAnswer> {
  const found: { tenantId?: string; proxyId?: string } = {}
  let made: Ctx | undefined
  let answer: ProxyAnswer
  try {
    const contextOf = (principal: Parameters<Wiring['contextFor']>[0]) => {
      made = w.contextFor(principal, undefined)
      if (options.signal !== undefined) made.signal = options.signal
      return made
    }
    answer = await anonymousCall(contextOf, input, found)
  } catch (error) {
    if (made)
      await writeCallEvents(w, made, callOf(options), error, undefined, proxyActor(found))?.catch(() => {})
    await logAnonymous(w, found, options, failureCode(error)).catch(() => {})
    throw error
  }
  // The answer leaves once its events and its entry are committed (a failure answers instead).
  try {
    if (made) await writeCallEvents(w, made, callOf(options), null, answer, proxyActor(found))
  } catch (error) {
    await logAnonymous(w, found, options, failureCode(error)).catch(() => {})
    throw error
  }
  await logAnonymous(w, found, options, 'success')
  return answer
}

const callOf = (options: AnonymousProxyOptions): CallInfo => ({
  operation: 'proxy.invoke',
  requestId: options.requestId,
})

const proxyActor = (found: { proxyId?: string }) => ({
  actorId: found.proxyId ?? null,
  actorType: 'proxy' as const,
})

/** The tenant of a proxy that takes calls without an API key, by its key (see `anonymousTenant`). */
export const anonymousProxyTenant = (w: Wiring, proxyKey: string): Promise<string | null> =>
  anonymousTenant((principal) => w.contextFor(principal, undefined), proxyKey)

/** The audit entry of one anonymous call, when its proxy was found and the log is on. */
async function logAnonymous(
  w: Wiring,
  found: { tenantId?: string; proxyId?: string },
  options: AnonymousProxyOptions,
  outcome: string,
): Promise<void> {
  const { tenantId, proxyId } = found
  if (!w.audit || tenantId === undefined || proxyId === undefined) return
  const context = {
    tenantId,
    actorId: proxyId,
    actorType: 'proxy' as const,
    requestId: options.requestId ?? null,
    operation: 'proxy.invoke',
    now: w.now(),
  }
  await w.audit.commit(tenantId, entriesOfCall(context, [proxyId], outcome))
}

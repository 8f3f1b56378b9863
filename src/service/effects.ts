import type { Principal } from '../applications/index.js'
import type { AccessDecision } from '../kernel/index.js'
import type { ActorType, Store, WriteEffectContext, WriteEffects } from '../store/index.js'
import { withWriteEffects } from '../store/index.js'

/** What a call is, beside its caller: its operation name and the request it came in (HTTP). */
export interface CallInfo {
  /** The journal's operation name (`token.create`). */
  operation: string
  /** The HTTP adapter's request id, when the call came through it. */
  requestId?: string | undefined
  /** Entries the call's writes landed (see `WriteEffectContext.tally`). */
  tally?: { entries: number }
  /** The tokens whose plaintext the call's answer or arguments carried (audit log on): the rest it answered masked. */
  revealed?: Set<string>
  /** The call's access decisions, each explained when read (test mode; see `AccessDecision`). */
  traces?: AccessDecision[]
}

/**
 * The store one call writes through: `store`, with each write first given the ops `effects` derive
 * from it (see `withWriteEffects`). Reads go to `store` unchanged. Without effects, `store` itself.
 */
export function storeWithEffects(
  store: Store,
  effects: WriteEffects,
  context: () => WriteEffectContext,
): Store {
  if (!effects.length) return store
  // One per call: the wrapper inherits every read of `store` (whose methods are bound: the service's
  // store is built by `delegatingStore`) and owns only `write`, instead of binding every method anew.
  const wrapped = Object.create(store) as Store
  Object.defineProperty(wrapped, 'write', {
    value: withWriteEffects((batch) => store.write(batch), effects, context),
  })
  return wrapped
}

/** The effect context of a key's call: its tenant, its principal as actor, its operation and instant. */
export function callContext(
  principal: Principal,
  call: CallInfo,
  now: () => string,
): () => WriteEffectContext {
  return () => contextOfCall(principal, call, now())
}

/** `callContext`'s context at the instant `at`. */
export function contextOfCall(principal: Principal, call: CallInfo, at: string): WriteEffectContext {
  const context: WriteEffectContext = {
    tenantId: principal.tenantId,
    actorId: principal.id,
    actorType: principal.kind,
    requestId: call.requestId ?? null,
    operation: call.operation,
    now: at,
  }
  if (call.tally) context.tally = call.tally
  return context
}

/** The effect context of an admin or sweep write in `tenantId` (null: none named). */
export function adminContext(
  tenantId: string | null,
  operation: string,
  at: string,
  actorType: Extract<ActorType, 'admin' | 'system'> = 'admin',
): WriteEffectContext {
  return { tenantId, actorId: null, actorType, requestId: null, operation, now: at }
}

import type { Clock, EgressClient, OutboxEntry } from '../kernel/index.js'
import { type AcceptedRun, acceptedOf } from '../reactors/index.js'
import type { Op, Store, WriteEffectContext, WriteEffectHook } from '../store/index.js'
import type { DispatcherDeps } from './deps.js'
import { Dispatcher } from './dispatcher.js'
import { type DerivedEvent, reactorEvents } from './events.js'
import { deliveriesOf, pendingRefusal, webhookEffect } from './outbox.js'
import { type WebhookSigner, webhookSigner } from './signing.js'

/** What one service holds of webhooks: the signer, the dispatcher, and the write effect that fills the outbox. */
export interface WebhookRuntime {
  signer: WebhookSigner
  dispatcher: Dispatcher
  /** Appends a write's outbox entries to it; once such a write is acknowledged, starts a delivery pass. */
  effect: WriteEffectHook
  /**
   * Writes the deliveries of events a call made without a write of its own (`invocationEvents`),
   * within the tenant's pending bound (else 429, nothing written); resolves once they are in the
   * store, and starts a delivery pass. A tenant with no webhook taking them costs one read.
   */
  callEvents(context: WriteEffectContext, events: readonly DerivedEvent[]): Promise<void>
}

/** Builds a service's webhook runtime over `store` (the sealed store, without effects). */
export function webhookRuntime(deps: {
  store: Store
  clock: Clock
  egress: EgressClient
  origins: () => readonly string[]
  signingKey: string | undefined
  maxPendingPerTenant: number
  /** Whether a write that made outbox entries starts a delivery pass at once (else only `deliverDue`). */
  deliverAfterWrites: boolean
  /** Runs an accepted asynchronous react as its caller (see `DispatcherDeps.runReact`). */
  runReact?: (entry: OutboxEntry, last: boolean) => Promise<AcceptedRun>
  /** Makes what each attempt's steps await (see `DispatcherDeps.turns`). */
  turns?: () => () => Promise<void>
}): WebhookRuntime {
  const signer = webhookSigner(deps.signingKey)
  const dispatcher = new Dispatcher({
    store: deps.store,
    clock: deps.clock,
    egress: deps.egress,
    origins: deps.origins,
    signer,
    ...(deps.runReact ? { runReact: deps.runReact, runEvents: runEventsOf(deps.store) } : {}),
    ...(deps.turns ? { turns: deps.turns } : {}),
  })
  const derive = webhookEffect(deps.store, deps.maxPendingPerTenant)
  return {
    signer,
    dispatcher,
    async callEvents(context, events) {
      if (!events.length) return
      const { ops, checks } = await deliveriesOf(deps.store, context, events, deps.maxPendingPerTenant)
      if (!ops.length) return
      const written = await deps.store.write(checks?.length ? { checks, ops } : { ops })
      if (!written.ok) throw pendingRefusal(written.failed, deps.maxPendingPerTenant)
      if (deps.deliverAfterWrites) dispatcher.kick(tenantOf(ops))
    },
    effect: {
      derive: derive.derive,
      // A write whose deliveries would pass the tenant's pending bound: 429, nothing lands.
      ...(derive.refused ? { refused: derive.refused } : {}),
      // The first attempt follows the write at once (no timer: the pass runs on the event loop now).
      settled: (_context, ops, outcome) => {
        if (outcome === 'ok' && ops.length && deps.deliverAfterWrites) dispatcher.kick(tenantOf(ops))
      },
    },
  }
}

/** The one tenant whose outbox entries `ops` put, or undefined (then a pass runs for every tenant). */
function tenantOf(ops: readonly Op[]): string | undefined {
  let tenant: string | undefined
  for (const op of ops) {
    if (op.op !== 'outbox.put' || (tenant !== undefined && op.entry.tenant_id !== tenant)) return undefined
    tenant = op.entry.tenant_id
  }
  return tenant
}

/**
 * The deliveries of a finished asynchronous react's end: `reactor.completed` or `reactor.failed`,
 * as its caller did it (the actor of the accepted react). Written with its result, unguarded by the
 * tenant's pending bound: the react's own entry, which counted against it, leaves the pending
 * ones in the same write, and a tenant has at most `MAX_WEBHOOKS_PER_TENANT` webhooks.
 */
function runEventsOf(store: Store): NonNullable<DispatcherDeps['runEvents']> {
  return async (entry, run, elapsedMs, now) => {
    if (!run.invoked) return []
    const { principal } = acceptedOf(entry)
    const context: WriteEffectContext = {
      tenantId: entry.tenant_id,
      actorId: principal.id,
      actorType: principal.kind,
      requestId: null,
      operation: 'reactor.react_async',
      now,
    }
    const invocation = {
      tenantId: entry.tenant_id,
      reactor: run.invoked.reactor,
      request: { id: entry.id, invocation_type: 'async' as const },
    }
    const { failure } = run.invoked
    const end = run.ok
      ? { ok: true as const, elapsedMs }
      : { ok: false as const, error: failure ?? 'failed', elapsedMs }
    return (
      await deliveriesOf(store, context, reactorEvents(invocation, false, end), Number.POSITIVE_INFINITY)
    ).ops
  }
}
